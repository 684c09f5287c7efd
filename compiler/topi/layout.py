"""Data layouts ("NCHW", "NHWC", "NCHW8c", "OIHW16o", ...) and ``layout_transform``.

A layout string lists primal axes as upper-case letters and split-off sub-axes as
``<factor><lower-case letter>``: in "NCHW8c" the channel C is stored as C//8 outer
blocks (the "C" position) and 8 inner lanes (the "8c" position).

Invariants: each primal letter appears once, a sub-axis only if its primal does, at most
one sub-axis per primal; ``layout_transform`` requires the same primal axes on both sides
and every split to divide the full extent (TEError naming the layouts otherwise).
"""
from __future__ import annotations

import re

from ..tir import op as _op
from . import tag as _tag
from .utils import check_tensor, const_tuple, error, make

_TOKEN = re.compile(r"([A-Z])|(\d+)([a-z])")


def parse_layout(layout: str, op: str = "topi.layout") -> list:
    """[(letter, factor)] in order: factor None for a primal axis, an int for a sub-axis."""
    if not isinstance(layout, str) or not layout:
        raise error(op, "layout", layout, "a layout string such as 'NCHW' or 'NCHW8c'")
    pos = 0
    out: list = []
    while pos < len(layout):
        m = _TOKEN.match(layout, pos)
        if m is None:
            raise error(op, "layout", layout, "upper-case axes and sub-axes like '8c'")
        if m.group(1):
            out.append((m.group(1), None))
        else:
            out.append((m.group(3).upper(), int(m.group(2))))
        pos = m.end()
    primal = [a for a, f in out if f is None]
    subs = [a for a, f in out if f is not None]
    if len(set(primal)) != len(primal) or len(set(subs)) != len(subs) or \
            not set(subs) <= set(primal) or any(f == 0 for _, f in out):
        raise error(op, "layout", layout, "each axis once, sub-axes of present axes, "
                    "factors > 0")
    return out


def layout_axis(layout: str, letter: str, op: str = "topi.layout") -> int:
    """Position of primal axis ``letter`` in ``layout``."""
    for k, (a, f) in enumerate(parse_layout(layout, op)):
        if a == letter and f is None:
            return k
    raise error(op, "layout", layout, f"a layout containing axis {letter!r}")


def _full_extents(op, toks, shape, src_layout) -> dict:
    full: dict = {}
    for (a, f), s in zip(toks, shape):
        if f is None:
            full[a] = full.get(a, 1) * s
        else:
            if s != f:
                raise error(op, "data", shape, f"extent {f} for sub-axis '{f}{a.lower()}' "
                            f"of layout {src_layout}")
            full[a] = full.get(a, 1) * f
    return full


def layout_transform(data, src_layout: str, dst_layout: str):
    """Copy ``data`` from ``src_layout`` to ``dst_layout`` (e.g. NCHW -> NCHW8c -> NHWC)."""
    op = "topi.layout_transform"
    check_tensor(op, "data", data)
    src = parse_layout(src_layout, op)
    dst = parse_layout(dst_layout, op)
    shape = const_tuple(data.shape)
    if len(src) != len(shape):
        raise error(op, "src_layout", src_layout, f"{len(shape)} axes like data {shape}")
    if sorted(a for a, f in src if f is None) != sorted(a for a, f in dst if f is None):
        raise error(op, "dst_layout", dst_layout, f"the same primal axes as {src_layout}")
    full = _full_extents(op, src, shape, src_layout)
    sub_dst = {a: f for a, f in dst if f is not None}
    sub_src = {a: f for a, f in src if f is not None}
    for a, f in sub_dst.items():
        if full[a] % f:
            raise error(op, "dst_layout", dst_layout, f"a factor of {a} dividing its "
                        f"extent {full[a]}")
    out = tuple(f if f is not None else (full[a] // sub_dst[a] if a in sub_dst else full[a])
                for a, f in dst)

    def fcompute(*i):
        outer = {a: x for (a, f), x in zip(dst, i) if f is None}
        inner = {a: x for (a, f), x in zip(dst, i) if f is not None}
        value = {a: (outer[a] * sub_dst[a] + inner[a]) if a in sub_dst else outer[a]
                 for a in outer}
        idx = []
        for a, f in src:
            if f is not None:
                idx.append(_op.floormod(value[a], f))
            elif a in sub_src:
                idx.append(_op.floordiv(value[a], sub_src[a]))
            else:
                idx.append(value[a])
        return data(*idx)
    return make(out, fcompute, name="T_layout_trans", tag=_tag.INJECTIVE,
                src_layout=src_layout, dst_layout=dst_layout)
