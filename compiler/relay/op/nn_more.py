"""More ``relay.nn`` operators: pooling, normalization, dropout, pad, batch_flatten,
sparse_dense, and ``relay.image.resize2d``."""
from __future__ import annotations

import numpy as np

from ... import topi
from ...topi import tag as T
from ..errors import RelayError
from . import attrs as A
from . import nn_ref
from .common import TupleWrapper, call, pair, quad, tensor_arg, topi_rel
from .registry import register_op


# ------------------------------------------------------------------ pooling
def _pool(kind):
    def build(ins, a):
        return topi.nn.pool2d(ins[0], a.pool_size, a.strides, a.dilation, a.padding, kind,
                              a.ceil_mode, a.layout, getattr(a, "count_include_pad", True))
    return build


for _kind, _attrs in (("max", A.MaxPool2DAttrs), ("avg", A.AvgPool2DAttrs)):
    register_op(f"nn.{_kind}_pool2d", 1, topi_rel(f"nn.{_kind}_pool2d", _pool(_kind)),
                T.OUT_ELEMWISE_FUSABLE, lambda ins, a, ty, _k=_kind: _pool(_k)(ins, a),
                lambda x, attrs, _k=_kind: nn_ref.pool2d(x, attrs, _k), _attrs)


def max_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0),
               layout="NCHW", out_layout="", ceil_mode=False):
    return call("nn.max_pool2d", [data], A.MaxPool2DAttrs(
        pair(pool_size, "pool_size"), pair(strides, "strides"), pair(dilation, "dilation"),
        quad(padding, "padding"), layout, out_layout, bool(ceil_mode)))


def avg_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0),
               layout="NCHW", out_layout="", ceil_mode=False, count_include_pad=False):
    return call("nn.avg_pool2d", [data], A.AvgPool2DAttrs(
        pair(pool_size, "pool_size"), pair(strides, "strides"), pair(dilation, "dilation"),
        quad(padding, "padding"), layout, out_layout, bool(ceil_mode), bool(count_include_pad)))


def _global(kind):
    def build(ins, a):
        return topi.nn.global_pool(ins[0], kind, a.layout)
    return build


for _kind in ("max", "avg"):
    register_op(f"nn.global_{_kind}_pool2d", 1,
                topi_rel(f"nn.global_{_kind}_pool2d", _global(_kind)), T.OUT_ELEMWISE_FUSABLE,
                lambda ins, a, ty, _k=_kind: _global(_k)(ins, a),
                lambda x, attrs, _k=_kind: nn_ref.adaptive_pool2d(x, (1, 1), attrs.layout, _k),
                A.GlobalPool2DAttrs)


def global_avg_pool2d(data, layout="NCHW", out_layout=""):
    return call("nn.global_avg_pool2d", [data], A.GlobalPool2DAttrs(layout, out_layout))


def global_max_pool2d(data, layout="NCHW", out_layout=""):
    return call("nn.global_max_pool2d", [data], A.GlobalPool2DAttrs(layout, out_layout))


def _adaptive(kind):
    def build(ins, a):
        size = a.output_size or (1, 1)
        return topi.nn.adaptive_pool(ins[0], size, kind, a.layout)
    return build


for _kind in ("max", "avg"):
    register_op(f"nn.adaptive_{_kind}_pool2d", 1,
                topi_rel(f"nn.adaptive_{_kind}_pool2d", _adaptive(_kind)),
                T.OUT_ELEMWISE_FUSABLE, lambda ins, a, ty, _k=_kind: _adaptive(_k)(ins, a),
                lambda x, attrs, _k=_kind: nn_ref.adaptive_pool2d(
                    x, attrs.output_size or (1, 1), attrs.layout, _k), A.AdaptivePool2DAttrs)


def adaptive_avg_pool2d(data, output_size=None, layout="NCHW", out_layout=""):
    size = None if output_size is None else pair(output_size, "output_size")
    return call("nn.adaptive_avg_pool2d", [data], A.AdaptivePool2DAttrs(size, layout, out_layout))


def adaptive_max_pool2d(data, output_size=None, layout="NCHW", out_layout=""):
    size = None if output_size is None else pair(output_size, "output_size")
    return call("nn.adaptive_max_pool2d", [data], A.AdaptivePool2DAttrs(size, layout, out_layout))


# ------------------------------------------------------------------ normalization
def _bn(ins, a):
    x, g, b, m, v = ins
    return topi.nn.batch_norm(x, g, b, m, v, a.axis, a.epsilon, a.center, a.scale)


register_op("nn.batch_norm", 5, topi_rel("nn.batch_norm", _bn), T.OPAQUE,
            lambda ins, a, ty: _bn(ins, a),
            lambda x, g, b, m, v, attrs: nn_ref.batch_norm(x, g, b, m, v, attrs),
            A.BatchNormAttrs)


def batch_norm(data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5, center=True,
               scale=True) -> TupleWrapper:
    c = call("nn.batch_norm", [data, gamma, beta, moving_mean, moving_var],
             A.BatchNormAttrs(int(axis), float(epsilon), bool(center), bool(scale)))
    return TupleWrapper(c, 3)


def _ln(ins, a):
    return topi.nn.layer_norm(ins[0], ins[1] if a.scale else None,
                              ins[2] if a.center else None, a.axis, a.epsilon)


register_op("nn.layer_norm", 3, topi_rel("nn.layer_norm", _ln), T.OPAQUE,
            lambda ins, a, ty: _ln(ins, a),
            lambda x, g, b, attrs: nn_ref.layer_norm(x, g, b, attrs), A.LayerNormAttrs)


def layer_norm(data, gamma, beta, axis=-1, epsilon=1e-5, center=True, scale=True):
    return call("nn.layer_norm", [data, gamma, beta],
                A.LayerNormAttrs(int(axis), float(epsilon), bool(center), bool(scale)))


# ------------------------------------------------------------------ dropout, pad, flatten
def _dropout_rel(arg_types, a):
    return tensor_arg("nn.dropout", "data", arg_types[0])


register_op("nn.dropout", 1, _dropout_rel, T.ELEMWISE,
            lambda ins, a, ty: topi.identity(ins[0]), lambda x, attrs: x.copy(), A.DropoutAttrs)


def dropout(data, rate=0.5):
    """Inference dropout: the identity (SimplifyInference removes it)."""
    return call("nn.dropout", [data], A.DropoutAttrs(float(rate)))


def _pad(ins, a):
    before = [p[0] for p in a.pad_width]
    after = [p[1] for p in a.pad_width]
    if a.pad_mode == "constant":
        return topi.nn.pad(ins[0], before, after, a.pad_value)
    return topi.nn.mirror_pad(ins[0], before, after, a.pad_mode)


def _pad_ref(x, attrs):
    if attrs.pad_mode != "constant":
        return np.pad(x, attrs.pad_width, mode=attrs.pad_mode)
    return np.pad(x, attrs.pad_width, constant_values=attrs.pad_value).astype(x.dtype)


register_op("nn.pad", 1, topi_rel("nn.pad", _pad), T.INJECTIVE, lambda ins, a, ty: _pad(ins, a),
            _pad_ref, A.PadAttrs)


def pad(data, pad_width, pad_value=0.0, pad_mode="constant"):
    width = tuple(tuple(int(v) for v in p) for p in pad_width)
    if any(len(p) != 2 for p in width):
        raise RelayError(f"nn.pad: pad_width {pad_width!r} must be pairs (before, after)")
    if pad_mode not in ("constant", "edge", "reflect", "wrap"):
        raise RelayError(f"nn.pad: pad_mode {pad_mode!r}; expected 'constant', 'edge', "
                         "'reflect' or 'wrap'")
    return call("nn.pad", [data], A.PadAttrs(width, pad_mode, float(pad_value)))


register_op("nn.batch_flatten", 1, topi_rel("nn.batch_flatten", lambda x, a: topi.nn.flatten(x[0])),
            T.INJECTIVE, lambda ins, a, ty: topi.nn.flatten(ins[0]),
            lambda x, attrs=None: x.reshape(x.shape[0], -1))


def batch_flatten(data):
    return call("nn.batch_flatten", [data])


# ------------------------------------------------------------------ image.resize2d
def _resize(ins, a):
    return topi.image.resize2d(ins[0], a.roi, a.size, a.layout, a.method,
                               a.coordinate_transformation_mode, a.rounding_method,
                               a.cubic_alpha, a.cubic_exclude, a.extrapolation_value,
                               a.out_dtype or None)


register_op("image.resize2d", 1, topi_rel("image.resize2d", _resize), T.INJECTIVE,
            lambda ins, a, ty: _resize(ins, a), lambda x, attrs: nn_ref.resize2d(x, attrs),
            A.Resize2DAttrs)


def resize2d(data, size, roi=None, layout="NCHW", method="linear",
             coordinate_transformation_mode="half_pixel", rounding_method="", cubic_alpha=-0.5,
             cubic_exclude=0, extrapolation_value=0.0, out_dtype=""):
    return call("image.resize2d", [data], A.Resize2DAttrs(
        pair(size, "resize2d size"), tuple(float(v) for v in (roi or (0.0,) * 4)), layout,
        method, coordinate_transformation_mode, rounding_method, float(cubic_alpha),
        int(cubic_exclude), float(extrapolation_value), out_dtype))


__all__ = ["max_pool2d", "avg_pool2d", "global_avg_pool2d", "global_max_pool2d",
           "adaptive_avg_pool2d", "adaptive_max_pool2d", "batch_norm", "layer_norm",
           "dropout", "pad", "batch_flatten", "resize2d"]


# ------------------------------------------------------------------ sparse_dense
def _sparse_dense(ins, a):
    return topi.nn.sparse_dense(ins[0], ins[1], ins[2], ins[3], a.sparse_lhs)


register_op("nn.sparse_dense", 4, topi_rel("nn.sparse_dense", _sparse_dense),
            T.OUT_ELEMWISE_FUSABLE, lambda ins, a, ty: _sparse_dense(ins, a),
            nn_ref.sparse_dense, A.SparseDenseAttrs, tunable=True)


def _sparse_conv2d(ins, a):
    return topi.nn.sparse_conv2d(ins[0], ins[1], ins[2], ins[3], a.layout, a.kernel_size[0])


register_op("nn.sparse_conv2d", 4, topi_rel("nn.sparse_conv2d", _sparse_conv2d),
            T.OUT_ELEMWISE_FUSABLE, lambda ins, a, ty: _sparse_conv2d(ins, a),
            nn_ref.sparse_conv2d, A.SparseConv2DAttrs, tunable=True)


def _bsr_parts(op: str, sparse_mat) -> tuple:
    """``(data, indices, indptr)`` of a tuple or an object with those attributes."""
    if all(hasattr(sparse_mat, f) for f in ("data", "indices", "indptr")):
        return (sparse_mat.data, sparse_mat.indices, sparse_mat.indptr)
    try:
        parts = tuple(sparse_mat)
    except TypeError:
        parts = ()
    if len(parts) != 3:
        raise RelayError(f"{op}: sparse_mat {sparse_mat!r:.100} must be "
                         "(data, indices, indptr)")
    return parts


def sparse_conv2d(dense_data, weights, layout="NHWC", kernel_size=1):
    """TVM's ``relay.nn.sparse_conv2d``: a 1x1 convolution (stride 1, no padding) of
    ``dense_data`` (NHWC or NCHW) with the ``out_channels x in_channels`` weight in BSR
    form, ``weights`` = ``(data, indices, indptr)`` (data ``(blocks, bs_r, bs_c)``, or
    ``(blocks, bs_r)`` for one-column blocks).  ``kernel_size=3``: a 3x3 convolution
    (stride 1, padding 1) with the ``out_channels x 9*in_channels`` weight (3-D data),
    columns in the HWIO (NHWC) or OIHW (NCHW) kernel's order (``topi.nn.sparse_conv3x3``)."""
    ks = tuple(int(k) for k in kernel_size) if isinstance(kernel_size, (tuple, list)) else \
        (int(kernel_size),) * 2
    return call("nn.sparse_conv2d", [dense_data, *_bsr_parts("nn.sparse_conv2d", weights)],
                A.SparseConv2DAttrs(str(layout), ks))


def sparse_dense(dense_mat, sparse_mat, sparse_lhs=False):
    """TVM's ``relay.nn.sparse_dense``: ``dense_mat @ W.T`` (``W @ dense_mat.T`` with
    ``sparse_lhs``) for ``sparse_mat`` = W as ``(data, indices, indptr)``, a tuple or an
    object with those attributes (scipy's CSR/BSR layout: 1-D data for CSR, 3-D for
    BSR).  Its reduce loop's extent is read from ``indptr`` when the kernel runs."""
    parts = _bsr_parts("nn.sparse_dense", sparse_mat)
    return call("nn.sparse_dense", [dense_mat, *parts], A.SparseDenseAttrs(bool(sparse_lhs)))
