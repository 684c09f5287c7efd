"""Reductions (TVM's ``topi.reduction``): sum, max, min, prod, all, any, mean, argmax, argmin.

Invariants: ``axis`` is None (all axes), an int or a sequence of ints, negative counted
from the end; ``keepdims`` keeps reduced dimensions with extent 1.  Each op is one
ComputeOp tagged "comm_reduce" (argmax/argmin: "comm_reduce_idx", a two-output reduction
of (index, value) whose index output is returned; the index is int32, flattened over the
reduced axes in row-major order, first occurrence on ties unless select_last_index).
An empty axis tuple returns an elementwise copy, as numpy does.
"""
from __future__ import annotations

import builtins

from ..te import api as te
from ..tir import dtype as dt
from ..tir import expr as E
from ..tir import op as _op
from . import tag as _tag
from .utils import check_tensor, const_tuple, error, make, normalize_axes, ravel_index


def _layout(op: str, data, axis, keepdims: bool):
    check_tensor(op, "data", data)
    if not isinstance(keepdims, bool):
        raise error(op, "keepdims", keepdims, "a bool")
    shape = const_tuple(data.shape)
    axes = normalize_axes(op, len(shape), axis)
    out = [1 if d in axes else s for d, s in enumerate(shape) if keepdims or d not in axes]
    rvs = [te.reduce_axis((0, shape[d]), name=f"k{d}") for d in axes]
    return shape, axes, tuple(out), rvs


def _full_index(shape, axes, rvs, out_idx, keepdims):
    """Input indices from output indices and reduce vars."""
    idx, it, rit = [], iter(out_idx), iter(rvs)
    for d in range(len(shape)):
        if d in axes:
            idx.append(next(rit).var)
            if keepdims:
                next(it)
        else:
            idx.append(next(it))
    return idx


def _reduce(name: str, reducer, data, axis, keepdims, pre=None):
    op = f"topi.{name}"
    shape, axes, out, rvs = _layout(op, data, axis, keepdims)
    pre = pre or (lambda v: v)
    if not axes:
        return make(out, lambda *i: pre(data(*i)), name=f"T_{name}", tag=_tag.INJECTIVE)

    def f(*i):
        return reducer(pre(data(*_full_index(shape, axes, rvs, i, keepdims))), axis=rvs)
    return make(out, f, name=f"T_{name}", tag=_tag.COMM_REDUCE, axes=list(axes))


_prod = te.comm_reducer(lambda x, y: x * y, lambda t: _op.const(1, t), name="prod")
_all = te.comm_reducer(_op.logical_and, lambda t: _op.const(True, t), name="all")
_any = te.comm_reducer(_op.logical_or, lambda t: _op.const(False, t), name="any")


def sum(data, axis=None, keepdims=False):  # noqa: A001
    """Sum over ``axis``."""
    return _reduce("sum", te.sum, data, axis, keepdims)


def max(data, axis=None, keepdims=False):  # noqa: A001
    """Maximum over ``axis``."""
    return _reduce("max", te.max, data, axis, keepdims)


def min(data, axis=None, keepdims=False):  # noqa: A001
    """Minimum over ``axis``."""
    return _reduce("min", te.min, data, axis, keepdims)


def prod(data, axis=None, keepdims=False):
    """Product over ``axis``."""
    return _reduce("prod", _prod, data, axis, keepdims)


def all(data, axis=None, keepdims=False):  # noqa: A001
    """Logical and over ``axis`` of a bool tensor."""
    check_tensor("topi.all", "data", data)
    if not dt.is_bool(data.dtype):
        raise error("topi.all", "data", data, "a bool tensor")
    return _reduce("all", _all, data, axis, keepdims)


def any(data, axis=None, keepdims=False):  # noqa: A001
    """Logical or over ``axis`` of a bool tensor."""
    check_tensor("topi.any", "data", data)
    if not dt.is_bool(data.dtype):
        raise error("topi.any", "data", data, "a bool tensor")
    return _reduce("any", _any, data, axis, keepdims)


def mean(data, axis=None, keepdims=False):
    """Arithmetic mean over ``axis`` of a float tensor (one stage: sum of x / n)."""
    check_tensor("topi.mean", "data", data, float_only=True)
    shape = const_tuple(data.shape)
    axes = normalize_axes("topi.mean", len(shape), axis)
    count = 1
    for d in axes:
        count *= shape[d]
    scale = _op.const(1.0 / count if count else float("nan"), data.dtype)
    return _reduce("mean", te.sum, data, axis, keepdims, pre=lambda v: v * scale)


def _arg_reducer(name: str, better, select_last: bool):
    """(index, value) reducer: ``better(a, b)`` says value a beats value b."""
    def fcombine(x, y):
        tie = _op.cmp(E.EQ, y[1], x[1])
        closer = _op.cmp(E.GT, y[0], x[0]) if select_last else _op.cmp(E.LT, y[0], x[0])
        take = _op.logical_or(better(y[1], x[1]), _op.logical_and(tie, closer))
        return _op.select(take, y[0], x[0]), _op.select(take, y[1], x[1])

    def fidentity(t0, t1):
        idx = _op.const(-1 if select_last else 2**31 - 1, t0)
        return idx, (_op.min_value(t1) if name == "argmax" else _op.max_value(t1))
    return te.comm_reducer(fcombine, fidentity, name=name)


def _arg(name: str, data, axis, keepdims, select_last_index):
    op = f"topi.{name}"
    shape, axes, out, rvs = _layout(op, data, axis, keepdims)
    if not isinstance(select_last_index, bool):
        raise error(op, "select_last_index", select_last_index, "a bool")
    if not axes:
        return make(out, lambda *i: _op.const(0, "int32"), name=f"T_{name}",
                    tag=_tag.INJECTIVE)
    if builtins.any(shape[d] == 0 for d in axes):
        raise error(op, "data", data, "non-empty reduced dimensions")
    better = (lambda a, b: _op.cmp(E.GT, a, b)) if name == "argmax" else \
        (lambda a, b: _op.cmp(E.LT, a, b))
    reducer = _arg_reducer(name, better, select_last_index)

    def f(*i):
        idx = _full_index(shape, axes, rvs, i, keepdims)
        flat = ravel_index([rv.var for rv in rvs], [shape[d] for d in axes])
        return reducer((_op.cast("int32", flat), data(*idx)), axis=rvs)
    res = make(out, f, name=f"T_{name}", tag=_tag.COMM_REDUCE_IDX, axes=list(axes))
    return res[0]


def argmax(data, axis=None, keepdims=False, select_last_index=False):
    """Index (int32) of the maximum over ``axis``."""
    return _arg("argmax", data, axis, keepdims, select_last_index)


def argmin(data, axis=None, keepdims=False, select_last_index=False):
    """Index (int32) of the minimum over ``axis``."""
    return _arg("argmin", data, axis, keepdims, select_last_index)
