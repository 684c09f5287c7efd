"""Default CPU schedules of row normalizations: softmax, log_softmax, layer_norm.

When the normalized axes are the innermost ones (the usual case), every statistic
(max, sum of exponentials, mean, variance) is computed per row at the output's last
outer loop, so a row is read from cache, not memory, by each pass; the reductions are
rfactor'ed into SIMD-lane partial results and the elementwise passes are vectorized.
The parallel loop is one outer loop (unfused: no div/mod in the row indices).
Otherwise (normalizing an outer axis) each stage is computed at root: the reductions
with ``schedule_reduce``, the rest as injective ops.
"""
from __future__ import annotations

from ...te.tensor import ComputeOp
from .. import tag as _tag
from ..utils import const_tuple, prod
from .injective import schedule_injective_from_existing
from .reduction import schedule_reduce_from_existing
from .utils import PARALLEL_MIN_WORK, num_cores, prepare, vector_factor, vector_lanes


def _row_reduce(s, red, st_out, at, lanes):
    """Compute reduction tensor ``red`` per row at ``st_out``.``at``, lane-parallel:
    partial results in a vector of ``lanes`` (or a half or quarter vector when that
    divides the row: 1000 columns on AVX-512's 16 lanes take 8, where a scalar chain of
    dependent adds ran the whole softmax 4x slower)."""
    op = s[red].op
    kin = op.reduce_axis[-1].dom.extent.value
    width = next((w for w in (lanes, lanes // 2, lanes // 4) if w >= 4 and kin % w == 0
                  and kin >= 2 * w), None)
    if op.num_outputs == 1 and width is not None:
        ko, ki = s[red].split(op.reduce_axis[-1], factor=width)
        rf = s.rfactor(red, ki, factor_axis=len(op.axis))
        f = s[rf]
        fax = list(f.op.axis)
        f.reorder(*fax[:-1], *f.op.reduce_axis, fax[-1])
        f.vectorize(fax[-1])
        f.compute_at(st_out, at)
    s[red].compute_at(st_out, at)


def _vectorize_inner(st, axis, extent, lanes):
    v = vector_factor(extent, lanes)
    if v < extent:
        _, axis = st.split(axis, factor=v)
    st.vectorize(axis)


def _rows(s, out, n_inner: int):
    """(stage, attach loop) of ``out`` whose last ``n_inner`` axes form a row."""
    st = s[out]
    shape = const_tuple(out.shape)
    outer = list(st.op.axis)[:len(shape) - n_inner]
    if not outer:
        return st, None
    par = next((a for a in outer if a.dom.extent.value >= 2 * num_cores()), outer[0])
    if prod(shape) >= PARALLEL_MIN_WORK and par.dom.extent.value > 1:
        st.parallel(par)
    return st, outer[-1]


def _by_name(ops, name):
    return next((o for o in ops if o.name == name), None)


def schedule_softmax(outs):
    """Schedule ``nn.softmax`` / ``nn.log_softmax`` (and elementwise consumers)."""
    s, outs, ops = prepare(outs)
    out_ops = {id(t.op) for t in outs}
    norm = next(o for o in ops if o.tag in (_tag.SOFTMAX, _tag.LOG_SOFTMAX))
    axis = norm.attrs.get("axis", len(norm.axis) - 1)
    ex = _by_name(ops, "T_softmax_exp")
    reds = [o for o in (_by_name(ops, "T_softmax_maxelem"), _by_name(ops, "T_softmax_expsum"))
            if o is not None]
    lanes = vector_lanes(norm.output_dtype(0))
    shape = const_tuple(norm.output_shape(0))
    for op in ops:
        if id(op) in out_ops and op is not norm and not op.reduce_axis:
            schedule_injective_from_existing(s, op.output(0))
    if axis != len(shape) - 1:
        if ex is not None:
            s[ex].compute_inline()
        for r in reds:
            schedule_reduce_from_existing(s, r.output(0))
        schedule_injective_from_existing(s, norm.output(0))
        return s
    st, at = _rows(s, norm.output(0), 1)
    if at is not None:
        for r in reds[:1]:
            _row_reduce(s, r.output(0), st, at, lanes)
        if ex is not None:
            s[ex].compute_at(st, at)
            _vectorize_inner(s[ex], s[ex].op.axis[-1], shape[-1], lanes)
        for r in reds[1:]:
            _row_reduce(s, r.output(0), st, at, lanes)
    _vectorize_inner(st, st.op.axis[-1], shape[-1], lanes)
    return s


def schedule_layer_norm(outs):
    """Schedule ``nn.layer_norm`` (and elementwise consumers)."""
    s, outs, ops = prepare(outs)
    out_ops = {id(t.op) for t in outs}
    norm = next(o for o in ops if o.tag == _tag.LAYER_NORM)
    axes = list(norm.attrs.get("axis", [len(norm.axis) - 1]))
    shape = const_tuple(norm.output_shape(0))
    lanes = vector_lanes(norm.output_dtype(0))
    reds = [t.op for t in norm.input_tensors if isinstance(t.op, ComputeOp) and t.op.reduce_axis]
    reds.sort(key=lambda o: o.name != "T_layer_norm_mean")   # mean before variance
    for op in ops:
        if id(op) in out_ops and op is not norm and not op.reduce_axis:
            schedule_injective_from_existing(s, op.output(0))
    trailing = axes == list(range(len(shape) - len(axes), len(shape)))
    if not trailing or len(axes) == len(shape):
        for r in reds:
            schedule_reduce_from_existing(s, r.output(0))
        schedule_injective_from_existing(s, norm.output(0))
        return s
    st, at = _rows(s, norm.output(0), len(axes))
    for r in reds:
        _row_reduce(s, r.output(0), st, at, lanes)
    _vectorize_inner(st, st.op.axis[-1], shape[-1], lanes)
    return s
