"""Building blocks of the model zoo: named parameters and the common layer patterns.

Parameters are ``relay.var``s named ``<prefix>_weight`` / ``_bias`` / ``_gamma`` ...
so ``init.create_workload`` knows how to draw them.  NCHW/OIHW and NHWC/HWIO layouts.
"""
from __future__ import annotations

from .. import expr as X
from ..analysis import free_vars
from ..op import nn as nn_ops
from ..op import nn_more
from ..op import tensor as ops

__all__ = ["function_of", "conv2d", "batch_norm", "conv_bn", "dense", "relu6", "channel_axis"]


def image_chw(image_shape, layout: str) -> tuple:
    """``(channels, height, width)`` of ``image_shape``, which is in the layout's order
    (TVM's: ``(224, 224, 3)`` for NHWC); None is a 224x224 RGB image."""
    if image_shape is None:
        return (3, 224, 224)
    if len(image_shape) != 3:
        raise ValueError(f"image_shape {image_shape!r}: expected 3 dimensions in the "
                         f"{layout} order without the batch")
    if layout == "NHWC":
        h, w, c = image_shape
        return (c, h, w)
    return tuple(image_shape)


def channel_axis(layout: str) -> int:
    return layout.index("C")


def conv2d(data, name: str, cin: int, cout: int, kernel: int, strides=1, padding=0,
           groups: int = 1, layout: str = "NCHW", dtype: str = "float32"):
    kl = "OIHW" if layout == "NCHW" else "HWIO"
    shape = (cout, cin // groups, kernel, kernel) if kl == "OIHW" else \
        (kernel, kernel, cin // groups, cout)
    w = X.var(f"{name}_weight", shape=shape, dtype=dtype)
    return nn_ops.conv2d(data, w, strides=(strides, strides), padding=(padding, padding),
                         groups=groups, channels=cout, kernel_size=(kernel, kernel),
                         data_layout=layout, kernel_layout=kl)


def batch_norm(data, name: str, channels: int, layout: str = "NCHW", dtype: str = "float32"):
    g, b, m, v = (X.var(f"{name}_{k}", shape=(channels,), dtype=dtype)
                  for k in ("gamma", "beta", "moving_mean", "moving_var"))
    return nn_more.batch_norm(data, g, b, m, v, axis=channel_axis(layout), epsilon=1e-5)[0]


def conv_bn(data, name: str, cin: int, cout: int, kernel: int, strides=1, padding=0,
            groups: int = 1, layout: str = "NCHW", dtype: str = "float32"):
    y = conv2d(data, f"{name}_conv", cin, cout, kernel, strides, padding, groups, layout, dtype)
    return batch_norm(y, f"{name}_bn", cout, layout, dtype)


def dense(data, name: str, in_units: int, units: int, bias: bool = True,
          dtype: str = "float32"):
    w = X.var(f"{name}_weight", shape=(units, in_units), dtype=dtype)
    y = nn_ops.dense(data, w, units=units)
    if bias:
        y = nn_ops.bias_add(y, X.var(f"{name}_bias", shape=(units,), dtype=dtype), axis=-1)
    return y


def relu6(data):
    return ops.clip(data, 0.0, 6.0)


def function_of(out) -> X.Function:
    """The function of ``out`` over its free variables, data inputs first."""
    params = free_vars(out)
    params.sort(key=lambda v: v.name_hint not in ("data", "input_ids"))
    return X.Function(params, out)
