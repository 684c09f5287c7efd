"""Schedule and Stage: the loop-transformation state of a TE program (TVM's te.Schedule).

Invariants:
- A Stage owns one ComputeOp (or placeholder) and the IterVars of its loops.
  ``leaf_iter_vars`` is the current loop order, outermost first; ``relations`` records how
  leaves derive from the op's root axes (Split, Fuse), in creation order.
- Every IterVar made here has a ``dom`` Range(0, extent) computed from the full domain
  (an expression of the shape variables when the shape is symbolic); bound inference
  may later shrink extents for attached stages.
- Primitives validate their arguments and raise ScheduleError naming the stage, the axis
  and the reason; they never leave a stage half-modified.
- ``stage_map`` maps every op a stage ever had (its origin op and any op that replaced it
  through cache_read/cache_write/rfactor) to the stage, so user tensors stay valid keys.
"""
from __future__ import annotations

from typing import Any

from ..errors import ScheduleError
from ..te.extern import ExternOp
from ..te.scan import ScanOp
from ..te.tensor import ComputeOp, Operation, PlaceholderOp, Tensor, post_order_ops
from ..tir import expr as E
from ..tir import op as _op
from . import dataflow as _dataflow
from .relations import Fuse, Split, as_expr, dom_extent, ext_mul, split_extents
from .trace import recording, traced

# iter var annotation kinds
ANN_NONE, ANN_PARALLEL, ANN_VECTORIZE, ANN_UNROLL = "none", "parallel", "vectorize", "unroll"


def _new_iv(name: str, extent, iter_type: int) -> E.IterVar:
    return E.IterVar(E.Range(_op.const(0), as_expr(extent)), E.Var(name), iter_type)


class Stage:
    """One operation's schedule: loop structure, annotations and placement."""

    def __init__(self, op: Operation, schedule: Schedule):
        self.schedule = schedule
        self.origin_op = op
        self.attach_type = "root"   # root | inline | scope
        self.attach_stage: Stage | None = None
        self.attach_ivar: E.IterVar | None = None
        self.is_output = False
        self.scope = "global"
        self.set_op(op)

    def set_op(self, op: Operation) -> None:
        """(Re)initialize the loop structure from ``op``'s axes (used by dataflow rewrites)."""
        self.op: Any = op            # a ComputeOp for every stage that can be scheduled
        if isinstance(op, ComputeOp):
            self.all_iter_vars = list(op.axis) + list(op.reduce_axis)
        elif isinstance(op, ScanOp):    # only the time loop: stages attach inside it
            self.all_iter_vars = [op.scan_axis]
        else:
            self.all_iter_vars = []
        self.leaf_iter_vars = list(self.all_iter_vars)
        self.relations: list = []
        self.annotations: dict = {}     # IterVar -> ANN_*
        self.pragmas: dict = {}         # IterVar -> [(key, value)]
        self.storage_aligns: dict = {}  # root IterVar -> (factor, offset)
        self.thread_binds: dict = {}    # leaf IterVar -> thread IterVar (te.thread_axis)

    @property
    def name(self) -> str:
        return self.op.name

    def __repr__(self):
        return f"stage({self.op.name})"

    # ------------------------------------------------------------------ checks
    def _check_compute(self, what: str) -> None:
        if isinstance(self.op, (ExternOp, ScanOp)):
            kind = "an extern op (an opaque call over whole buffers)" if isinstance(
                self.op, ExternOp) else "a scan (only its body stages can be scheduled)"
            raise ScheduleError(f"{what}: stage {self.name} is {kind}; {what} applies only "
                                "to te.compute stages")
        if not isinstance(self.op, ComputeOp):
            raise ScheduleError(f"{what}: stage {self.name} is a placeholder; only compute "
                                "stages can be scheduled")

    def _check_leaf(self, iv, what: str) -> E.IterVar:
        if not isinstance(iv, E.IterVar):
            raise ScheduleError(f"{what} on stage {self.name}: expected an IterVar, got {iv!r}")
        if not any(x is iv for x in self.leaf_iter_vars):
            where = "an axis already split or fused" if any(
                x is iv for x in self.all_iter_vars) else "not an axis of this stage"
            raise ScheduleError(f"{what} on stage {self.name}: axis {iv.var.name} is {where}; "
                                f"current axes are {[x.var.name for x in self.leaf_iter_vars]}")
        return iv

    def _leaf_pos(self, iv) -> int:
        for k, x in enumerate(self.leaf_iter_vars):
            if x is iv:
                return k
        raise ScheduleError(f"stage {self.name}: axis {iv.var.name} is not a leaf axis")

    # ------------------------------------------------------------------ loop transforms
    @traced("split")
    def split(self, parent, factor=None, nparts=None):
        """Split ``parent`` into (outer, inner) by ``factor`` (inner extent) or ``nparts``."""
        self._check_compute("split")
        self._check_leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise ScheduleError(f"split on stage {self.name}, axis {parent.var.name}: give exactly "
                                "one of factor or nparts")
        n = factor if factor is not None else nparts
        n = n.value if isinstance(n, E.IntImm) else n
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ScheduleError(f"split on stage {self.name}, axis {parent.var.name}: "
                                f"{'factor' if factor is not None else 'nparts'} must be a "
                                f"positive int, got {n!r}")
        # the static extents are bound inference's over the full domain (TVM's)
        _, outer_ext, inner_ext = split_extents(dom_extent(parent), factor and n,
                                                nparts and n)
        outer = _new_iv(parent.var.name + "_outer", outer_ext, parent.iter_type)
        inner = _new_iv(parent.var.name + "_inner", inner_ext, parent.iter_type)
        self.relations.append(Split(parent, outer, inner, n if factor is not None else None,
                                    n if nparts is not None else None))
        self.all_iter_vars += [outer, inner]
        pos = self._leaf_pos(parent)
        self.leaf_iter_vars[pos:pos + 1] = [outer, inner]
        self._inherit(parent, outer)
        return outer, inner

    def _inherit(self, old, new) -> None:
        if old in self.pragmas:
            self.pragmas[new] = self.pragmas.pop(old)

    @traced("tile")
    def tile(self, x_parent, y_parent, x_factor, y_factor):
        xo, xi = self.split(x_parent, factor=x_factor)
        yo, yi = self.split(y_parent, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    @traced("fuse")
    def fuse(self, *args):
        """Fuse consecutive leaf axes (outer first) into one; returns the fused axis."""
        self._check_compute("fuse")
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        if not args:
            raise ScheduleError(f"fuse on stage {self.name}: needs at least one axis")
        for iv in args:
            self._check_leaf(iv, "fuse")
        pos = [self._leaf_pos(iv) for iv in args]
        for a, b, ia, ib in zip(pos, pos[1:], args, args[1:]):
            if b != a + 1:
                raise ScheduleError(f"fuse on stage {self.name}: axes {ia.var.name} and "
                                    f"{ib.var.name} are not adjacent (outer to inner) in the "
                                    f"loop order {[x.var.name for x in self.leaf_iter_vars]}")
        fused = args[0]
        for iv in args[1:]:
            fused = self._fuse2(fused, iv)
        return fused

    def _fuse2(self, outer, inner):
        kinds = {outer.iter_type, inner.iter_type}
        it = outer.iter_type if len(kinds) == 1 else E.IterVar.Ordered  # mixed
        name = f"{outer.var.name}_{inner.var.name}_fused"
        fused = _new_iv(name, ext_mul(dom_extent(outer), dom_extent(inner)), it)
        self.relations.append(Fuse(outer, inner, fused))
        self.all_iter_vars.append(fused)
        pos = self._leaf_pos(outer)
        self.leaf_iter_vars[pos:pos + 2] = [fused]
        self._inherit(outer, fused)
        return fused

    @traced("reorder")
    def reorder(self, *args):
        self._check_compute("reorder")
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        seen: list = []
        for iv in args:
            self._check_leaf(iv, "reorder")
            if any(iv is s for s in seen):
                raise ScheduleError(f"reorder on stage {self.name}: axis {iv.var.name} appears "
                                    "more than once")
            seen.append(iv)
        pos = sorted(self._leaf_pos(iv) for iv in args)
        for p, iv in zip(pos, args):
            self.leaf_iter_vars[p] = iv

    # ------------------------------------------------------------------ annotations
    def _annotate(self, iv, kind: str) -> None:
        self._check_compute(kind)
        self._check_leaf(iv, kind)
        if kind in (ANN_VECTORIZE, ANN_PARALLEL) and iv.iter_type != E.IterVar.DataPar:
            raise ScheduleError(f"{kind} on stage {self.name}: axis {iv.var.name} is a reduction "
                                "(or mixed) axis; only data-parallel axes can be "
                                f"{'vectorized' if kind == ANN_VECTORIZE else 'parallel'}")
        self.annotations[iv] = kind

    @traced("bind")
    def bind(self, iv, thread_iv):
        """Bind leaf ``iv`` to a GPU thread axis (``te.thread_axis``).  The lowered loop
        becomes a ``thread_extent`` attribute; only a GPU target could build it."""
        self._check_compute("bind")
        self._check_leaf(iv, "bind")
        if not isinstance(thread_iv, E.IterVar) or not thread_iv.thread_tag:
            raise ScheduleError(f"bind on stage {self.name}, axis {iv.var.name}: expected a "
                                f"te.thread_axis, got {thread_iv!r}")
        if iv in self.annotations:
            raise ScheduleError(f"bind on stage {self.name}: axis {iv.var.name} is already "
                                f"annotated {self.annotations[iv]}")
        self.thread_binds[iv] = thread_iv

    @traced("parallel")
    def parallel(self, iv):
        self._annotate(iv, ANN_PARALLEL)

    @traced("vectorize")
    def vectorize(self, iv):
        self._annotate(iv, ANN_VECTORIZE)

    @traced("unroll")
    def unroll(self, iv):
        self._annotate(iv, ANN_UNROLL)

    @traced("pragma")
    def pragma(self, iv, key: str, value=None):
        self._check_compute("pragma")
        self._check_leaf(iv, "pragma")
        known = ("auto_unroll_max_step", "unroll_explicit")
        if key not in known:
            raise ScheduleError(f"pragma on stage {self.name}, axis {iv.var.name}: unknown key "
                                f"{key!r}; expected one of {known}")
        if key == "auto_unroll_max_step":
            value = value.value if isinstance(value, E.IntImm) else value
            if not isinstance(value, int) or value < 0:
                raise ScheduleError(f"pragma auto_unroll_max_step on stage {self.name}: value "
                                    f"must be a non-negative int, got {value!r}")
        else:
            value = bool(value.value if isinstance(value, E.IntImm) else value)
        self.pragmas.setdefault(iv, []).append(("pragma_" + key, value))

    @traced("storage_align")
    def storage_align(self, axis, factor: int, offset: int):
        """Pad the stride of ``axis`` (a root axis) so that stride % factor == offset."""
        self._check_compute("storage_align")
        if not any(axis is a for a in self.op.axis):
            raise ScheduleError(f"storage_align on stage {self.name}: {getattr(axis, 'name', axis)}"
                                " is not one of the op's data axes")
        if not isinstance(factor, int) or factor < 1 or not isinstance(offset, int) or \
                not 0 <= offset < factor:
            raise ScheduleError(f"storage_align on stage {self.name}: need factor >= 1 and "
                                f"0 <= offset < factor, got factor={factor}, offset={offset}")
        self.storage_aligns[axis] = (factor, offset)

    # ------------------------------------------------------------------ placement
    @traced("compute_at")
    def compute_at(self, parent: Stage, scope):
        self._check_compute("compute_at")
        if not isinstance(parent, Stage):
            raise ScheduleError(f"compute_at on stage {self.name}: target must be a Stage "
                                f"(s[T]), got {parent!r}")
        if parent is self:
            raise ScheduleError(f"compute_at on stage {self.name}: cannot attach a stage to itself")
        parent._check_leaf(scope, f"compute_at of {self.name} onto")
        if self.schedule.reads_from(self, parent):
            raise ScheduleError(f"compute_at on stage {self.name}: target stage {parent.name} is a "
                                f"producer of {self.name}; attaching would create a cycle")
        p: Stage | None = parent
        while p is not None and p.attach_type == "scope":
            p = p.attach_stage
            if p is self:
                raise ScheduleError(f"compute_at on stage {self.name}: stage {parent.name} is "
                                    f"already attached inside {self.name}; this would be a cycle")
        self.attach_type, self.attach_stage, self.attach_ivar = "scope", parent, scope

    @traced("compute_inline")
    def compute_inline(self):
        self._check_compute("compute_inline")
        if self.is_output:
            raise ScheduleError(f"compute_inline on stage {self.name}: an output cannot be inlined")
        if self.op.reduce_axis:
            raise ScheduleError(f"compute_inline on stage {self.name}: a reduction cannot be "
                                "inlined")
        for st in self.schedule.stages:
            if st.attach_type == "scope" and st.attach_stage is self:
                raise ScheduleError(f"compute_inline on stage {self.name}: stage {st.name} is "
                                    "attached to it")
        self.attach_type, self.attach_stage, self.attach_ivar = "inline", None, None

    @traced("compute_root")
    def compute_root(self):
        self._check_compute("compute_root")
        self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None

    @traced("set_scope")
    def set_scope(self, scope: str):
        self.scope = scope


class Schedule:
    """All stages of a program in topological order (producers before consumers)."""

    trace: list | None = None     # TraceEntry list while ``trace.record_schedules()`` is on
    trace_depth = 0               # > 0 inside a recorded primitive (nested calls not logged)

    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.stages: list = []
        self.stage_map: dict = {}
        for op in post_order_ops(self.outputs):
            st = Stage(op, self)
            self.stages.append(st)
            self.stage_map[op] = st
        for op in self.outputs:
            self.stage_map[op].is_output = True
        for st in list(self.stages):
            if isinstance(st.op, ScanOp):    # a scan's body runs inside its time loop
                for op in st.op.body_ops():
                    body = self.stage_map[op]
                    body.attach_type, body.attach_stage = "scope", st
                    body.attach_ivar = st.op.scan_axis
        if recording():
            self.trace = []
            self.trace_stage_names = [st.op.name for st in self.stages]

    def __getitem__(self, key) -> Stage:
        op = key.op if isinstance(key, Tensor) else key
        st = self.stage_map.get(op)
        if st is None:
            raise ScheduleError(f"{getattr(op, 'name', op)!r} is not an operation of this schedule")
        return st

    def producers(self, stage: Stage) -> list:
        return [self.stage_map[t.op] for t in stage.op.input_tensors]

    def reads_from(self, stage: Stage, other: Stage) -> bool:
        """True if ``stage`` (transitively) reads the output of ``other``."""
        todo, seen = [stage], set()
        while todo:
            st = todo.pop()
            for p in self.producers(st):
                if p is other:
                    return True
                if id(p) not in seen:
                    seen.add(id(p))
                    todo.append(p)
        return False

    def consumers(self, stage: Stage) -> list:
        return [st for st in self.stages if stage in self.producers(st)]

    # dataflow rewrites live in dataflow.py; bound here for the TVM-style API
    @traced("cache_read")
    def cache_read(self, tensor, scope, readers):
        return _dataflow.cache_read(self, tensor, scope, readers)

    @traced("cache_write")
    def cache_write(self, tensor, scope):
        return _dataflow.cache_write(self, tensor, scope)

    @traced("rfactor")
    def rfactor(self, tensor, axis, factor_axis: int = 0):
        return _dataflow.rfactor(self, tensor, axis, factor_axis)


def create_schedule(ops) -> Schedule:
    """Create a schedule for one op/tensor or a list of them."""
    if not isinstance(ops, (list, tuple)):
        ops = [ops]
    out = []
    for o in ops:
        o = o.op if isinstance(o, Tensor) else o
        if not isinstance(o, Operation):
            raise ScheduleError(f"create_schedule: expected an op or tensor, got {o!r}")
        if o not in out:
            out.append(o)
    return Schedule(out)


__all__ = ["Schedule", "Stage", "Split", "Fuse", "create_schedule", "PlaceholderOp"]
