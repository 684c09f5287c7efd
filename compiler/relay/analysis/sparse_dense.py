"""Which dense layers to make sparse, and their weights in BSR form (TVM's
``relay.analysis.sparse_dense``).

Role: ``process_params`` looks at the weight of every ``nn.dense`` whose weight is a
function parameter; a weight with at least ``sparsity_threshold`` zeros is replaced in
``params`` by its BSR parts ``NAME.data``, ``NAME.indices`` and ``NAME.indptr`` (scipy's
layout, ``topi.sparse.bsr_from_dense``), and its name and BSR shape are returned for
``relay.transform.DenseToSparse``.

As TVM's, every converted weight's parts are also offered as tuning inputs under the
``"default"`` key, named ``sparse_dense_bsr_{N}_{K}_{BS_R}_{BS_C}_{nnz}_{len(indptr)}_W_data``
(``..._W_indices``, ``..._W_indptr``): ``compiler`` never imports the auto-scheduler, so
the auto-scheduler adds its ``register_task_input_buffer`` to ``TASK_INPUT_SINKS`` when
it is imported (``add_task_input_sink``); without it nothing is registered.

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

__all__ = ["SparseAnalysisResult", "process_params", "search_weights",
           "add_task_input_sink", "TASK_INPUT_SINKS"]

SparseAnalysisResult = namedtuple("SparseAnalysisResult", ["weight_name", "weight_shape"])
TASK_INPUT_SINKS: list = []     # fn(workload_key, name, array), see the module doc


def add_task_input_sink(fn) -> None:
    """Have ``fn(workload_key, name, array)`` called with every BSR part a conversion
    registers (TVM's ``register_task_input_buffer("default", ...)``); added once."""
    if not callable(fn):
        raise TypeError(f"add_task_input_sink: {fn!r} is not callable; expected "
                        "fn(workload_key, name, array)")
    if fn not in TASK_INPUT_SINKS:
        TASK_INPUT_SINKS.append(fn)


def register_bsr_inputs(kind: str, shape, block_size, bsr) -> None:
    """Offer ``bsr``'s parts to the sinks under TVM's names: ``kind`` is
    ``sparse_dense_bsr`` or ``sparse_conv2d_bsr``, ``shape`` the dense matrix's."""
    prefix = (f"{kind}_{shape[0]}_{shape[1]}_{block_size[0]}_{block_size[1]}_"
              f"{len(bsr.indices)}_{len(bsr.indptr)}_")
    for part in ("data", "indices", "indptr"):
        for sink in TASK_INPUT_SINKS:
            sink("default", f"{prefix}W_{part}", getattr(bsr, part))


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
            bsr = to_bsr(name, w, block_size)
            shapes.append(store_bsr(params, name, bsr))
            names.append(name)
            register_bsr_inputs("sparse_dense_bsr", w.shape, block_size, bsr)
    return SparseAnalysisResult(weight_name=names, weight_shape=shapes)
