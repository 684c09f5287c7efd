"""``narrow_cast``: conversions to and from the narrow formats (bfloat16, float8,
float4e2m1, int4, int2) that tensors hold in a storage dtype (``topi.narrow``).

Relay types carry only the storage dtype (uint8, or uint16 for bfloat16); which format
a tensor holds is the attrs of the narrow_cast reading or writing it (and, at a graph's
edges, ``main``'s "narrow_formats" attribute, which the graph executor honours).  The op
is elementwise, so it fuses with its neighbours.  TVM has these dtypes natively; this
op is how they are spelled here.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import TEError
from ...topi import narrow as N
from ...topi import tag as T
from ..errors import RelayTypeError
from ..ty import TensorType
from .attrs import Attrs
from .common import call, tensor_arg
from .registry import register_op

__all__ = ["NarrowCastAttrs", "narrow_cast"]


@dataclass(frozen=True)
class NarrowCastAttrs(Attrs):
    src: str = "float32"         # a dtype or a format name (topi.narrow.FORMATS)
    dst: str = "float32"
    saturate: bool = True        # float8 targets: clamp out-of-range values (ONNX)
    round_mode: str = "up"       # float8e8m0 targets (ONNX)


def _rel(arg_types, a):
    t = tensor_arg("narrow_cast", "data", arg_types[0])
    try:
        N.check_conversion("narrow_cast", a.src, a.dst, a.round_mode)
    except TEError as e:
        raise RelayTypeError(str(e)) from None
    if t.dtype != N.storage_of(a.src):
        raise RelayTypeError(f"narrow_cast: data has dtype {t.dtype}; {a.src} values are "
                             f"held in {N.storage_of(a.src)}")
    return TensorType(t.shape, N.storage_of(a.dst))


register_op("narrow_cast", 1, _rel, T.ELEMWISE,
            lambda ins, a, ty: N.narrow_cast(ins[0], a.src, a.dst, a.saturate, a.round_mode),
            lambda x, attrs: N.narrow_cast_ref(x, attrs.src, attrs.dst, attrs.saturate,
                                               attrs.round_mode),
            NarrowCastAttrs, doc="conversion to or from a narrow number format")


def narrow_cast(data, src: str, dst: str, saturate: bool = True, round_mode: str = "up"):
    """``data`` (the storage of ``src``) converted to ``dst`` (the storage of ``dst`` if it
    is a format).  One of ``src`` and ``dst`` is a format, the other may be a dtype."""
    return call("narrow_cast", [data], NarrowCastAttrs(str(src), str(dst), bool(saturate),
                                                       str(round_mode)))
