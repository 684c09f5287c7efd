"""Which dense layers to make sparse, and their weights in BSR form (TVM's
``relay.analysis.sparse_dense``).

Role: ``process_params`` looks at the weight of every ``nn.dense`` whose weight is a
function parameter; a weight with at least ``sparsity_threshold`` zeros is replaced in
``params`` by its BSR parts ``NAME.data``, ``NAME.indices`` and ``NAME.indptr`` (scipy's
layout, ``topi.sparse.bsr_from_dense``), and its name and BSR shape are returned for
``relay.transform.DenseToSparse``.

Invariants: as TVM's, ``params`` is changed in place (the dense weight is removed); the
values stored are ``NDArray``s of float data (the weight's dtype) and int32 index arrays;
a weight read by several dense layers is converted once.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...runtime import ndarray as _nd
from ...topi.sparse.utils import bsr_from_dense
from ..errors import RelayError
from ..expr import Call, Var
from ..functor import post_order
from ..op.registry import Op

__all__ = ["SparseAnalysisResult", "process_params", "search_weights"]

SparseAnalysisResult = namedtuple("SparseAnalysisResult", ["weight_name", "weight_shape"])


def search_weights(expr, op_name: str) -> list:
    """Names of the parameter weights (second argument, a Var) of every ``op_name`` call
    in ``expr``, in post order, each once."""
    out: list = []
    for node in post_order(expr):
        if isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == op_name \
                and len(node.args) > 1 and isinstance(node.args[1], Var) \
                and node.args[1].name_hint not in out:
            out.append(node.args[1].name_hint)
    return out


def _search_dense_op_weight(expr) -> list:
    """TVM's name: the weights of ``expr``'s ``nn.dense`` layers that are parameters."""
    return search_weights(expr, "nn.dense")


def as_numpy(value) -> np.ndarray:
    """A parameter's value (NDArray or array-like) as a numpy array."""
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def sparsity(w: np.ndarray) -> float:
    return 1.0 - np.count_nonzero(w) / w.size if w.size else 0.0


def to_bsr(name: str, w: np.ndarray, block_size):
    """``w`` in BSR form; a RelayError naming the weight when its shape does not divide
    into ``block_size``."""
    if w.ndim != 2 or w.shape[0] % block_size[0] or w.shape[1] % block_size[1]:
        raise RelayError(f"sparse conversion: weight {name!r} of shape {w.shape} does not "
                         f"divide into blocks of {tuple(block_size)}; expected a 2-D "
                         "shape that is a multiple of the block")
    return bsr_from_dense(w, block_size)


def store_bsr(params: dict, name: str, bsr) -> list:
    """Put ``bsr``'s parts into ``params`` as ``name.data/.indices/.indptr`` (the dense
    weight removed); its BSR shape as DenseToSparse takes it."""
    del params[name]
    params[name + ".data"] = _nd.array(bsr.data)
    params[name + ".indices"] = _nd.array(bsr.indices)
    params[name + ".indptr"] = _nd.array(bsr.indptr)
    return [*bsr.data.shape, *bsr.indices.shape, *bsr.indptr.shape]


def process_params(expr, params: dict, block_size, sparsity_threshold: float):
    """Convert the dense weights of ``expr``'s dense layers with at least
    ``sparsity_threshold`` zeros (see the module doc); a SparseAnalysisResult."""
    names, shapes = [], []
    for name in _search_dense_op_weight(expr):
        if name not in params:
            continue
        w = as_numpy(params[name])
        if sparsity(w) >= sparsity_threshold:
            shapes.append(store_bsr(params, name, to_bsr(name, w, block_size)))
            names.append(name)
    return SparseAnalysisResult(weight_name=names, weight_shape=shapes)
