"""Shared helpers of the operator library: argument checking, shapes and index math.

Invariants: every check raises ``TEError`` through ``error``, whose message names the
operator, the argument, the bad value and what was expected.  Shapes handled here are
static: ``const_tuple`` turns a tensor shape into plain Python ints.  ``make`` is the one
place topi creates ComputeOps, so every op gets its tag and ``attrs["pattern"]``.
"""
from __future__ import annotations

from ..errors import TEError
from ..te import api as te_api
from ..te.tensor import Tensor
from ..tir import dtype as dt
from ..tir import expr as E
from ..tir import op as _op
from . import tag as _tag


def error(op: str, arg: str, value, expected: str) -> TEError:
    """A TEError such as ``nn.dense: argument weight=(3, 5) is invalid; expected ...``."""
    return TEError(f"{op}: argument {arg}={_show(value)} is invalid; expected {expected}")


def _show(value) -> str:
    if isinstance(value, Tensor):
        return f"Tensor(shape={const_tuple(value.shape)}, dtype={value.dtype})"
    return repr(value)


def const_int(x) -> int:
    """A static extent or Python int as an int."""
    if isinstance(x, E.IntImm):
        return x.value
    if isinstance(x, bool):
        raise TEError(f"expected a constant integer, got bool {x!r}")
    if isinstance(x, int) or hasattr(x, "__index__"):
        return int(x)
    raise TEError(f"expected a constant integer, got {x!r}")


def const_tuple(shape) -> tuple:
    return tuple(const_int(s) for s in shape)


def check_tensor(op: str, arg: str, x, ndim=None, float_only: bool = False) -> Tensor:
    """``x`` must be a Tensor (with ``ndim`` dims, an int or a tuple of allowed counts)."""
    if not isinstance(x, Tensor):
        raise error(op, arg, x, "a te.Tensor")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if x.ndim not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise error(op, arg, x, f"a {want}-D tensor")
    if float_only and not dt.is_float(x.dtype):
        raise error(op, arg, x, "a floating-point tensor")
    return x


def int_tuple(op: str, arg: str, value, n: int, minimum=None) -> tuple:
    """An int or a length-``n`` sequence of ints, as an ``n``-tuple (checked >= minimum)."""
    if isinstance(value, E.IntImm):
        value = value.value
    if isinstance(value, int) and not isinstance(value, bool):
        out = (value,) * n
    elif isinstance(value, (list, tuple)) and len(value) == n:
        try:
            out = tuple(const_int(v) for v in value)
        except TEError:
            raise error(op, arg, value, f"an int or a tuple of {n} ints") from None
    else:
        raise error(op, arg, value, f"an int or a tuple of {n} ints")
    if minimum is not None and any(v < minimum for v in out):
        raise error(op, arg, value, f"values >= {minimum}")
    return out


def normalize_axis(op: str, ndim: int, axis, arg: str = "axis") -> int:
    """A possibly negative axis as an index in ``[0, ndim)``."""
    if isinstance(axis, E.IntImm):
        axis = axis.value
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise error(op, arg, axis, "an int")
    if not -ndim <= axis < ndim:
        raise error(op, arg, axis, f"an axis in [{-ndim}, {ndim}) for a {ndim}-D tensor")
    return axis + ndim if axis < 0 else axis


def normalize_axes(op: str, ndim: int, axis, arg: str = "axis") -> tuple:
    """None (all axes), an int or a sequence of ints -> sorted distinct axes."""
    if axis is None:
        return tuple(range(ndim))
    items = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    out = [normalize_axis(op, ndim, a, arg) for a in items]
    if len(set(out)) != len(out):
        raise error(op, arg, axis, "distinct axes")
    return tuple(sorted(out))


def ravel_index(indices, shape) -> E.PrimExpr:
    """Row-major flat index of ``indices`` in ``shape``."""
    idx = _op.const(0)
    for i, s in zip(indices, shape):
        idx = idx * const_int(s) + i
    return idx


def unravel_index(idx, shape) -> list:
    """Row-major multi-index of flat ``idx`` in ``shape`` (innermost last)."""
    out = []
    for s in reversed([const_int(s) for s in shape]):
        out.append(_op.floormod(idx, s) if s != 1 else _op.const(0))
        idx = _op.floordiv(idx, s)
    return out[::-1]


def prod(values) -> int:
    p = 1
    for v in values:
        p *= const_int(v)
    return p


def make(shape, fcompute, name: str, tag: str, **attrs):
    """``te.compute`` with ``tag`` and ``attrs={"pattern": kind, **attrs}``."""
    return te_api.compute(shape, fcompute, name=name, tag=tag,
                          attrs=_tag.attrs_for(tag, **attrs))


def check_dtype(op: str, arg: str, dtype) -> str | None:
    if dtype is None:
        return None
    try:
        dt.parse(dtype)
    except (ValueError, TEError):
        raise error(op, arg, dtype, "a dtype string such as 'float32' or 'int32'") from None
    return dtype
