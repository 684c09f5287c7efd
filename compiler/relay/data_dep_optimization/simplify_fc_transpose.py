"""``dense(x, transpose(W))`` to ``dense(x, W.T)`` with ``W.T`` stored transposed (TVM's
``data_dep_optimization.simplify_fc_transpose``): the weight a dense layer reads is then
a parameter the sparse conversion can look at."""
from __future__ import annotations

import numpy as np

from ...runtime import ndarray as _nd
from ..analysis.sparse_dense import as_numpy
from ..transform import SimplifyFCTranspose, search_fc_transpose
from .common import main_function, run_opt_pass

__all__ = ["convert"]


def convert(func, params: dict):
    """``(new function, params)``; ``params[W]`` becomes ``params[W + ".T"]``, the
    transposed value, for every weight read transposed by a dense layer (in place)."""
    func = main_function(func)
    names = [n for n in search_fc_transpose(func) if n in params]
    for name in names:
        params[name + ".T"] = _nd.array(np.ascontiguousarray(as_numpy(params[name]).T))
        del params[name]
    return run_opt_pass(func, SimplifyFCTranspose(names)), params
