"""MobileNetV2 (Sandler et al. 2018): inverted residual blocks of a 1x1 expansion,
a 3x3 depthwise convolution and a linear 1x1 projection, relu6 activations, residual
add when the block keeps its shape.  ``inverted_residual`` builds one block, for tests.
"""
from __future__ import annotations

from .. import expr as X
from ..op import nn as nn_ops
from ..op import nn_more
from ..op import tensor as ops
from .init import create_workload
from .layers import conv_bn, dense, function_of, image_chw, relu6

__all__ = ["inverted_residual", "get_net", "get_workload", "SETTINGS"]

# (expansion t, output channels c, repeats n, first stride s), as in the paper
SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
            (6, 160, 3, 2), (6, 320, 1, 1)]


def _round(c: float) -> int:
    """Channels rounded to a multiple of 8 (the reference implementation's rule)."""
    v = max(8, int(c + 4) // 8 * 8)
    return v + 8 if v < 0.9 * c else v


def inverted_residual(data, name: str, cin: int, cout: int, stride: int, expand: int,
                      layout="NCHW", dtype="float32"):
    hidden = cin * expand
    y = data
    if expand != 1:
        y = relu6(conv_bn(y, f"{name}_expand", cin, hidden, 1, 1, 0, 1, layout, dtype))
    y = relu6(conv_bn(y, f"{name}_dw", hidden, hidden, 3, stride, 1, hidden, layout, dtype))
    y = conv_bn(y, f"{name}_project", hidden, cout, 1, 1, 0, 1, layout, dtype)
    if stride == 1 and cin == cout:
        y = ops.add(y, data)
    return y


def get_net(batch_size=1, num_classes=1000, image_shape=None, width_mult=1.0,
            layout="NCHW", dtype="float32") -> X.Function:
    c, h, w = image_chw(image_shape, layout)
    shape = (batch_size, c, h, w) if layout == "NCHW" else (batch_size, h, w, c)
    data = X.var("data", shape=shape, dtype=dtype)
    cin = _round(32 * width_mult)
    y = relu6(conv_bn(data, "stem", c, cin, 3, 2, 1, 1, layout, dtype))
    for i, (t, ch, n, s) in enumerate(SETTINGS):
        cout = _round(ch * width_mult)
        for k in range(n):
            y = inverted_residual(y, f"block{i + 1}_{k + 1}", cin, cout, s if k == 0 else 1,
                                  t, layout, dtype)
            cin = cout
    last = _round(1280 * max(1.0, width_mult))
    y = relu6(conv_bn(y, "head", cin, last, 1, 1, 0, 1, layout, dtype))
    y = nn_more.batch_flatten(nn_more.global_avg_pool2d(y, layout=layout))
    y = nn_ops.softmax(dense(y, "fc", last, num_classes, dtype=dtype))
    return function_of(y)


def get_workload(batch_size=1, num_classes=1000, image_shape=None, width_mult=1.0,
                 layout="NCHW", dtype="float32", seed=0):
    """``(mod, params)`` of MobileNetV2 with seeded weights."""
    return create_workload(get_net(batch_size, num_classes, image_shape, width_mult, layout,
                                   dtype), seed)
