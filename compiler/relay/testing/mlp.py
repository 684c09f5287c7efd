"""A multi-layer perceptron (TVM's ``relay.testing.mlp``): flatten, dense 128 + relu,
dense 64 + relu, dense ``num_classes``, softmax."""
from __future__ import annotations

import numpy as np

from .. import expr as X
from ..op import nn as nn_ops
from ..op import nn_more
from .init import create_workload
from .layers import dense, function_of

__all__ = ["get_net", "get_workload"]


def get_net(batch_size: int = 1, num_classes: int = 10, image_shape=(1, 28, 28),
            dtype: str = "float32") -> X.Function:
    data = X.var("data", shape=(batch_size, *image_shape), dtype=dtype)
    n = int(np.prod(image_shape))
    y = nn_more.batch_flatten(data)
    y = nn_ops.relu(dense(y, "fc1", n, 128, dtype=dtype))
    y = nn_ops.relu(dense(y, "fc2", 128, 64, dtype=dtype))
    y = nn_ops.softmax(dense(y, "fc3", 64, num_classes, dtype=dtype))
    return function_of(y)


def get_workload(batch_size: int = 1, num_classes: int = 10, image_shape=(1, 28, 28),
                 dtype: str = "float32", seed: int = 0):
    """``(mod, params)`` of the MLP with seeded weights."""
    return create_workload(get_net(batch_size, num_classes, image_shape, dtype), seed)
