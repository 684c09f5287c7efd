"""``contrib.cblas`` (TVM's ``tvm.contrib.cblas``): matmul / batch_matmul as te.extern
stages calling the packed functions ``tvm.contrib.cblas.matmul`` / ``batch_matmul``.

The packed functions run numpy's matmul straight into the kernel's output buffer, so the
product is computed by the BLAS numpy ships (no new dependency); inputs and outputs are
zero-copy views of the kernel's memory.  Registered when this module is imported
(``import compiler`` does).
"""
from __future__ import annotations

import numpy as np

from ..runtime.packed import register_func
from ..te.extern import extern
from ..tir.calls import call_packed

__all__ = ["matmul", "batch_matmul"]


def _product(a, b, c, transa, transb) -> None:
    x, y, out = np.asarray(a), np.asarray(b), np.asarray(c)
    x = np.swapaxes(x, -1, -2) if transa else x
    y = np.swapaxes(y, -1, -2) if transb else y
    if out.dtype == x.dtype == y.dtype:
        np.matmul(x, y, out=out)
    else:
        out[...] = np.matmul(x, y)


@register_func("tvm.contrib.cblas.matmul", override=True)
def _cblas_matmul(a, b, c, transa=False, transb=False):
    _product(a, b, c, transa, transb)


@register_func("tvm.contrib.cblas.batch_matmul", override=True)
def _cblas_batch_matmul(a, b, c, transa=False, transb=False):
    _product(a, b, c, transa, transb)


def matmul(lhs, rhs, transa: bool = False, transb: bool = False, **kwargs):
    """``lhs @ rhs`` (each optionally transposed) as an extern stage named "C"."""
    n = lhs.shape[1] if transa else lhs.shape[0]
    m = rhs.shape[0] if transb else rhs.shape[1]
    return extern((n, m), [lhs, rhs],
                  lambda ins, outs: call_packed("tvm.contrib.cblas.matmul", ins[0], ins[1],
                                                outs[0], transa, transb),
                  name=kwargs.pop("name", "C"), **kwargs)


def batch_matmul(lhs, rhs, transa: bool = False, transb: bool = False, **kwargs):
    """Batched ``lhs[b] @ rhs[b]`` (3-D operands) as an extern stage named "C"."""
    b = lhs.shape[0]
    n = lhs.shape[2] if transa else lhs.shape[1]
    m = rhs.shape[1] if transb else rhs.shape[2]
    return extern((b, n, m), [lhs, rhs],
                  lambda ins, outs: call_packed("tvm.contrib.cblas.batch_matmul", ins[0],
                                                ins[1], outs[0], transa, transb),
                  name=kwargs.pop("name", "C"), **kwargs)
