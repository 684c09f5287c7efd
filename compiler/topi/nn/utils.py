"""Helpers of the nn operators: padding tuples and convolution/pooling output sizes.

Invariants: ``get_pad_tuple`` always returns (top, left, bottom, right) of non-negative
ints; ``conv_out_size`` raises a TEError naming the op when the (padded, dilated) window
does not fit, instead of producing an empty or negative shape.
"""
from __future__ import annotations

from ..utils import const_int, error


def get_pad_tuple(padding, kernel, op: str = "topi.nn") -> tuple:
    """(top, left, bottom, right) from an int, (h, w), (t, l, b, r), "SAME" or "VALID"."""
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return 0, 0, 0, 0
        if padding.upper() == "SAME":
            ph, pw = kernel[0] - 1, kernel[1] - 1
            return (ph + 1) // 2, (pw + 1) // 2, ph // 2, pw // 2
        raise error(op, "padding", padding, "an int, a 2- or 4-tuple, 'SAME' or 'VALID'")
    out: tuple
    try:
        if isinstance(padding, (list, tuple)):
            vals = [const_int(p) for p in padding]
        else:
            vals = [const_int(padding)]
    except Exception:
        raise error(op, "padding", padding,
                    "an int, a 2- or 4-tuple of ints, 'SAME' or 'VALID'") from None
    if len(vals) == 1:
        out = (vals[0],) * 4
    elif len(vals) == 2:
        out = (vals[0], vals[1], vals[0], vals[1])
    elif len(vals) == 4:
        out = tuple(vals)
    else:
        raise error(op, "padding", padding, "an int, a 2-tuple (h, w) or a 4-tuple "
                    "(top, left, bottom, right)")
    if any(v < 0 for v in out):
        raise error(op, "padding", padding, "non-negative padding")
    return out


def conv_out_size(op: str, size: int, kernel: int, stride: int, dilation: int,
                  pad_lo: int, pad_hi: int, what: str = "input") -> int:
    """Output extent of a sliding window; TEError if the window does not fit."""
    span = (kernel - 1) * dilation + 1
    padded = size + pad_lo + pad_hi
    if padded < span:
        raise error(op, what, size, f"a padded size ({padded}) of at least the dilated "
                    f"kernel extent {span}")
    return (padded - span) // stride + 1
