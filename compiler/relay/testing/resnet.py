"""ResNet (TVM's ``relay.testing.resnet``): 18/34 with basic blocks, 50/101/152 with
bottlenecks; conv-bn-relu (v1), NCHW or NHWC.

``basic_block`` / ``bottleneck`` build one residual unit, for tests of fusion on a block.
"""
from __future__ import annotations

from .. import expr as X
from ..op import nn as nn_ops
from ..op import nn_more
from ..op import tensor as ops
from .init import create_workload
from .layers import conv_bn, dense, function_of, image_chw

__all__ = ["basic_block", "bottleneck", "get_net", "get_workload", "STAGES"]

STAGES = {18: ([2, 2, 2, 2], False), 34: ([3, 4, 6, 3], False), 50: ([3, 4, 6, 3], True),
          101: ([3, 4, 23, 3], True), 152: ([3, 8, 36, 3], True)}


def basic_block(data, name: str, cin: int, cout: int, stride: int, layout="NCHW",
                dtype="float32"):
    y = nn_ops.relu(conv_bn(data, f"{name}_1", cin, cout, 3, stride, 1, 1, layout, dtype))
    y = conv_bn(y, f"{name}_2", cout, cout, 3, 1, 1, 1, layout, dtype)
    short = data if stride == 1 and cin == cout else \
        conv_bn(data, f"{name}_sc", cin, cout, 1, stride, 0, 1, layout, dtype)
    return nn_ops.relu(ops.add(y, short))


def bottleneck(data, name: str, cin: int, cout: int, stride: int, layout="NCHW",
               dtype="float32"):
    mid = cout // 4
    y = nn_ops.relu(conv_bn(data, f"{name}_1", cin, mid, 1, 1, 0, 1, layout, dtype))
    y = nn_ops.relu(conv_bn(y, f"{name}_2", mid, mid, 3, stride, 1, 1, layout, dtype))
    y = conv_bn(y, f"{name}_3", mid, cout, 1, 1, 0, 1, layout, dtype)
    short = data if stride == 1 and cin == cout else \
        conv_bn(data, f"{name}_sc", cin, cout, 1, stride, 0, 1, layout, dtype)
    return nn_ops.relu(ops.add(y, short))


def get_net(batch_size=1, num_classes=1000, num_layers=18, image_shape=None,
            layout="NCHW", dtype="float32") -> X.Function:
    if num_layers not in STAGES:
        raise ValueError(f"resnet: num_layers {num_layers}; expected one of {sorted(STAGES)}")
    units, bottle = STAGES[num_layers]
    c, h, w = image_chw(image_shape, layout)
    shape = (batch_size, c, h, w) if layout == "NCHW" else (batch_size, h, w, c)
    data = X.var("data", shape=shape, dtype=dtype)
    y = nn_ops.relu(conv_bn(data, "stem", c, 64, 7, 2, 3, 1, layout, dtype))
    y = nn_more.max_pool2d(y, (3, 3), (2, 2), padding=(1, 1), layout=layout)
    block = bottleneck if bottle else basic_block
    widths = [256, 512, 1024, 2048] if bottle else [64, 128, 256, 512]
    cin = 64
    for s, (n, cout) in enumerate(zip(units, widths)):
        for k in range(n):
            stride = 2 if s > 0 and k == 0 else 1
            y = block(y, f"stage{s + 1}_unit{k + 1}", cin, cout, stride, layout, dtype)
            cin = cout
    y = nn_more.batch_flatten(nn_more.global_avg_pool2d(y, layout=layout))
    y = nn_ops.softmax(dense(y, "fc", cin, num_classes, dtype=dtype))
    return function_of(y)


def get_workload(batch_size=1, num_classes=1000, num_layers=18, image_shape=None,
                 layout="NCHW", dtype="float32", seed=0):
    """``(mod, params)`` of ResNet-``num_layers`` with seeded weights."""
    return create_workload(get_net(batch_size, num_classes, num_layers, image_shape, layout,
                                   dtype), seed)
