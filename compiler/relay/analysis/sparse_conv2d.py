"""Which 1x1 and 3x3 convolutions to make sparse, and their weights in BSR form (TVM's
``relay.analysis.sparse_conv2d``).

Role: ``process_params`` converts the weight of every plain ``kernel_size`` x
``kernel_size`` ``nn.conv2d`` (NHWC/HWIO or NCHW/OIHW as ``layout`` says; stride 1,
dilation 1, one group; no padding for 1x1, one pixel on each side for 3x3) with at
least ``sparsity_threshold`` zeros: the matrix it multiplies every pixel's window by
(``out x in`` for 1x1; ``out x 9*in`` for 3x3, the kernel's HWIO or OIHW order) is
stored as ``NAME.data/.indices/.indptr`` in ``params``, for
``relay.transform.Conv2dToSparse``.  Data is ``(blocks, bs_r)`` for a 1x1 kernel when
``bs_c`` is 1, else ``(blocks, bs_r, bs_c)``, as TVM's.

Invariants: as TVM's, ``params`` changes in place.  Unlike TVM's, a convolution the
sparse kernels do not compute (a ResNet's strided 1x1 shortcut; a strided or unpadded
3x3 convolution) is left dense, and so is a weight that any such convolution also
reads.  With ``reg_task_input`` (TVM's default) the parts are offered as tuning inputs
under TVM's ``sparse_conv2d_bsr_...`` names, as ``sparse_dense``'s are (see there);
task extraction also gives a sparse task its weights from the graph's constants
(``autosched.extract_tasks``).
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
    register_bsr_inputs,
    search_weights,
    sparsity,
    store_bsr,
    to_bsr,
)

__all__ = ["process_params", "plain_conv", "SparseAnalysisResult"]

_KERNEL_LAYOUT = {"NHWC": "HWIO", "NCHW": "OIHW"}


def _search_conv2d_op_weight(expr) -> list:
    """TVM's name: the weights of ``expr``'s ``nn.conv2d`` calls that are parameters."""
    return search_weights(expr, "nn.conv2d")


def plain_conv(call, layout: str, kernel_size: int = 1) -> bool:
    """Whether ``call`` is a conv2d ``sparse_conv2d`` computes: ``kernel_size`` square,
    stride 1, dilation 1, one group, data in ``layout`` and the kernel in its HWIO/OIHW,
    and no padding (1x1) or one pixel on every side (3x3)."""
    a = call.attrs
    shape = tuple(getattr(call.args[1]._checked_type(), "shape", ()))
    spatial = shape[:2] if layout == "NHWC" else shape[2:]
    pad = (0, 0, 0, 0) if kernel_size == 1 else (1, 1, 1, 1)
    return (a.data_layout == layout and a.kernel_layout == _KERNEL_LAYOUT.get(layout)
            and tuple(a.strides) == (1, 1) and tuple(a.padding) == pad
            and tuple(a.dilation) == (1, 1) and a.groups == 1
            and tuple(spatial) == (kernel_size, kernel_size))


def _convertible(expr, layout: str, kernel_size: int) -> set:
    """Names of the weights every conv2d reading them is a plain one of that size."""
    ok: dict = {}
    for node in post_order(expr):
        if isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "nn.conv2d" \
                and isinstance(node.args[1], Var):
            name = node.args[1].name_hint
            ok[name] = ok.get(name, True) and plain_conv(node, layout, kernel_size)
    return {n for n, good in ok.items() if good}


def matrix_of(w: np.ndarray, layout: str) -> np.ndarray:
    """The ``out x (kh * kw * in)`` matrix of a kernel (HWIO for NHWC, OIHW for NCHW), in
    TVM's column order: (kh, kw, in) for HWIO, (in, kh, kw) for OIHW."""
    return w.reshape(-1, w.shape[3]).T if layout == "NHWC" else w.reshape(w.shape[0], -1)


def process_params(expr, params: dict, block_size, sparsity_threshold: float,
                   layout: str = "NHWC", kernel_size: int = 1, reg_task_input: bool = True):
    """Convert the sparse weights of ``expr``'s plain ``kernel_size`` x ``kernel_size``
    convolutions (see the module doc); a SparseAnalysisResult of their names and BSR
    shapes."""
    if layout not in _KERNEL_LAYOUT:
        raise RelayError(f"sparse conv2d conversion: layout {layout!r}; expected 'NHWC' or "
                         "'NCHW'")
    if kernel_size not in (1, 3):
        raise RelayError(f"sparse conv2d conversion: kernel_size {kernel_size!r}; expected "
                         "1 or 3")
    bs = tuple(int(b) for b in block_size)
    if kernel_size == 3 and layout == "NCHW" and bs[1] != 1:
        raise RelayError(f"sparse conv2d conversion: block size {bs} for a 3x3 NCHW "
                         "convolution; its sparse kernel takes one-column blocks (bs_c 1)")
    names, shapes = [], []
    ok = _convertible(expr, layout, kernel_size)
    for name in _search_conv2d_op_weight(expr):
        if name not in ok or name not in params:
            continue
        w = as_numpy(params[name])
        if kernel_size == 1 and sparsity(w) < sparsity_threshold:
            continue
        bsr = to_bsr(name, matrix_of(w, layout), bs)
        # as TVM's: a 3x3 weight's sparsity counts the zeros its stored blocks hold too
        if kernel_size == 3 and 1.0 - bsr.data.size / w.size < sparsity_threshold:
            continue
        if bs[1] == 1 and kernel_size == 1:     # one-column blocks: 2-D data, as TVM's
            bsr.data = bsr.data.reshape(len(bsr.data), bs[0])
        shapes.append(store_bsr(params, name, bsr))
        names.append(name)
        if reg_task_input:
            register_bsr_inputs("sparse_conv2d_bsr", matrix_of(w, layout).shape, bs, bsr)
    return SparseAnalysisResult(weight_name=names, weight_shape=shapes)
