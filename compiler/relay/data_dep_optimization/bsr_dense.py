"""Dense layers with sparse weights to BSR sparse_dense (TVM's
``data_dep_optimization.bsr_dense``)."""
from __future__ import annotations

from ..analysis.sparse_dense import process_params
from ..transform import DenseToSparse
from .common import main_function, run_opt_pass

__all__ = ["convert"]


def convert(func, params: dict, blocksize, sparsity_threshold: float = 0.85):
    """``(new function, params)``: every dense layer whose weight (in ``params``) has at
    least ``sparsity_threshold`` zeros reads it as BSR blocks of ``blocksize``; the
    dense weight in ``params`` is replaced by its ``.data``, ``.indices`` and ``.indptr``
    parts (in place, as TVM)."""
    func = main_function(func)
    info = process_params(func, params, tuple(int(b) for b in blocksize),
                          float(sparsity_threshold))
    return run_opt_pass(func, DenseToSparse(info.weight_name, info.weight_shape)), params
