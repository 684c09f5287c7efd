"""``AlterOpLayout``: pack constant weights by blocks of output channels/units, so the
default schedules read one contiguous weight vector per reduction step.

    conv2d(x, W: OIHW constant)  ->  conv2d(x, W': "OIHW{v}o" constant)
    W'[o // v, i, y, x, o % v] = W[o, i, y, x]        (v = SIMD lanes of the dtype)
    dense(x, W: (N, K) constant)  ->  contrib_dense_pack(x, W': "NC{nr}n" constant)
    W'[j // nr, k, j % nr] = W[j, k]                  (nr = 2 vectors, else 1)

Why: topi's NCHW schedule vectorizes the output width.  When the width does not fill
whole vectors (7, 14 and 28 on AVX2: the deep layers of ResNets, 80-110 GFLOPS), a tile
of v output channels x up to 7 columns reads one contiguous filter vector per tap and
runs at 140-150 GFLOPS; that needs the filter packed, which for a constant costs nothing
at run time (TVM's x86 AlterOpLayout does the same with its NCHWc convolution; here the
data keeps NCHW, so no other operator changes layout).

Dense (TVM's x86 AlterOpLayout makes the same ``contrib_dense_pack``): with (N, K) rows
the default kernel must sum each output over lanes of k ("dot", 150-190 GFLOPS on
AVX-512 for BERT's layers); with the weight packed it is the GEMM micro-kernel, an
MR x nr tile of accumulators fed by one broadcast of x and nr/lanes weight loads per k
(220-230 GFLOPS, about 95% of the FMA peak).  Packed when the weight is a float32
constant and N is a multiple of a vector (else left as dense).

Which convolutions: data NCHW, kernel OIHW, groups 1, a float32 constant weight, output
channels a multiple of v, an output width that is not a multiple of v but has a divisor
of 4..7 (``topi.x86.conv2d.packed_col_tile``).  Everything else is left as written.  The
packed weight is computed here with numpy, so no FoldConstant is needed afterwards.

Invariants: the rewritten module computes exactly what it computed before (a relabelling
of the weight's elements); the pass is idempotent (a packed conv is not OIHW any more).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...topi.nn.dense import pack_dense_weight
from ...topi.x86.conv2d import packed_col_tile
from ...topi.x86.dense import packed_width
from ...topi.x86.utils import vector_lanes
from ..expr import Call, Constant, Function
from ..functor import ExprMutator
from ..module import IRModule
from ..op.nn import contrib_dense_pack
from ..op.registry import Op
from ..ty import TensorType
from .infer_type import infer_expr_type

__all__ = ["alter_op_layout", "pack_oihw", "dense_pack_width"]


def pack_oihw(w: np.ndarray, v: int) -> np.ndarray:
    """OIHW -> (O/v, I, KH, KW, v)."""
    o, i, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(o // v, v, i, kh, kw).transpose(0, 2, 3, 4, 1))


def _packable(e: Call) -> int:
    """The vector width to pack ``e``'s weight with, or 0 to leave it."""
    a, weight = e.attrs, e.args[1]
    if a.data_layout != "NCHW" or a.kernel_layout != "OIHW" or a.groups != 1 or \
            not isinstance(weight, Constant) or weight.data.dtype != np.float32:
        return 0
    out = e.checked_type
    if not isinstance(out, TensorType) or out.dtype != "float32":
        return 0
    v = vector_lanes("float32")
    oc, ow = out.shape[1], out.shape[3]
    if oc % v or ow % v == 0 or not packed_col_tile(ow):
        return 0
    return v


def dense_pack_width(units: int) -> int:
    """Units per packed weight block (``topi.x86.dense.packed_width``: three float32
    vectors on AVX2, two on AVX-512, when they divide ``units``), or 0 (not packed)."""
    return packed_width(units, vector_lanes("float32"))


def _dense_packable(e: Call) -> int:
    weight, out = e.args[1], e.checked_type
    if not isinstance(weight, Constant) or weight.data.dtype != np.float32 or \
            weight.data.ndim != 2 or not isinstance(out, TensorType) or \
            out.dtype != "float32":
        return 0
    return dense_pack_width(weight.data.shape[0])


class _Alter(ExprMutator):
    def rewrite_Call(self, e):
        name = e.op.name if isinstance(e.op, Op) else ""
        if name == "nn.conv2d":
            v = _packable(e)
            if v:
                w = Constant(pack_oihw(e.args[1].data, v))
                attrs = dataclasses.replace(e.attrs, kernel_layout=f"OIHW{v}o")
                return Call(e.op, (self.new(e.args[0]), w), attrs)
        elif name == "nn.dense":
            nr = _dense_packable(e)
            if nr:
                w = Constant(pack_dense_weight(e.args[1].data, nr))
                return contrib_dense_pack(self.new(e.args[0]), w, f"NC{nr}n", e.attrs.units,
                                          e.attrs.out_dtype)
        return self.rebuild(e)


def alter_op_layout(mod: IRModule) -> IRModule:
    out = IRModule()
    for name, fn in mod.functions.items():
        typed = infer_expr_type(fn)
        altered = _Alter().visit(typed)
        out[name] = infer_expr_type(altered) if isinstance(altered, Function) else altered
    return out
