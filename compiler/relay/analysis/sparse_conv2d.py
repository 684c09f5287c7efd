"""Which 1x1 convolutions to make sparse, and their weights in BSR form (TVM's
``relay.analysis.sparse_conv2d``).

Role: ``process_params`` converts the weight of every plain 1x1 ``nn.conv2d`` (stride 1,
no padding or dilation, one group, NHWC/HWIO or NCHW/OIHW as ``layout`` says) with at
least ``sparsity_threshold`` zeros: the ``out x in`` matrix it multiplies every pixel by
is stored as ``NAME.data/.indices/.indptr`` in ``params`` (data ``(blocks, bs_r)`` when
``bs_c`` is 1, as TVM's), for ``relay.transform.Conv2dToSparse``.

Invariants: as TVM's, ``params`` changes in place.  Unlike TVM's, a 1x1 convolution with
a stride, padding, dilation or groups (a ResNet's strided shortcut) is left dense, since
``sparse_conv2d`` computes none of them, and so is a weight that any such convolution
also reads.  ``reg_task_input`` is accepted for TVM's signature: task extraction gives a
sparse task its weights from the graph's constants (``autosched.extract_tasks``).
"""
from __future__ import annotations

import numpy as np

from ..errors import RelayError
from ..expr import Call, Var
from ..functor import post_order
from ..op.registry import Op
from .sparse_dense import (
    SparseAnalysisResult,
    as_numpy,
    search_weights,
    sparsity,
    store_bsr,
    to_bsr,
)

__all__ = ["process_params", "plain_1x1", "SparseAnalysisResult"]

_KERNEL_LAYOUT = {"NHWC": "HWIO", "NCHW": "OIHW"}


def _search_conv2d_op_weight(expr) -> list:
    """TVM's name: the weights of ``expr``'s ``nn.conv2d`` calls that are parameters."""
    return search_weights(expr, "nn.conv2d")


def plain_1x1(call, layout: str) -> bool:
    """Whether ``call`` is a conv2d ``sparse_conv2d`` computes: 1x1, stride 1, no padding
    or dilation, one group, data in ``layout`` and the kernel in its HWIO/OIHW."""
    a = call.attrs
    shape = tuple(getattr(call.args[1]._checked_type(), "shape", ()))
    spatial = shape[:2] if layout == "NHWC" else shape[2:]
    return (a.data_layout == layout and a.kernel_layout == _KERNEL_LAYOUT.get(layout)
            and tuple(a.strides) == (1, 1) and not any(a.padding)
            and tuple(a.dilation) == (1, 1) and a.groups == 1 and tuple(spatial) == (1, 1))


def _convertible(expr, layout: str) -> set:
    """Names of the weights every conv2d reading them is a plain 1x1 one."""
    ok: dict = {}
    for node in post_order(expr):
        if isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "nn.conv2d" \
                and isinstance(node.args[1], Var):
            name = node.args[1].name_hint
            ok[name] = ok.get(name, True) and plain_1x1(node, layout)
    return {n for n, good in ok.items() if good}


def matrix_of(w: np.ndarray, layout: str) -> np.ndarray:
    """The ``out x in`` matrix of a 1x1 kernel (HWIO for NHWC, OIHW for NCHW)."""
    return w.reshape(w.shape[2], w.shape[3]).T if layout == "NHWC" else \
        w.reshape(w.shape[0], w.shape[1])


def process_params(expr, params: dict, block_size, sparsity_threshold: float,
                   layout: str = "NHWC", kernel_size: int = 1, reg_task_input: bool = True):
    """Convert the sparse weights of ``expr``'s plain 1x1 convolutions (see the module
    doc); a SparseAnalysisResult of their names and BSR shapes."""
    if layout not in _KERNEL_LAYOUT:
        raise RelayError(f"sparse conv2d conversion: layout {layout!r}; expected 'NHWC' or "
                         "'NCHW'")
    if kernel_size != 1:
        raise RelayError(f"sparse conv2d conversion: kernel_size {kernel_size!r}; only 1x1 "
                         "convolutions are converted")
    bs = tuple(int(b) for b in block_size)
    names, shapes = [], []
    ok = _convertible(expr, layout)
    for name in _search_conv2d_op_weight(expr):
        if name not in ok or name not in params:
            continue
        w = as_numpy(params[name])
        if sparsity(w) < sparsity_threshold:
            continue
        bsr = to_bsr(name, matrix_of(w, layout), bs)
        if bs[1] == 1:                        # one-column blocks: 2-D data, as TVM's
            bsr.data = bsr.data.reshape(len(bsr.data), bs[0])
        shapes.append(store_bsr(params, name, bsr))
        names.append(name)
    return SparseAnalysisResult(weight_name=names, weight_shape=shapes)
