"""Shape-changing injective operators: reshape, transpose, expand_dims, squeeze, flatten,
concatenate, stack, split (TVM's ``topi.transform``).

Invariants: every result is a ComputeOp tagged "injective" that only moves data (no
arithmetic on values); each output element reads exactly one input element, so schedules
may inline these ops anywhere.  Index arithmetic uses floordiv/floormod, which the
simplifier removes when the shapes make them trivial.  Argument errors are TEErrors naming
the op, the argument and what was expected.
"""
from __future__ import annotations

from ..tir import op as _op
from . import tag as _tag
from .utils import (
    check_tensor,
    const_int,
    const_tuple,
    error,
    make,
    normalize_axes,
    normalize_axis,
    prod,
    ravel_index,
    unravel_index,
)


def reshape(a, newshape):
    """``a`` with shape ``newshape`` (one entry may be -1), row-major order kept."""
    op = "topi.reshape"
    check_tensor(op, "a", a)
    src = const_tuple(a.shape)
    try:
        items = [const_int(s) for s in (newshape if isinstance(newshape, (list, tuple))
                                         else (newshape,))]
    except Exception:
        raise error(op, "newshape", newshape, "a tuple of ints") from None
    if items.count(-1) > 1 or any(s < -1 for s in items):
        raise error(op, "newshape", newshape, "non-negative extents with at most one -1")
    known = prod(s for s in items if s != -1)
    if -1 in items:
        if known == 0 or prod(src) % known:
            raise error(op, "newshape", newshape, f"a shape whose size divides {prod(src)} "
                        f"(input shape {src})")
        items[items.index(-1)] = prod(src) // known
    if prod(items) != prod(src):
        raise error(op, "newshape", newshape, f"{prod(src)} elements like the input shape {src}")
    out = tuple(items)
    if out == src:
        return make(out, lambda *i: a(*i), name="T_reshape", tag=_tag.INJECTIVE)
    return make(out, lambda *i: a(*unravel_index(ravel_index(i, out), src)),
                name="T_reshape", tag=_tag.INJECTIVE)


def transpose(a, axes=None):
    """Permute the dimensions of ``a`` (reverse them when ``axes`` is None)."""
    op = "topi.transpose"
    check_tensor(op, "a", a)
    n = a.ndim
    if axes is None:
        perm = tuple(reversed(range(n)))
    else:
        if not isinstance(axes, (list, tuple)) or len(axes) != n:
            raise error(op, "axes", axes, f"a permutation of {n} axes")
        perm = tuple(normalize_axis(op, n, x, "axes") for x in axes)
        if sorted(perm) != list(range(n)):
            raise error(op, "axes", axes, f"a permutation of range({n})")
    src = const_tuple(a.shape)
    out = tuple(src[p] for p in perm)

    def f(*i):
        idx = [None] * n
        for k, p in enumerate(perm):
            idx[p] = i[k]
        return a(*idx)
    return make(out, f, name="T_transpose", tag=_tag.INJECTIVE)


def expand_dims(a, axis, num_newaxis=1):
    """Insert ``num_newaxis`` dimensions of extent 1 at ``axis`` (in [-ndim-1, ndim])."""
    op = "topi.expand_dims"
    check_tensor(op, "a", a)
    if not isinstance(num_newaxis, int) or num_newaxis < 0:
        raise error(op, "num_newaxis", num_newaxis, "an int >= 0")
    n = a.ndim
    ax = normalize_axis(op, n + 1, axis)
    src = const_tuple(a.shape)
    out = src[:ax] + (1,) * num_newaxis + src[ax:]
    return make(out, lambda *i: a(*(i[:ax] + i[ax + num_newaxis:])), name="T_expand_dims",
                tag=_tag.INJECTIVE)


def squeeze(a, axis=None):
    """Remove dimensions of extent 1 (all of them, or those in ``axis``)."""
    op = "topi.squeeze"
    check_tensor(op, "a", a)
    src = const_tuple(a.shape)
    if axis is None:
        drop = tuple(d for d, s in enumerate(src) if s == 1)
    else:
        drop = normalize_axes(op, len(src), axis)
        bad = [d for d in drop if src[d] != 1]
        if bad:
            raise error(op, "axis", axis, f"axes of extent 1 (input shape {src})")
    out = tuple(s for d, s in enumerate(src) if d not in drop)

    def f(*i):
        it = iter(i)
        return a(*[_op.const(0) if d in drop else next(it) for d in range(len(src))])
    return make(out, f, name="T_squeeze", tag=_tag.INJECTIVE)


def flatten(data):
    """Collapse all but the first dimension (TVM's ``nn.flatten``)."""
    check_tensor("topi.nn.flatten", "data", data)
    src = const_tuple(data.shape)
    if not src:
        raise error("topi.nn.flatten", "data", data, "a tensor with at least one dimension")
    return reshape(data, (src[0], prod(src[1:])))


def _check_same(op: str, tensors, axis: int):
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise error(op, "tensors", tensors, "a non-empty list of tensors")
    for k, t in enumerate(tensors):
        check_tensor(op, f"tensors[{k}]", t)
    first = tensors[0]
    s0 = const_tuple(first.shape)
    for k, t in enumerate(tensors[1:], 1):
        s = const_tuple(t.shape)
        if t.dtype != first.dtype:
            raise error(op, f"tensors[{k}]", t, f"dtype {first.dtype} like tensors[0]")
        if len(s) != len(s0) or any(x != y for d, (x, y) in enumerate(zip(s, s0)) if d != axis):
            raise error(op, f"tensors[{k}]", t, f"the shape of tensors[0] {s0} except along "
                        f"axis {axis}")


def concatenate(a_tuple, axis=0):
    """Join tensors along an existing axis."""
    op = "topi.concatenate"
    if not isinstance(a_tuple, (list, tuple)) or not a_tuple:
        raise error(op, "a_tuple", a_tuple, "a non-empty list of tensors")
    check_tensor(op, "a_tuple[0]", a_tuple[0])
    ax = normalize_axis(op, a_tuple[0].ndim, axis)
    _check_same(op, a_tuple, ax)
    sizes = [const_tuple(t.shape)[ax] for t in a_tuple]
    offsets = [sum(sizes[:k]) for k in range(len(sizes))]
    out = list(const_tuple(a_tuple[0].shape))
    out[ax] = sum(sizes)

    def f(*i):
        def read(k):
            idx = list(i)
            idx[ax] = i[ax] - offsets[k]
            return a_tuple[k](*idx)
        val = read(len(a_tuple) - 1)
        # if_then_else (not Select): only the taken branch reads, so no out-of-bounds load
        for k in range(len(a_tuple) - 2, -1, -1):
            val = _op.if_then_else(i[ax] < offsets[k] + sizes[k], read(k), val)
        return val
    return make(tuple(out), f, name="T_concat", tag=_tag.INJECTIVE)


def stack(tensors, axis=0):
    """Join same-shaped tensors along a new axis."""
    op = "topi.stack"
    _check_same(op, tensors, -1)
    ax = normalize_axis(op, tensors[0].ndim + 1, axis)
    src = const_tuple(tensors[0].shape)
    out = src[:ax] + (len(tensors),) + src[ax:]

    def f(*i):
        rest = i[:ax] + i[ax + 1:]
        val = tensors[-1](*rest)
        for k in range(len(tensors) - 2, -1, -1):
            val = _op.if_then_else(i[ax] <= k, tensors[k](*rest), val)
        return val
    return make(out, f, name="T_stack", tag=_tag.INJECTIVE)


def split(ary, indices_or_sections, axis=0):
    """Split ``ary`` along ``axis`` into equal sections or at the given indices."""
    op = "topi.split"
    check_tensor(op, "ary", ary)
    src = const_tuple(ary.shape)
    ax = normalize_axis(op, len(src), axis)
    n = src[ax]
    if isinstance(indices_or_sections, int) and not isinstance(indices_or_sections, bool):
        k = indices_or_sections
        if k < 1 or n % k:
            raise error(op, "indices_or_sections", k,
                        f"a number of sections >= 1 dividing the axis extent {n}")
        points = [n // k * j for j in range(1, k)]
    elif isinstance(indices_or_sections, (list, tuple)):
        points = [const_int(p) for p in indices_or_sections]
        if any(p < 0 or p > n for p in points) or points != sorted(points):
            raise error(op, "indices_or_sections", indices_or_sections,
                        f"increasing split points in [0, {n}]")
    else:
        raise error(op, "indices_or_sections", indices_or_sections,
                    "an int or a list of split points")
    bounds = [0] + points + [n]
    outs = []
    for lo, hi in zip(bounds, bounds[1:]):
        shape = src[:ax] + (hi - lo,) + src[ax + 1:]

        def f(*i, lo=lo):
            idx = list(i)
            idx[ax] = i[ax] + lo
            return ary(*idx)
        outs.append(make(shape, f, name="T_split", tag=_tag.INJECTIVE))
    return outs
