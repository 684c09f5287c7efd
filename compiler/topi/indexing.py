"""Indexing operators: strided_slice, take (TVM's ``topi.strided_slice`` / ``topi.take``).

Invariants: ``strided_slice`` follows Python/numpy slice semantics exactly (negative
begin/end count from the end, out-of-range values are clamped, negative strides walk
backwards), resolved statically with ``slice.indices``.  ``take`` never reads out of
bounds in "clip" and "wrap" modes; "fast" trusts the indices.  Results are "injective".
"""
from __future__ import annotations

from ..te.tensor import Tensor
from ..tir import dtype as dt
from ..tir import op as _op
from . import tag as _tag
from .utils import check_tensor, const_int, const_tuple, error, make, normalize_axis


def _int_list(op: str, arg: str, value, n=None):
    if not isinstance(value, (list, tuple)) or (n is not None and len(value) != n):
        raise error(op, arg, value, "a list of ints" + (f" of length {n}" if n else ""))
    try:
        return [const_int(v) for v in value]
    except Exception:
        raise error(op, arg, value, "a list of ints") from None


def strided_slice(a, begin, end, strides=None, axes=None, slice_mode="end"):
    """``a[begin:end:strides]`` over ``axes`` (default: the leading dimensions)."""
    op = "topi.strided_slice"
    check_tensor(op, "a", a)
    src = const_tuple(a.shape)
    begin = _int_list(op, "begin", begin)
    end = _int_list(op, "end", end, len(begin))
    strides = [1] * len(begin) if strides is None else _int_list(op, "strides", strides)
    if len(strides) == 1 and len(begin) > 1:
        strides = strides * len(begin)
    if len(strides) != len(begin):
        raise error(op, "strides", strides, f"{len(begin)} strides like begin")
    if slice_mode not in ("end", "size"):
        raise error(op, "slice_mode", slice_mode, "'end' or 'size'")
    if axes is None:
        if len(begin) > len(src):
            raise error(op, "begin", begin, f"at most {len(src)} entries for shape {src}")
        axes = list(range(len(begin)))
    else:
        axes = [normalize_axis(op, len(src), x, "axes") for x in _int_list(op, "axes", axes,
                                                                           len(begin))]
    starts, steps, out = [0] * len(src), [1] * len(src), list(src)
    for b, e, s, ax in zip(begin, end, strides, axes):
        if s == 0:
            raise error(op, "strides", strides, "non-zero strides")
        if slice_mode == "size":
            s = 1
            e = src[ax] if e < 0 else b + e
        start, stop, step = slice(b, e, s).indices(src[ax])
        starts[ax], steps[ax], out[ax] = start, step, len(range(start, stop, step))
    return make(tuple(out), lambda *i: a(*[st + x * sp for x, st, sp in zip(i, starts, steps)]),
                name="T_strided_slice", tag=_tag.INJECTIVE)


def _index_expr(op: str, indices, mode: str, n: int, idx):
    v = indices(*idx) if isinstance(indices, Tensor) else _op.const(indices, "int32")
    v = _op.cast("int32", v) if v.dtype != "int32" and dt.bits(v.dtype) < 32 else v
    if mode == "clip":
        return _op.min_(_op.max_(v, _op.const(0, v.dtype)), _op.const(n - 1, v.dtype))
    if mode == "wrap":
        return _op.floormod(v, _op.const(n, v.dtype))
    return v


def take(a, indices, axis=None, batch_dims=0, mode="clip"):
    """Gather ``a`` at ``indices`` along ``axis`` (over the flattened ``a`` if None)."""
    op = "topi.take"
    check_tensor(op, "a", a)
    if mode not in ("clip", "wrap", "fast"):
        raise error(op, "mode", mode, "'clip', 'wrap' or 'fast'")
    if batch_dims != 0:
        raise error(op, "batch_dims", batch_dims, "0 (batched take is not supported)")
    if isinstance(indices, Tensor):
        if not dt.is_integral(indices.dtype):
            raise error(op, "indices", indices, "an integer tensor")
        ishape = const_tuple(indices.shape)
    elif isinstance(indices, int) and not isinstance(indices, bool):
        ishape = ()
    else:
        raise error(op, "indices", indices, "an integer te.Tensor or an int")
    src = const_tuple(a.shape)
    if axis is None:
        total = 1
        for s in src:
            total *= s
        if total == 0:
            raise error(op, "a", a, "a non-empty tensor")

        def flat(*i):
            k = _index_expr(op, indices, mode, total, i)
            idx, rest = [], k
            for s in reversed(src):
                idx.append(_op.floormod(rest, s) if s != 1 else _op.const(0, k.dtype))
                rest = _op.floordiv(rest, s)
            return a(*idx[::-1])
        return make(ishape, flat, name="T_take", tag=_tag.INJECTIVE)
    ax = normalize_axis(op, len(src), axis)
    if src[ax] == 0:
        raise error(op, "a", a, f"a non-empty axis {ax}")
    out = src[:ax] + ishape + src[ax + 1:]
    ni = len(ishape)

    def f(*i):
        k = _index_expr(op, indices, mode, src[ax], i[ax:ax + ni])
        return a(*(i[:ax] + (k,) + i[ax + ni:]))
    return make(out, f, name="T_take", tag=_tag.INJECTIVE)
