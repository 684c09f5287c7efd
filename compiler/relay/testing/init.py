"""Seeded parameters for the model zoo (TVM's ``relay.testing.init`` / ``create_workload``).

``create_workload(fn, seed)`` types the function and draws a value for every parameter
except the data inputs (``data``, ``input_ids`` and anything in ``inputs``), by the
parameter's name: ``*_weight`` Xavier-uniform, ``*_gamma`` around 1, ``*_beta`` and
``*_bias`` small, ``*_moving_mean`` small, ``*_moving_var`` in [0.5, 1.5] (positive, as
a variance must be).  The same seed gives the same weights in every process.
"""
from __future__ import annotations

import numpy as np

from ..expr import Function
from ..module import IRModule
from ..transform.infer_type import infer_type

__all__ = ["create_workload", "init_value"]

DATA_INPUTS = ("data", "input_ids")


def init_value(name: str, shape: tuple, dtype: str, rng: np.random.Generator) -> np.ndarray:
    if name.endswith("_weight"):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        fan_out = shape[0]
        limit = float(np.sqrt(6.0 / (fan_in + fan_out)))
        v = rng.uniform(-limit, limit, shape)
    elif name.endswith("_gamma"):
        v = rng.uniform(0.8, 1.2, shape)
    elif name.endswith("_moving_var"):
        v = rng.uniform(0.5, 1.5, shape)
    else:                                # beta, bias, moving_mean, anything else
        v = rng.uniform(-0.1, 0.1, shape)
    return np.asarray(v, dtype=dtype)


def create_workload(fn: Function, seed: int = 0, inputs=DATA_INPUTS):
    """``(mod, params)`` with seeded values for every non-input parameter of ``fn``."""
    mod = infer_type(IRModule.from_expr(fn))
    rng = np.random.default_rng(seed)
    params = {}
    for p in mod["main"].params:
        if p.name_hint in inputs:
            continue
        t = p.checked_type
        params[p.name_hint] = init_value(p.name_hint, t.shape, t.dtype, rng)
    return mod, params
