"""lower(): Schedule -> PrimFunc (inline injection, bound inference, ScheduleOps, passes).

The schedule is never mutated, so one Schedule can be lowered repeatedly.  ``args`` are
the tensors the function takes, in order; they may be the user's original tensors even
after cache_write/rfactor replaced their ops (they are resolved through ``stage_map``).
"""
from __future__ import annotations

from math import prod

from ..errors import LoweringError, ScheduleError
from ..passes.pipeline import default_pipeline, run_pipeline
from ..te.tensor import PlaceholderOp, Tensor
from ..tir import expr as E
from ..tir import op as _op
from ..tir import stmt as S
from ..tir.expr import IntImm
from ..transform import PassContext
from .bound import infer_bound
from .dependent import dependent_extent_violation
from .inline import inject_inline
from .opaque import plan_opaque
from .relations import as_expr
from .schedule import Schedule, create_schedule
from .schedule_ops import OpsBuilder, TensorBinding


def _current(sch: Schedule, t) -> Tensor:
    if not isinstance(t, Tensor):
        raise LoweringError(f"lower: args must be Tensors or te.var scalars, got {t!r}")
    st = sch.stage_map.get(t.op)
    if st is None:
        if isinstance(t.op, PlaceholderOp):
            return t   # an unused input is allowed
        raise LoweringError(f"lower: tensor {t.name} is not part of the schedule")
    return st.op.output(t.value_index)


def _strides(st, extents) -> tuple:
    if not st.storage_aligns:
        return ()
    if not all(isinstance(x, int) for x in extents):
        return _symbolic_strides(st, extents)
    strides = [1] * len(extents)
    for d in range(len(extents) - 2, -1, -1):
        s = strides[d + 1] * extents[d + 1]
        fo = st.storage_aligns.get(st.op.axis[d])
        if fo is not None:
            f, o = fo
            s += (o - s) % f
        strides[d] = s
    return tuple(_op.const(x) for x in strides)


def _symbolic_strides(st, extents) -> tuple:
    """``_strides`` over symbolic extents: the same padding, as expressions."""
    strides = [_op.const(1)] * len(extents)
    for d in range(len(extents) - 2, -1, -1):
        s = _op.mul(strides[d + 1], as_expr(extents[d + 1]))
        fo = st.storage_aligns.get(st.op.axis[d])
        if fo is not None:
            s = _op.add(s, _op.floormod(_op.sub(fo[1], s), fo[0]))
        strides[d] = s
    return tuple(strides)


def _buffer_name(t: Tensor) -> str:
    return t.name.replace(".", "_")


def schedule_to_primfunc(sch: Schedule, args, name: str = "main") -> S.PrimFunc:
    """Lower without running the pass pipeline (the raw loop nest)."""
    if not isinstance(sch, Schedule):
        raise LoweringError(f"lower: expected a Schedule, got {type(sch).__name__}")
    args = list(args or [])
    misplaced = dependent_extent_violation(sch)
    if misplaced is not None:
        raise ScheduleError(misplaced)
    bodies = inject_inline(sch)
    bindings: dict = {}
    params: list = []
    seen: set = set()
    for a in args:
        if isinstance(a, E.Var):      # a scalar argument (te.var), passed by value
            if any(a is p for p in params):
                raise LoweringError(f"lower: variable {a.name} appears twice in args")
            params.append(a)
            continue
        t = _current(sch, a)
        if t in seen:
            raise LoweringError(f"lower: tensor {t.name} appears twice in args")
        seen.add(t)
        buf = S.decl_buffer(t.shape, t.dtype, _buffer_name(t))
        params.append(buf)
        bindings[t] = TensorBinding(buf, [_op.const(0)] * len(t.shape))
    opaque = plan_opaque(sch, bindings, _buffer_name)
    bounds = infer_bound(sch, bodies, opaque.loop_stages)
    alloc = dict(opaque.alloc)
    for st in sch.stages:
        if st not in bodies:
            continue
        ext = [bounds.ext[iv] for iv in st.op.axis]
        mins = [bounds.root_min[iv] for iv in st.op.axis]
        for k in range(st.op.num_outputs):
            t = st.op.output(k)
            if t in bindings:
                # An argument keeps its whole buffer (offsets 0); an attached stage
                # writes its bound region of it at the attach point, as in TVM.
                continue
            buf = S.decl_buffer(ext, t.dtype, _buffer_name(t), st.scope,
                                strides=_strides(st, ext))
            alloc[t] = buf
            bindings[t] = TensorBinding(buf, mins)
    _check_index_range(bindings, bounds)
    body = OpsBuilder(sch, bodies, bounds, bindings, alloc, opaque.builders).build()
    for st in reversed(sch.stages):
        if (st in bodies or st in opaque.builders) and st.attach_type == "root":
            for k in range(st.op.num_outputs):
                block = alloc.get(st.op.output(k))
                if block is not None:
                    body = S.Allocate(block, body)
    return S.PrimFunc(name, tuple(params), body, (("tir.noalias", True),))


INDEX_LIMIT = 2**31 - 1


def _check_index_range(bindings, bounds) -> None:
    """Refuse what 32-bit indices cannot address: loops and flat indices are int32, so
    a tensor of 2^31 elements or more (or a loop that long) would wrap around and
    silently compute a fraction of the result."""
    for t, bind in bindings.items():
        if not all(isinstance(x, IntImm) for x in bind.buffer.shape):
            continue     # symbolic: the sizes are only known at call time
        n = prod(int(x.value) for x in bind.buffer.shape)
        if n > INDEX_LIMIT:
            raise LoweringError(f"lower: tensor {t.name} has {n} elements; indices are 32-bit, "
                                f"so at most {INDEX_LIMIT} elements per tensor are supported")
    for iv, n in bounds.ext.items():
        if isinstance(n, int) and n > INDEX_LIMIT:
            raise LoweringError(f"lower: loop {iv.var.name} has extent {n}; loops are 32-bit, "
                                f"so extents up to {INDEX_LIMIT} are supported")


def lower(sch: Schedule, args, name: str = "main", simple_mode: bool = False,
          passes=None) -> S.PrimFunc:
    """Lower ``sch`` to an optimized PrimFunc taking ``args`` (TVM's tvm.lower).

    Without explicit ``passes`` the pipeline follows the active ``PassContext``.
    """
    func = schedule_to_primfunc(sch, args, name)
    if passes is None:
        passes = default_pipeline(PassContext.current().config)
    return run_pipeline(func, passes)


def create_prim_func(args, name: str = "main") -> S.PrimFunc:
    """TVM's ``te.create_prim_func([A, B, C])``: the PrimFunc taking ``args`` (inputs and
    outputs, in call order) that computes every compute tensor among them with the
    default schedule; intermediate tensors become internal buffers."""
    if not isinstance(args, (list, tuple)) or not args:
        raise LoweringError(f"create_prim_func: args {args!r} must be a non-empty list of "
                            "tensors")
    for t in args:
        if not isinstance(t, Tensor):
            raise LoweringError(f"create_prim_func: {t!r} is not a te Tensor")
    outs = [t.op for t in args if not isinstance(t.op, PlaceholderOp)]
    if not outs:
        raise LoweringError("create_prim_func: args hold only placeholders; include the "
                            "computed tensors (outputs)")
    return lower(create_schedule(outs), list(args), name=name)


__all__ = ["lower", "schedule_to_primfunc", "create_prim_func"]
