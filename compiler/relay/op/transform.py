"""Shape operators (TVM's ``relay.op.transform``): reshape, transpose, squeeze,
expand_dims, concatenate, split, strided_slice, take.  All are injective.

``reshape`` accepts TVM's special values: 0 copies the input dimension at that position,
-1 infers one dimension from the rest; the relation resolves them, and the compute and
the reference use the resolved shape.
"""
from __future__ import annotations

import numpy as np

from ... import topi
from ...topi import tag as T
from ..errors import RelayTypeError
from ..expr import Tuple
from ..ty import TensorType, TupleType
from . import attrs as A
from .common import TupleWrapper, call, int_tuple, tensor_arg, topi_rel
from .registry import register_op


# ------------------------------------------------------------------ reshape
def resolve_newshape(src: tuple, newshape: tuple) -> tuple:
    out, infer = [], None
    for k, d in enumerate(newshape):
        if d == 0:
            if k >= len(src):
                raise RelayTypeError(f"reshape: newshape {newshape} copies dimension {k} (0) "
                                     f"but the input {src} has only {len(src)} dimensions")
            out.append(src[k])
        elif d == -1:
            if infer is not None:
                raise RelayTypeError(f"reshape: newshape {newshape} has more than one -1")
            infer = len(out)
            out.append(1)
        elif d > 0:
            out.append(d)
        else:
            raise RelayTypeError(f"reshape: newshape {newshape} has an unsupported value {d}; "
                                 "expected positive sizes, 0 (copy) or -1 (infer)")
    total = int(np.prod(src, dtype=np.int64))
    known = int(np.prod(out, dtype=np.int64))
    if infer is not None:
        if known == 0 or total % known:
            raise RelayTypeError(f"reshape: cannot infer -1 in {newshape} for input {src} "
                                 f"({total} elements)")
        out[infer] = total // known
    if int(np.prod(out, dtype=np.int64)) != total:
        raise RelayTypeError(f"reshape: newshape {newshape} -> {tuple(out)} has "
                             f"{int(np.prod(out, dtype=np.int64))} elements, the input {src} "
                             f"has {total}")
    return tuple(out)


def _reshape_rel(arg_types, attrs):
    t = tensor_arg("reshape", "data", arg_types[0])
    return TensorType(resolve_newshape(t.shape, attrs.newshape), t.dtype)


register_op("reshape", 1, _reshape_rel, T.INJECTIVE,
            lambda ins, a, ty: topi.reshape(ins[0], ty.shape),
            lambda x, attrs: x.reshape(resolve_newshape(x.shape, attrs.newshape)),
            A.ReshapeAttrs)


def reshape(data, newshape):
    return call("reshape", [data], A.ReshapeAttrs(int_tuple(newshape, "reshape newshape")))


# ------------------------------------------------------------------ simple injective ops
register_op("transpose", 1, topi_rel("transpose", lambda x, a: topi.transpose(x[0], a.axes)),
            T.INJECTIVE, lambda ins, a, ty: topi.transpose(ins[0], a.axes),
            lambda x, attrs: np.transpose(x, attrs.axes).copy(), A.TransposeAttrs)


def transpose(data, axes=None):
    return call("transpose", [data], A.TransposeAttrs(
        None if axes is None else int_tuple(axes, "transpose axes")))


register_op("squeeze", 1, topi_rel("squeeze", lambda x, a: topi.squeeze(x[0], a.axis)),
            T.INJECTIVE, lambda ins, a, ty: topi.squeeze(ins[0], a.axis),
            lambda x, attrs: np.squeeze(x, attrs.axis).copy(), A.SqueezeAttrs)


def squeeze(data, axis=None):
    return call("squeeze", [data], A.SqueezeAttrs(
        None if axis is None else int_tuple(axis, "squeeze axis")))


def _expand(x, a):
    return topi.expand_dims(x, a.axis, a.num_newaxis)


def _expand_ref(x, attrs):
    axis = attrs.axis if attrs.axis >= 0 else attrs.axis + x.ndim + 1
    return x.reshape(x.shape[:axis] + (1,) * attrs.num_newaxis + x.shape[axis:])


register_op("expand_dims", 1, topi_rel("expand_dims", lambda x, a: _expand(x[0], a)),
            T.INJECTIVE, lambda ins, a, ty: _expand(ins[0], a), _expand_ref, A.ExpandDimsAttrs)


def expand_dims(data, axis, num_newaxis=1):
    return call("expand_dims", [data], A.ExpandDimsAttrs(int(axis), int(num_newaxis)))


# ------------------------------------------------------------------ tuples in or out
def _concat_rel(arg_types, attrs):
    t = arg_types[0]
    if not isinstance(t, TupleType) or not t.fields:
        raise RelayTypeError(f"concatenate: argument has type {t}; expected a non-empty tuple")
    return _concat_topi_rel((t,), attrs)


_concat_topi_rel = topi_rel("concatenate", lambda x, a: topi.concatenate(x[0], a.axis))


register_op("concatenate", 1, _concat_rel, T.INJECTIVE,
            lambda ins, a, ty: topi.concatenate(ins[0], a.axis),
            lambda xs, attrs: np.concatenate(xs, axis=attrs.axis), A.ConcatenateAttrs)


def concatenate(data, axis=0):
    data = data if isinstance(data, Tuple) else Tuple(list(data))
    return call("concatenate", [data], A.ConcatenateAttrs(int(axis)))


def _split(x, a):
    return topi.split(x, a.indices_or_sections, a.axis)


def _split_ref(x, attrs):
    ios = attrs.indices_or_sections
    return tuple(np.split(x, ios if isinstance(ios, int) else list(ios), axis=attrs.axis))


register_op("split", 1, topi_rel("split", lambda x, a: _split(x[0], a)), T.INJECTIVE,
            lambda ins, a, ty: _split(ins[0], a), _split_ref, A.SplitAttrs)


def split(data, indices_or_sections, axis=0) -> TupleWrapper:
    ios = indices_or_sections if isinstance(indices_or_sections, int) else \
        int_tuple(indices_or_sections, "split indices")
    n = ios if isinstance(ios, int) else len(ios) + 1
    return TupleWrapper(call("split", [data], A.SplitAttrs(ios, int(axis))), n)


# ------------------------------------------------------------------ slicing and gathering
def _slice(x, a):
    return topi.strided_slice(x, a.begin, a.end, a.strides, a.axes, a.slice_mode)


def _slice_ref(x, attrs):
    n = x.ndim
    axes = list(attrs.axes) if attrs.axes is not None else list(range(len(attrs.begin)))
    strides = list(attrs.strides) if attrs.strides else [1] * len(axes)
    if len(strides) == 1 and len(axes) > 1:
        strides = strides * len(axes)
    sl = [slice(None)] * n
    for k, ax in enumerate(axes):
        b, e = attrs.begin[k], attrs.end[k] if k < len(attrs.end) else None
        s = strides[k] if k < len(strides) else 1
        if attrs.slice_mode == "size":
            e = None if e is None or e < 0 else b + e
            s = 1
        sl[ax % n] = slice(b, e, s)
    return x[tuple(sl)].copy()


register_op("strided_slice", 1, topi_rel("strided_slice", lambda x, a: _slice(x[0], a)),
            T.INJECTIVE, lambda ins, a, ty: _slice(ins[0], a), _slice_ref, A.StridedSliceAttrs)


def strided_slice(data, begin, end, strides=None, axes=None, slice_mode="end"):
    return call("strided_slice", [data], A.StridedSliceAttrs(
        int_tuple(begin, "strided_slice begin"), int_tuple(end, "strided_slice end"),
        None if strides is None else int_tuple(strides, "strided_slice strides"),
        None if axes is None else int_tuple(axes, "strided_slice axes"), slice_mode))


def _take(x, idx, a):
    return topi.take(x, idx, a.axis, a.batch_dims, a.mode)


def _take_ref(x, idx, attrs):
    if attrs.axis is None:
        flat = x.reshape(-1)
        return flat[np.clip(idx, 0, flat.size - 1) if attrs.mode == "clip"
                    else np.mod(idx, flat.size)]
    n = x.shape[attrs.axis]
    i = np.clip(idx, 0, n - 1) if attrs.mode == "clip" else np.mod(idx, n)
    return np.take(x, i.astype(np.int64), axis=attrs.axis)


register_op("take", 2, topi_rel("take", lambda x, a: _take(x[0], x[1], a)), T.INJECTIVE,
            lambda ins, a, ty: _take(ins[0], ins[1], a), _take_ref, A.TakeAttrs)


def take(data, indices, axis=None, batch_dims=0, mode="clip"):
    return call("take", [data, indices], A.TakeAttrs(None if axis is None else int(axis),
                                                      int(batch_dims), mode))


# ------------------------------------------------------------------ broadcast_to
register_op("broadcast_to", 1,
            topi_rel("broadcast_to", lambda x, a: topi.broadcast_to(x[0], a.shape)),
            T.BROADCAST, lambda ins, a, ty: topi.broadcast_to(ins[0], a.shape),
            lambda x, attrs: np.broadcast_to(x, attrs.shape).copy(), A.BroadcastToAttrs)


def broadcast_to(data, shape):
    return call("broadcast_to", [data], A.BroadcastToAttrs(int_tuple(shape, "broadcast_to "
                                                                             "shape")))
