"""ComputeDAG: the computation being tuned, its analysis, and step replay.

Invariants: ``ops`` are in the topological order ``te.create_schedule`` uses, so stage i
of every State is ``ops[i]`` (before dataflow steps insert stages).  Replaying steps on
a te Schedule is deterministic; results of replays are cached by the step prefix
(records are hashable tuples) because sketches share prefixes.
"""
from __future__ import annotations

import json
from collections import OrderedDict

from compiler import te
from compiler.relay.backend.dispatch import dag_digest
from compiler.te.tensor import ComputeOp, PlaceholderOp, Tensor, post_order_ops
from compiler.tir import expr as E
from compiler.tir.functor import Visitor

from . import state as S
from .errors import AutoSchedError
from .extents import static_extent
from .features.access import AccessAnalyzer
from .layout_rewrite import LayoutRewriteOption, plan_rewrites, replay_rewritten, rewrite_dag
from .loop_state import LoopState
from .steps.printing import PyNames, unique_names
from .steps.registry import apply_step, apply_to_schedule, check_state


class ComputeDAG:
    def __init__(self, tensors):
        if isinstance(tensors, Tensor):
            tensors = [tensors]
        self.tensors = list(tensors)
        if not self.tensors or not all(isinstance(t, Tensor) for t in self.tensors):
            raise AutoSchedError(f"ComputeDAG expects a list of tensors, got {tensors!r}")
        readers = {t.op for op in post_order_ops(self.tensors) for t in op.input_tensors}
        self.outputs = [t.op for t in self.tensors
                        if isinstance(t.op, ComputeOp) and t.op not in readers]
        if not self.outputs:
            raise AutoSchedError("ComputeDAG: no output compute op among the tensors")
        self.ops = [st.op for st in te.create_schedule(self.outputs).stages]
        _check_static(self.ops)
        self.access = AccessAnalyzer(self.ops, self.outputs)
        self.flop_ct = float(sum(_flops(op) for op in self.ops))
        self._replay_cache: OrderedDict = OrderedDict()
        self._dataflow_cache: OrderedDict = OrderedDict()
        self._init_state = None

    # ------------------------------------------------------------------ states
    def init_state(self) -> S.State:
        if self._init_state is None:
            stages = []
            for op in self.ops:
                if isinstance(op, PlaceholderOp):
                    stages.append(S.StageState(op, (), is_placeholder=True))
                    continue
                its = [S.Iterator(iv.var.name, static_extent(iv), S.SPATIAL)
                       for iv in op.axis]
                its += [S.Iterator(iv.var.name, static_extent(iv), S.REDUCTION)
                        for iv in op.reduce_axis]
                stages.append(S.StageState(op, tuple(its)))
            self._init_state = S.State(self, stages)
        return self._init_state.copy()

    def get_init_state(self) -> LoopState:
        """TVM's name: the initial state, with TVM's loop-state methods (split, fuse,
        compute_at, cache_write, ...; see loop_state.py)."""
        return LoopState.of(self.init_state())

    def infer_bound_from_state(self, state):
        """TVM's name.  Our states carry their loop extents at every step (bounds are
        inferred as steps apply), so this returns a copy of ``state``."""
        return state.copy()

    def replay(self, steps, readonly: bool = False):
        """A te Schedule with ``steps`` applied.

        With ``readonly`` the schedule may come from a cache keyed by the step records and
        must not be modified (dataflow steps use this to read back new stages).
        """
        key = tuple(S.freeze(s.to_record()) for s in steps) if readonly else None
        if readonly:
            hit = self._replay_cache.get(key)
            if hit is not None:
                self._replay_cache.move_to_end(key)
                return hit
        sch = te.create_schedule(self.outputs)
        for k, st in enumerate(steps):
            apply_to_schedule(st, sch, steps[:k])
        if readonly:
            self._replay_cache[key] = sch
            if len(self._replay_cache) > 256:
                self._replay_cache.popitem(last=False)
        return sch

    def replay_dataflow(self, key, steps):
        """A read-only te Schedule with ``steps`` applied, cached by the caller's ``key``
        (a State's dataflow key: steps with equal keys give the same ops)."""
        return self.dataflow_result(key, lambda: self.replay(steps))

    def dataflow_result(self, key, make):
        """What ``make()`` returns for dataflow ``key`` (derived from the replayed
        schedule of the steps the key stands for), computed once per key: callers check
        the cache before building the step list, which a hit does not need."""
        hit = self._dataflow_cache.get(key)
        if hit is not None:
            self._dataflow_cache.move_to_end(key)
            return hit
        hit = self._dataflow_cache[key] = make()
        if len(self._dataflow_cache) > 4096:
            self._dataflow_cache.popitem(last=False)
        return hit

    def apply_steps_from_state(self, state, layout_rewrite=LayoutRewriteOption.NO_REWRITE):
        """(te Schedule, argument tensors) for ``state``: what to lower and build.

        ``layout_rewrite`` (TVM's LayoutRewriteOption, see layout_rewrite.py): with
        REWRITE_FOR_PRE_TRANSFORMED the layout-free weights among the arguments are
        replaced by tensors of their new shape (``layout_transforms`` makes such data);
        with INSERT_TRANSFORM_STAGE the function keeps its arguments and transforms the
        weight itself.  Raises InvalidStepError for a state that does not apply.
        """
        check_state(state)
        sch, args, _ = replay_rewritten(self, state.transform_steps, layout_rewrite)
        return sch, args

    def rewrite_layout_from_state(self, state) -> ComputeDAG:
        """TVM's: the ComputeDAG whose layout-free weights are placeholders in the layout
        ``state``'s tiling reads (REWRITE_FOR_PRE_TRANSFORMED); this DAG when ``state``
        rewrites none."""
        check_state(state)
        plans = plan_rewrites(self, self.replay(state.transform_steps, readonly=True))
        if not plans:
            return self
        _outs, args = rewrite_dag(self, plans, LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED)
        return ComputeDAG(args)

    def hash_key(self) -> str:
        """TVM's: a digest of the DAG's canonical text (names of tensors aside), the one
        relay's task extraction keys its tasks with."""
        return dag_digest([op.output(0) for op in self.outputs])

    def workload_key(self) -> str:
        """TVM's: ``[hash_key, shape of every tensor...]`` as JSON; a task extracted from
        a relay model has this key."""
        return json.dumps([self.hash_key()] + [[int(d.value) for d in t.shape]
                                                for t in self.tensors])

    def layout_transforms(self, state) -> list:
        """The LayoutTransform of each weight REWRITE_FOR_PRE_TRANSFORMED rewrites."""
        check_state(state)
        return replay_rewritten(self, state.transform_steps,
                                LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED)[2]

    def state_from_steps(self, steps) -> S.State:
        state = self.init_state()
        for st in steps:
            apply_step(state, st)
        return state

    # ------------------------------------------------------------------ printing
    def print_python_code_from_state(self, state) -> str:
        """Schedule-API Python code equivalent to ``state``.

        The code runs in ``python_namespace()``: ``s`` is a fresh schedule and every op's
        tensor is bound to its name (dots become underscores).
        """
        init = self.init_state()
        names = PyNames(self, init)
        py_vars = self._py_vars()
        outs = ", ".join(f"{py_vars[self.ops.index(o)]}.op" for o in self.outputs)
        lines = [f"# s = te.create_schedule([{outs}])"]
        lines += names.start()
        cur = init
        for k, step in enumerate(state.transform_steps):
            after = cur.copy()
            res = apply_step(after, step)
            inserted = res if len(after.stages) > len(cur.stages) else None
            names.set(cur, after, state.transform_steps[:k], inserted)
            lines += step.print_python(names)
            cur = after
        return "\n".join(lines) + "\n"

    def _py_vars(self) -> list:
        return unique_names(op.name for op in self.ops)

    def python_namespace(self) -> dict:
        ns = {"s": te.create_schedule(self.outputs), "te": te}
        for op, var in zip(self.ops, self._py_vars()):
            ns[var] = op.output(0)
        return ns

    def __str__(self) -> str:
        lines = []
        for op in self.ops:
            if isinstance(op, PlaceholderOp):
                lines.append(f"{op.name} = PLACEHOLDER {[s.value for s in op.shape]}")
                continue
            idx = ", ".join(iv.var.name for iv in op.axis)
            for k, b in enumerate(op.body):
                name = op.name if op.num_outputs == 1 else f"{op.name}.v{k}"
                if isinstance(b, E.Reduce):
                    src = ", ".join(str(x) for x in b.source)
                    sym = "+=" if b.combiner.name == "sum" else f"{b.combiner.name}="
                    lines.append(f"{name}({idx}) {sym} {src}")
                else:
                    lines.append(f"{name}({idx}) = {b}")
        return "\n".join(lines) + "\n"

    def __repr__(self):
        return f"ComputeDAG({', '.join(op.name for op in self.ops)})"


class _FlopCounter(Visitor):
    def __init__(self):
        super().__init__()
        self.n = 0

    def generic_visit(self, node):
        if isinstance(node, (E.BinaryOp, E.CmpOp)) or (
                isinstance(node, E.Call) and node.op not in ("if_then_else", "likely")):
            self.n += 1
        super().generic_visit(node)

    def visit_ProducerLoad(self, e):
        pass


def _check_static(ops) -> None:
    """The search needs concrete loop extents (as Ansor): refuse ``te.var`` shapes.  A
    reduce axis may read its extent from a tensor (``extents``)."""
    for op in ops:
        if isinstance(op, ComputeOp):
            for iv in op.axis:
                static_extent(iv)
            for iv in op.reduce_axis:
                static_extent(iv)
        for d in getattr(op, "shape", ()):
            if not isinstance(d, E.IntImm):
                raise AutoSchedError(
                    f"ComputeDAG: operation {op.name} has symbolic extent {d}; the "
                    "auto-scheduler needs static shapes (bind te.var sizes to ints "
                    "before tuning)")


def _flops(op) -> int:
    """The op's floating-point operations; ``attrs["FLOP"]`` when the op gives it (as
    TVM's sparse ops do: their stored entries do not fix the count)."""
    if not isinstance(op, ComputeOp):
        return 0
    given = (op.attrs or {}).get("FLOP")
    if given is not None:
        return int(given.value if isinstance(given, E.IntImm) else given)
    size = 1
    for iv in op.axis:
        size *= static_extent(iv)
    per = 0
    for b in op.body[:1]:
        c = _FlopCounter()
        if isinstance(b, E.Reduce):
            c.visit(b.source)
            c.visit(b.combiner.result)
            red = 1
            for iv in b.axis:
                red *= static_extent(iv)
            per = c.n * red
        else:
            c.visit(b)
            per = c.n
    return size * per
