"""``FoldScaleAxis`` (backward direction): a per-output-channel constant multiply after a
convolution or dense layer is folded into the layer's constant weight.

    multiply(conv2d(x, W), S)             -> conv2d(x, W * S')
    multiply(bias_add(conv2d(x, W), b), S) -> bias_add(conv2d(x, W * S'), b * S)
    multiply(dense(x, W), S)              -> dense(x, W * S[:, None])

``S`` must be a constant that varies only along the output-channel axis (what
SimplifyInference + FoldConstant leave of a batch_norm), ``W`` (and ``b``) constants,
and the layer must have no other consumer (else it would be computed twice).  The new
weights are computed here with numpy, so no FoldConstant is needed afterwards.  The
forward direction (a scale on the layer's input) is not implemented.
"""
from __future__ import annotations

import numpy as np

from ..expr import Call, Constant, Function
from ..functor import ExprMutator, post_order
from ..module import IRModule
from ..op.registry import Op
from .infer_type import infer_expr_type

__all__ = ["fold_scale_axis", "channel_scale"]


def _is(e, name) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


def channel_scale(s: np.ndarray, out_ndim: int, axis: int, channels: int):
    """``s`` as a vector of ``channels`` values when it varies only along ``axis`` of an
    output with ``out_ndim`` dims (broadcasting), else None."""
    if s.ndim > out_ndim:
        return None
    shape = (1,) * (out_ndim - s.ndim) + s.shape
    for k, n in enumerate(shape):
        if k != axis and n != 1:
            return None
    if shape[axis] not in (1, channels):
        return None
    return np.broadcast_to(s.reshape(shape[axis]), (channels,))


def _use_counts(body) -> dict:
    counts: dict = {}
    for n in post_order(body, into_functions=False):
        if isinstance(n, Call):
            for a in n.args:
                counts[a] = counts.get(a, 0) + 1
    return counts


class _Fold(ExprMutator):
    def __init__(self, uses: dict):
        super().__init__()
        self.uses = uses

    def rewrite_Call(self, e):
        if _is(e, "multiply"):
            for layer, scale in ((e.args[0], e.args[1]), (e.args[1], e.args[0])):
                if isinstance(scale, Constant) and self.uses.get(layer, 0) == 1:
                    out = self._fold(layer, scale.data)
                    if out is not None:
                        return out
        return self.rebuild(e)

    def _fold(self, layer, s):
        bias = None
        if _is(layer, "nn.bias_add") and self.uses.get(layer.args[0], 0) == 1 and \
                isinstance(layer.args[1], Constant):
            bias, layer = layer, layer.args[0]
        out_t = (bias or layer).checked_type
        if _is(layer, "nn.conv2d") and layer.attrs.kernel_layout in ("OIHW", "HWIO"):
            a = layer.attrs
            axis = 1 if a.data_layout == "NCHW" else 3
            w_axis = a.kernel_layout.index("O")
        elif _is(layer, "nn.dense"):
            axis, w_axis = out_t.ndim - 1, 0
        else:
            return None
        if bias is not None and bias.attrs.axis % out_t.ndim != axis:
            return None
        weight = layer.args[1]
        if not isinstance(weight, Constant) or out_t.dtype != str(s.dtype):
            return None
        vec = channel_scale(s, out_t.ndim, axis, out_t.shape[axis])
        if vec is None:
            return None
        shape = [1] * weight.data.ndim
        shape[w_axis] = -1
        w = Constant((weight.data * vec.reshape(shape)).astype(weight.data.dtype))
        out = Call(layer.op, (self.new(layer.args[0]), w), layer.attrs)
        if bias is not None:
            b = Constant((bias.args[1].data * vec).astype(bias.args[1].data.dtype))
            out = Call(bias.op, (out, b), bias.attrs)
        return out


def fold_scale_axis(mod: IRModule) -> IRModule:
    out = IRModule()
    for name, fn in mod.functions.items():
        typed = infer_expr_type(fn)
        folded = _Fold(_use_counts(typed.body)).visit(typed)
        out[name] = infer_expr_type(folded) if isinstance(folded, Function) else folded
    return out
