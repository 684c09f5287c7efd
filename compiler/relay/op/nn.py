"""Neural-network operators (TVM's ``relay.nn`` and ``relay.image``).

Convolution, dense and batch_matmul are the tunable anchors; pooling is
out_elemwise_fusable; softmax, log_softmax and layer_norm are opaque; batch_norm and
dropout are removed by SimplifyInference before lowering (they still compute, for the
interpreter and for graphs built without it).
"""
from __future__ import annotations

import re

import numpy as np

from ... import topi
from ...topi import tag as T
from ..errors import RelayError, RelayTypeError
from ..ty import TensorType
from . import attrs as A
from . import nn_ref
from .common import call, pair, quad, tensor_arg, topi_rel
from .registry import register_op


def _out_dtype(a):
    return a.out_dtype or None


# ------------------------------------------------------------------ convolution
def _conv(ins, a):
    return topi.nn.conv2d(ins[0], ins[1], a.strides, a.padding, a.dilation, a.data_layout,
                          a.kernel_layout, _out_dtype(a), a.groups)


def _conv_rel(arg_types, a):
    data = tensor_arg("nn.conv2d", "data", arg_types[0])
    weight = tensor_arg("nn.conv2d", "weight", arg_types[1])
    w_ndim = 5 if topi.nn.packed_lanes(a.kernel_layout) else 4
    if data.ndim != 4 or weight.ndim != w_ndim:
        raise RelayTypeError(f"nn.conv2d: data {data} must be 4-D and weight {weight} "
                             f"{w_ndim}-D (kernel layout {a.kernel_layout})")
    cin = data.shape[1] if a.data_layout == "NCHW" else data.shape[3]
    wci = weight.shape[2] if a.kernel_layout == "HWIO" else weight.shape[1]
    if wci * a.groups != cin:
        raise RelayTypeError(f"nn.conv2d: weight has {wci} input channels per group x "
                             f"{a.groups} groups, data has {cin} (data {data.shape}, weight "
                             f"{weight.shape}, layouts {a.data_layout}/{a.kernel_layout})")
    return _conv_topi_rel(arg_types, a)


_conv_topi_rel = topi_rel("nn.conv2d", _conv)
register_op("nn.conv2d", 2, _conv_rel, T.OUT_ELEMWISE_FUSABLE,
            lambda ins, a, ty: _conv(ins, a), lambda x, w, attrs: nn_ref.conv2d(x, w, attrs),
            A.Conv2DAttrs, tunable=True)


def conv2d(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
           channels=None, kernel_size=None, data_layout="NCHW", kernel_layout="",
           out_layout="", out_dtype=""):
    if data_layout not in ("NCHW", "NHWC"):
        raise RelayError(f"nn.conv2d: data_layout {data_layout!r}; expected 'NCHW' or 'NHWC'")
    kernel_layout = kernel_layout or ("OIHW" if data_layout == "NCHW" else "HWIO")
    attrs = A.Conv2DAttrs(pair(strides, "nn.conv2d strides"), quad(padding, "nn.conv2d padding"),
                          pair(dilation, "nn.conv2d dilation"), int(groups),
                          None if channels is None else int(channels),
                          None if kernel_size is None else pair(kernel_size, "kernel_size"),
                          data_layout, kernel_layout, out_layout, out_dtype)
    return call("nn.conv2d", [data, weight], attrs)


def _conv_t(ins, a):
    if a.groups != 1 or a.dilation != (1, 1) or a.data_layout != "NCHW":
        raise RelayTypeError(f"nn.conv2d_transpose: groups {a.groups}, dilation {a.dilation}, "
                             f"layout {a.data_layout}; only groups 1, dilation 1, NCHW/IOHW "
                             "are supported")
    return topi.nn.conv2d_transpose_nchw(ins[0], ins[1], a.strides, a.padding, _out_dtype(a),
                                         a.output_padding)


register_op("nn.conv2d_transpose", 2, topi_rel("nn.conv2d_transpose", _conv_t),
            T.OUT_ELEMWISE_FUSABLE, lambda ins, a, ty: _conv_t(ins, a),
            lambda x, w, attrs: nn_ref.conv2d_transpose(x, w, attrs), A.Conv2DTransposeAttrs,
            tunable=True)


def conv2d_transpose(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                     channels=None, kernel_size=None, data_layout="NCHW", kernel_layout="IOHW",
                     out_layout="", output_padding=(0, 0), out_dtype=""):
    attrs = A.Conv2DTransposeAttrs(
        pair(strides, "strides"), quad(padding, "padding"), pair(dilation, "dilation"),
        int(groups), None if channels is None else int(channels),
        None if kernel_size is None else pair(kernel_size, "kernel_size"), data_layout,
        kernel_layout, out_layout, pair(output_padding, "output_padding"), out_dtype)
    return call("nn.conv2d_transpose", [data, weight], attrs)


def _conv3d_t(ins, a):
    if a.groups != 1 or a.dilation != (1, 1, 1) or a.data_layout != "NCDHW" or \
            a.kernel_layout != "IODHW":
        raise RelayTypeError(f"nn.conv3d_transpose: groups {a.groups}, dilation {a.dilation}, "
                             f"layouts {a.data_layout}/{a.kernel_layout}; only groups 1, "
                             "dilation 1, NCDHW/IODHW are supported")
    return topi.nn.conv3d_transpose_ncdhw(ins[0], ins[1], a.strides, a.padding, _out_dtype(a),
                                          a.output_padding)


# no x86 strategy: the default schedule runs it
register_op("nn.conv3d_transpose", 2, topi_rel("nn.conv3d_transpose", _conv3d_t),
            T.OUT_ELEMWISE_FUSABLE, lambda ins, a, ty: _conv3d_t(ins, a),
            lambda x, w, attrs: nn_ref.conv3d_transpose(x, w, attrs), A.Conv3DTransposeAttrs)


def _triple(v, what: str, n: int = 3) -> tuple:
    t = (int(v),) * n if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) == 3 and n == 6:
        t = t + t
    if len(t) != n:
        raise RelayError(f"nn.conv3d_transpose: {what} {v!r}; expected an int or {n} ints")
    return t


def conv3d_transpose(data, weight, strides=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1),
                     groups=1, channels=None, kernel_size=None, data_layout="NCDHW",
                     kernel_layout="IODHW", out_layout="", output_padding=(0, 0, 0),
                     out_dtype=""):
    """TVM's ``relay.nn.conv3d_transpose``; ``padding`` is 3 symmetric values or
    (front, top, left, back, bottom, right)."""
    attrs = A.Conv3DTransposeAttrs(
        _triple(strides, "strides"), _triple(padding, "padding", 6),
        _triple(dilation, "dilation"), int(groups), None if channels is None else int(channels),
        None if kernel_size is None else _triple(kernel_size, "kernel_size"), data_layout,
        kernel_layout, out_layout, _triple(output_padding, "output_padding"), out_dtype)
    return call("nn.conv3d_transpose", [data, weight], attrs)


# ------------------------------------------------------------------ dense, batch_matmul
def _dense_rel(arg_types, a):
    data = tensor_arg("nn.dense", "data", arg_types[0])
    weight = tensor_arg("nn.dense", "weight", arg_types[1])
    if weight.ndim != 2 or data.ndim < 1:
        raise RelayTypeError(f"nn.dense: weight {weight} must be 2-D (units, in_features)")
    if data.shape[-1] != weight.shape[1]:
        raise RelayTypeError(f"nn.dense: weight has {weight.shape[1]} input features, data has "
                             f"{data.shape[-1]} (data {data.shape}, weight {weight.shape})")
    if a.units is not None and a.units != weight.shape[0]:
        raise RelayTypeError(f"nn.dense: units={a.units} but weight has {weight.shape[0]} rows "
                             f"(weight {weight.shape})")
    return TensorType(data.shape[:-1] + (weight.shape[0],), a.out_dtype or data.dtype)


def _rows_of(product, ins, a, ty):
    """``product(x, weight)`` over data of any rank: (..., K) -> (M, K) -> (..., N)."""
    x = ins[0]
    if x.ndim == 2:
        return product(x, ins[1], out_dtype=_out_dtype(a))
    x = topi.reshape(x, (-1, int(x.shape[-1].value)))
    return topi.reshape(product(x, ins[1], out_dtype=_out_dtype(a)), ty.shape)


def _dense(ins, a, ty):
    return _rows_of(topi.nn.dense, ins, a, ty)


def _dense_ref(x, w, attrs):
    out = x.astype(np.float64) @ w.astype(np.float64).T
    return out.astype(attrs.out_dtype or x.dtype)


register_op("nn.dense", 2, _dense_rel, T.OUT_ELEMWISE_FUSABLE, _dense, _dense_ref,
            A.DenseAttrs, tunable=True)


def dense(data, weight, units=None, out_dtype=""):
    return call("nn.dense", [data, weight], A.DenseAttrs(None if units is None else int(units),
                                                         out_dtype))


def _dense_pack_lanes(op: str, weight_layout: str) -> int:
    m = re.fullmatch(r"NC([1-9][0-9]*)n", weight_layout)
    if m is None:
        raise RelayTypeError(f"{op}: weight_layout {weight_layout!r}; expected 'NC{{nr}}n' "
                             "(e.g. 'NC16n': the weight packed as (units/nr, in_dim, nr))")
    return int(m[1])


def _dense_pack_rel(arg_types, a):
    op = "nn.contrib_dense_pack"
    data = tensor_arg(op, "data", arg_types[0])
    weight = tensor_arg(op, "weight", arg_types[1])
    nr = _dense_pack_lanes(op, a.weight_layout)
    if weight.ndim != 3 or weight.shape[2] != nr or data.ndim < 1:
        raise RelayTypeError(f"{op}: weight {weight} must be 3-D (units/{nr}, in_dim, {nr}) "
                             f"for weight_layout {a.weight_layout!r}")
    if data.shape[-1] != weight.shape[1]:
        raise RelayTypeError(f"{op}: weight has {weight.shape[1]} input features, data has "
                             f"{data.shape[-1]} (data {data.shape}, weight {weight.shape})")
    units = weight.shape[0] * nr
    if a.units is not None and a.units != units:
        raise RelayTypeError(f"{op}: units={a.units} but the packed weight {weight.shape} "
                             f"holds {units}")
    return TensorType(data.shape[:-1] + (units,), a.out_dtype or data.dtype)


def _dense_pack(ins, a, ty):
    return _rows_of(topi.nn.dense_pack, ins, a, ty)


def _dense_pack_ref(x, w, attrs):
    nb, k, nr = w.shape
    return _dense_ref(x, w.transpose(0, 2, 1).reshape(nb * nr, k), attrs)


register_op("nn.contrib_dense_pack", 2, _dense_pack_rel, T.OUT_ELEMWISE_FUSABLE, _dense_pack,
            _dense_pack_ref, A.DensePackAttrs, tunable=True)


def contrib_dense_pack(data, weight, weight_layout="NC", units=None, out_dtype=""):
    """TVM's ``relay.nn.contrib_dense_pack``: dense with the weight packed "NC{nr}n"."""
    return call("nn.contrib_dense_pack", [data, weight],
                A.DensePackAttrs(None if units is None else int(units), out_dtype,
                                 weight_layout))


def _bmm(ins, a):
    return topi.nn.batch_matmul(ins[0], ins[1], None, _out_dtype(a), a.transpose_a,
                                a.transpose_b)


def _bmm_ref(x, y, attrs):
    xa = x.transpose(0, 2, 1) if attrs.transpose_a else x
    yb = y.transpose(0, 2, 1) if attrs.transpose_b else y
    return np.matmul(xa.astype(np.float64), yb.astype(np.float64)).astype(
        attrs.out_dtype or x.dtype)


register_op("nn.batch_matmul", 2, topi_rel("nn.batch_matmul", _bmm), T.OUT_ELEMWISE_FUSABLE,
            lambda ins, a, ty: _bmm(ins, a), _bmm_ref, A.BatchMatmulAttrs, tunable=True)


def batch_matmul(x, y, out_dtype="", transpose_a=False, transpose_b=True):
    return call("nn.batch_matmul", [x, y], A.BatchMatmulAttrs(out_dtype, bool(transpose_a),
                                                              bool(transpose_b)))


# ------------------------------------------------------------------ elementwise nn
def _bias_ref(x, b, attrs):
    shape = [1] * x.ndim
    shape[attrs.axis % x.ndim] = -1
    return (x + b.reshape(shape)).astype(x.dtype)


register_op("nn.bias_add", 2,
            topi_rel("nn.bias_add", lambda x, a: topi.nn.bias_add(x[0], x[1], a.axis)),
            T.BROADCAST, lambda ins, a, ty: topi.nn.bias_add(ins[0], ins[1], a.axis), _bias_ref,
            A.BiasAddAttrs)


def bias_add(data, bias, axis=1):
    return call("nn.bias_add", [data, bias], A.BiasAddAttrs(int(axis)))


def _same(name):
    def rel(arg_types, attrs):
        return tensor_arg(name, "data", arg_types[0])
    return rel


register_op("nn.relu", 1, _same("nn.relu"), T.ELEMWISE,
            lambda ins, a, ty: topi.nn.relu(ins[0]),
            lambda x, attrs=None: np.maximum(x, 0).astype(x.dtype))
register_op("nn.leaky_relu", 1, _same("nn.leaky_relu"), T.ELEMWISE,
            lambda ins, a, ty: topi.nn.leaky_relu(ins[0], a.alpha),
            lambda x, attrs: np.where(x > 0, x, x * attrs.alpha).astype(x.dtype),
            A.LeakyReluAttrs)


def relu(data):
    return call("nn.relu", [data])


def leaky_relu(data, alpha=0.01):
    return call("nn.leaky_relu", [data], A.LeakyReluAttrs(float(alpha)))


register_op("nn.softmax", 1, _same("nn.softmax"), T.OPAQUE,
            lambda ins, a, ty: topi.nn.softmax(ins[0], a.axis),
            lambda x, attrs: nn_ref.softmax(x, attrs.axis), A.SoftmaxAttrs)
register_op("nn.log_softmax", 1, _same("nn.log_softmax"), T.OPAQUE,
            lambda ins, a, ty: topi.nn.log_softmax(ins[0], a.axis),
            lambda x, attrs: nn_ref.log_softmax(x, attrs.axis), A.SoftmaxAttrs)


def softmax(data, axis=-1):
    return call("nn.softmax", [data], A.SoftmaxAttrs(int(axis)))


def log_softmax(data, axis=-1):
    return call("nn.log_softmax", [data], A.SoftmaxAttrs(int(axis)))
