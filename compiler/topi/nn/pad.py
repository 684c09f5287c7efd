"""Padding and dilation of tensors (TVM's ``topi.nn.pad`` / ``topi.nn.dilate``).

Invariants: the result is one ComputeOp tagged "injective,pad" (or "injective,dilate")
whose out-of-range positions hold ``pad_value`` and are guarded with ``if_then_else``, so
no out-of-bounds element is ever read, even when a schedule inlines the pad into a loop.
A pad of all zeros still makes a (copy) stage: callers that want none skip the call.
"""
from __future__ import annotations

from ...tir import op as _op
from ...tir.expr import EQ
from .. import tag as _tag
from ..utils import check_tensor, const_int, const_tuple, error, make


def _pads(op, arg, value, n):
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise error(op, arg, value, f"a list of {n} non-negative ints (one per dimension)")
    try:
        out = [const_int(v) for v in value]
    except Exception:
        raise error(op, arg, value, f"a list of {n} non-negative ints") from None
    if any(v < 0 for v in out):
        raise error(op, arg, value, "non-negative padding")
    return out


def pad(data, pad_before, pad_after=None, pad_value=0.0, name="PadInput"):
    """Pad each dimension of ``data`` by ``pad_before`` / ``pad_after`` elements."""
    op = "topi.nn.pad"
    check_tensor(op, "data", data)
    n = data.ndim
    before = _pads(op, "pad_before", pad_before, n)
    after = _pads(op, "pad_after", pad_after, n) if pad_after is not None else before
    shape = const_tuple(data.shape)
    out = tuple(s + b + a for s, b, a in zip(shape, before, after))
    fill = _op.convert(pad_value) if not isinstance(pad_value, (int, float)) else \
        _op.const(pad_value, data.dtype)

    def f(*i):
        conds: list = []
        idx: list = []
        for x, b, s in zip(i, before, shape):
            if b == 0 and out[len(idx)] == s:
                idx.append(x)
                continue
            if b:
                conds.append(x >= b)
            if b + s < out[len(idx)]:
                conds.append(x < b + s)
            idx.append(x - b)
        if not conds:
            return data(*idx)
        return _op.if_then_else(_op.all_(*conds), data(*idx), fill)
    return make(out, f, name=name, tag=_tag.INJECTIVE + ",pad")


def dilate(data, strides, dilation_value=0.0, name="DilatedInput"):
    """Insert ``strides[d] - 1`` copies of ``dilation_value`` between elements of dim d."""
    op = "topi.nn.dilate"
    check_tensor(op, "data", data)
    st = _pads(op, "strides", strides, data.ndim)
    if any(s < 1 for s in st):
        raise error(op, "strides", strides, "ints >= 1")
    shape = const_tuple(data.shape)
    out = tuple((s - 1) * k + 1 if s else 0 for s, k in zip(shape, st))
    fill = _op.const(dilation_value, data.dtype)

    def f(*i):
        conds = [_op.cmp(EQ, _op.floormod(x, k), 0)
                 for x, k in zip(i, st) if k > 1]
        idx = [_op.floordiv(x, k) if k > 1 else x for x, k in zip(i, st)]
        if not conds:
            return data(*idx)
        return _op.if_then_else(_op.all_(*conds), data(*idx), fill)
    return make(out, f, name=name, tag=_tag.INJECTIVE + ",dilate")



def mirror_pad(data, pad_before, pad_after=None, mode="reflect", name="MirrorPadInput"):
    """Pad by repeating the border ("edge"), reflecting around it ("reflect", numpy's
    and ONNX's: the border element is not repeated; each pad must be < the dim size) or
    wrapping around ("wrap", numpy's).

    Every index maps into the tensor, so the stage reads no guard and no fill value."""
    op = "topi.nn.mirror_pad"
    check_tensor(op, "data", data)
    n = data.ndim
    before = _pads(op, "pad_before", pad_before, n)
    after = _pads(op, "pad_after", pad_after, n) if pad_after is not None else before
    shape = const_tuple(data.shape)
    if mode not in ("edge", "reflect", "wrap"):
        raise error(op, "mode", mode, "'edge', 'reflect' or 'wrap'")
    if mode == "reflect" and any(max(b, a) >= s for b, a, s in zip(before, after, shape)):
        raise error(op, "pad_before/pad_after", (before, after),
                    f"pads smaller than the dimensions {shape} for mode 'reflect'")
    out = tuple(s + b + a for s, b, a in zip(shape, before, after))

    def index(x, b, s):
        r = x - b
        if mode == "edge":
            return _op.min_(_op.max_(r, 0), s - 1)
        if mode == "wrap":
            return _op.floormod(r, s)
        r = _op.max_(r, 0 - r)                        # |r|: reflect the front
        far = s - 1 - r
        return s - 1 - _op.max_(far, 0 - far)          # reflect the back

    def f(*i):
        return data(*[x if b == 0 and a == 0 else index(x, b, s)
                      for x, b, a, s in zip(i, before, after, shape)])
    return make(out, f, name=name, tag=_tag.INJECTIVE)
