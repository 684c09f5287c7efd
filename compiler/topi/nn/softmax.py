"""Softmax and log-softmax along one axis (TVM's ``nn.softmax`` / ``nn.log_softmax``).

Stages (names and tags are what ``schedule_softmax`` looks for):
  T_softmax_maxelem (comm_reduce) -> T_softmax_exp ("softmax_exp", softmax only)
  -> T_softmax_expsum (comm_reduce) -> T_softmax_norm ("softmax_output") or
  T_log_softmax ("log_softmax_output").
Invariants: the maximum is subtracted before exponentiating (no overflow for large
inputs); the output op's attrs record the normalized axis; pattern is opaque.
"""
from __future__ import annotations

from ...te import api as te
from ...tir import op as _op
from .. import tag as _tag
from ..utils import check_tensor, const_tuple, make, normalize_axis


def _reduced(x, axis, k, fn, name):
    """Reduce over ``axis`` with ``fn(value, axis=k)``; result drops that axis."""
    shape = const_tuple(x.shape)
    out = shape[:axis] + shape[axis + 1:]

    def f(*i):
        return fn(x(*(i[:axis] + (k.var,) + i[axis:])), axis=k)
    return make(out, f, name=name, tag=_tag.COMM_REDUCE)


def _drop(i, axis):
    return i[:axis] + i[axis + 1:]


def softmax(x, axis=-1):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``."""
    op = "nn.softmax"
    check_tensor(op, "x", x, float_only=True)
    ax = normalize_axis(op, x.ndim, axis)
    n = const_tuple(x.shape)[ax]
    k1 = te.reduce_axis((0, n), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")
    mx = _reduced(x, ax, k1, te.max, "T_softmax_maxelem")
    ex = make(x.shape, lambda *i: _op.exp(x(*i) - mx(*_drop(i, ax))), name="T_softmax_exp",
              tag="softmax_exp")
    es = _reduced(ex, ax, k2, te.sum, "T_softmax_expsum")
    return make(x.shape, lambda *i: ex(*i) / es(*_drop(i, ax)), name="T_softmax_norm",
                tag=_tag.SOFTMAX, axis=ax)


def log_softmax(x, axis=-1):
    """``x - max - log(sum(exp(x - max)))`` along ``axis``."""
    op = "nn.log_softmax"
    check_tensor(op, "x", x, float_only=True)
    ax = normalize_axis(op, x.ndim, axis)
    n = const_tuple(x.shape)[ax]
    k1 = te.reduce_axis((0, n), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")
    mx = _reduced(x, ax, k1, te.max, "T_softmax_maxelem")
    shape = const_tuple(x.shape)

    def fsum(*i):
        idx = i[:ax] + (k2.var,) + i[ax:]
        return te.sum(_op.exp(x(*idx) - mx(*i)), axis=k2)
    es = make(shape[:ax] + shape[ax + 1:], fsum, name="T_softmax_expsum", tag=_tag.COMM_REDUCE)
    return make(x.shape, lambda *i: x(*i) - mx(*_drop(i, ax)) - _op.log(es(*_drop(i, ax))),
                name="T_log_softmax", tag=_tag.LOG_SOFTMAX, axis=ax)
