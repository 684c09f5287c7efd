"""Default CPU schedule of elementwise, broadcast and injective ops (TVM's
``schedule_injective``): inline the intermediates, then per output fuse the outer axes
into one parallel loop and vectorize an inner split of the last axis.

Invariants: only loop structure changes (results are bit-identical to a plain schedule);
tiny outputs stay serial (a fork-join costs more than they do); the vector length is a
multiple of the SIMD width dividing the last extent when one exists, else a divisor of
it, so no predicate blocks vectorization when avoidable.  A guarded stage (an
``if_then_else`` body: pad, dilate, concatenate) is vectorized only with a power-of-two
vector length: other lengths compile to a branch per lane (codegen avoids LLVM's
masked loads of odd vectors), which measured 6x slower than the plain scalar loop on a
(64, 58, 58) pad.
"""
from __future__ import annotations

from ...tir.expr import Call
from ...tir.functor import post_order_visit
from ..utils import const_tuple, prod
from .utils import PARALLEL_MIN_WORK, as_list, prepare, vector_factor, vector_lanes


def _guarded(op) -> bool:
    """Whether the stage's value is chosen by an ``if_then_else`` (padding and the like)."""
    found: list = []
    for e in getattr(op, "body", ()):
        post_order_visit(e, lambda n: found.append(n) if type(n) is Call and
                         n.op == "if_then_else" else None)
    return bool(found)


def schedule_injective_from_existing(s, out):
    """Schedule one injective stage ``out`` (a tensor) of the existing schedule ``s``."""
    st = s[out]
    shape = const_tuple(out.shape)
    if not shape or 0 in shape:
        return s
    axes = list(st.op.axis)
    lanes = vector_lanes(out.dtype)
    last, rows = shape[-1], prod(shape[:-1])
    inner, lead = None, axes
    if last >= lanes // 2 or len(shape) == 1:
        v = vector_factor(last, lanes)
        inner, lead = axes[-1], axes[:-1]
        if v < last:
            lo, inner = st.split(axes[-1], factor=v)
            # fuse the split-off loop into the parallel one only when the rows alone
            # cannot keep the cores busy (fusing costs a div/mod per iteration)
            lead = axes[:-1] if rows >= 64 else axes[:-1] + [lo]
    if lead:
        fused = st.fuse(*lead) if len(lead) > 1 else lead[0]
        if prod(shape) >= PARALLEL_MIN_WORK and fused.dom.extent.value > 1:
            st.parallel(fused)
    n = inner.dom.extent.value if inner is not None else 1
    if n > 1 and (n & (n - 1) == 0 or not _guarded(st.op)):
        st.vectorize(inner)
    return s


def schedule_injective(outs):
    """Schedule elementwise/broadcast/injective ``outs`` (a tensor or a list)."""
    s, outs, ops = prepare(outs)
    out_ops = {id(t.op) for t in outs}
    for op in ops:
        if id(op) not in out_ops and not op.reduce_axis:
            s[op].compute_inline()   # pad/dilate stages too: nothing reduces over them
    for t in as_list(outs):
        if not t.op.reduce_axis:
            schedule_injective_from_existing(s, t)
    return s


schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective
schedule_concatenate = schedule_injective
