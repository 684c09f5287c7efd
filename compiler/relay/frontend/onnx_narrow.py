"""ONNX's narrow element types in ``from_onnx``: BFLOAT16, the FLOAT8s, FLOAT4E2M1,
INT4/UINT4 and INT2/UINT2 (element types 16-26).

A value of such a type is imported as its storage (``topi.narrow``: uint8, or uint16 for
bfloat16) and its format is remembered by value name in ``ctx.formats``; relay types
never name a format.  How each node treats formats (``run``):
- Cast and CastLike convert with ``relay.narrow_cast`` (ONNX's ``saturate`` and
  ``round_mode`` attributes included);
- ops that only move elements (``MOVES``: Identity, Reshape, Transpose, ...) run on the
  storage, and their outputs keep the format;
- every other op runs on the decoded values (float32; int32 for the int formats) and its
  outputs of that dtype are encoded back (without saturation), as ONNX's reference,
  through ml_dtypes, computes on these types in float32;
- constants are converted at import time with the numpy reference, so they stay
  constants (a Range over bfloat16 bounds is still folded).
Invariant: the inputs of one node are all of one format (ONNX's type constraints say
so); otherwise the node is rejected with an error naming it.
"""
from __future__ import annotations

import numpy as np

from ...topi import narrow as N
from ..expr import Constant
from ..op.narrow import narrow_cast
from ..op.tensor import cast as relay_cast
from ..transform.infer_type import type_new
from .onnx_ops import ONNX_DTYPE_NAMES

__all__ = ["ONNX_FORMATS", "MOVES", "NARROW_CONVERTERS", "run", "cast", "cast_like"]

# ONNX TensorProto element type -> topi.narrow format (ml_dtypes' names, as onnx's
# numpy_helper uses them)
ONNX_FORMATS = {16: "bfloat16", 17: "float8_e4m3fn", 18: "float8_e4m3fnuz",
                19: "float8_e5m2", 20: "float8_e5m2fnuz", 21: "uint4", 22: "int4",
                23: "float4_e2m1fn", 24: "float8_e8m0fnu", 25: "uint2", 26: "int2"}

MOVES = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Expand",
         "Slice", "Gather", "Split", "Concat"}


def _convert(x, src: str, dst: str, saturate: bool = True, round_mode: str = "up"):
    """narrow_cast, done at once on a constant."""
    if isinstance(x, Constant):
        return Constant(np.asarray(N.narrow_cast_ref(x.data, src, dst, saturate, round_mode)))
    return narrow_cast(x, src, dst, saturate, round_mode)


def _type_of(ctx, name: str, e) -> str:
    """The dtype or format of value ``name`` (relay expression ``e``)."""
    return ctx.formats.get(name) or type_new(e).checked_type.dtype


def _cast_to(ctx, x, src: str, dst: str, a: dict):
    if src == dst:
        return x
    if src not in N.FORMATS and dst not in N.FORMATS:
        return relay_cast(x, dst)
    round_mode = a.get("round_mode", "up")
    if round_mode not in N.ROUND_MODES:
        raise ctx.error(f"round_mode {round_mode!r}; expected one of {N.ROUND_MODES}")
    return _convert(x, src, dst, bool(a.get("saturate", 1)), round_mode)


def cast(ctx, ins, a):
    to = a.get("to")
    dst = ONNX_FORMATS.get(to) or ONNX_DTYPE_NAMES.get(to)
    if dst is None:
        raise ctx.error(f"Cast to element type {to} is not supported by this compiler "
                        f"(supported: {sorted(ONNX_DTYPE_NAMES) + sorted(ONNX_FORMATS)})")
    return _cast_to(ctx, ins[0], _type_of(ctx, ctx.node.input[0], ins[0]), dst, a)


def cast_like(ctx, ins, a):
    node = ctx.node
    return _cast_to(ctx, ins[0], _type_of(ctx, node.input[0], ins[0]),
                    _type_of(ctx, node.input[1], ins[1]), a)


NARROW_CONVERTERS = {"Cast": cast, "CastLike": cast_like}


def _out_format(ctx, node, attrs) -> list:
    """The formats of the outputs of a Cast, CastLike or Constant node."""
    if node.op_type == "Cast":
        return [ONNX_FORMATS.get(attrs.get("to"))]
    if node.op_type == "CastLike":
        return [ctx.formats.get(node.input[1])]
    for att in node.attribute:           # Constant: its value's element type
        if att.name == "value":
            return [ONNX_FORMATS.get(att.t.data_type)]
    return [None]


def run(ctx, node, ins, attrs, converter) -> tuple:
    """``(outputs, their formats)`` of ``node``, formats as the module docstring says."""
    if node.op_type in ("Cast", "CastLike", "Constant"):
        return converter(ctx, ins, attrs), _out_format(ctx, node, attrs)
    fmts = [ctx.formats.get(n) if n else None for n in node.input]
    found = sorted({f for f in fmts if f})
    if not found:
        return converter(ctx, ins, attrs), []
    if len(found) > 1:
        raise ctx.error(f"inputs of formats {found}; expected all of one format")
    fmt = found[0]
    if node.op_type in MOVES:
        out = converter(ctx, ins, attrs)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        store = N.FORMATS[fmt].storage
        return outs, [fmt if o is not None and type_new(o).checked_type.dtype == store
                      else None for o in outs]
    work = "float32" if N.FORMATS[fmt].is_float else "int32"
    ins = [_convert(x, fmt, work) if f else x for x, f in zip(ins, fmts)]
    out = converter(ctx, ins, attrs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    back = [o is not None and type_new(o).checked_type.dtype == work for o in outs]
    return ([_convert(type_new(o), work, fmt, False) if b else o for o, b in zip(outs, back)],
            [fmt if b else None for b in back])
