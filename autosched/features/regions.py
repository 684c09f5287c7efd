"""Regions of attached stages: what a stage computed inside another stage's loop
covers, and how the loops around its attach point move it.

Role: ``nest.build_nests`` asks, for a stage attached at loop ``k - 1`` of a parent nest,
its root extents per iteration there and the spans and steps of the ``k`` enclosing
loops as moves of its roots (``enclosing``).  The model is the one ``nest``'s docstring
gives: per output dimension, the range its readers touch inside the attach point, an
affine index moving by ``|coef| * span`` of the reader's inner loops (the whole
dimension when not affine), and the enclosing loops acting through the reader's index
map.  Readers are the attach target, or the stages attached inside it that read the
stage (TVM also computes a stage at a loop of its consumer's attach target, and at a
loop of the root its several consumers share).

Invariants: results depend only on body infos and the parents' span/step arrays, so
they are memoized (``_memo`` on values, ``_OUTER`` on a root parent's span identity);
the shared lists and arrays are read-only.
"""
from __future__ import annotations

import functools

import numpy as np

from .body import READ

_memo = functools.lru_cache(maxsize=16384)


def enclosing(info, parent, k: int, readers: tuple, nests: dict) -> tuple:
    """(root extents, spans, steps of the ``k`` enclosing loops) of a stage attached
    inside ``parent``'s loop ``k - 1``, seen through the nests of its ``readers``
    (stage ids; ``nest._nest_plan``).  A reader attached inside ``parent`` has
    enclosing loops that begin with ``parent``'s, so its rows from the attach point on
    are what runs per iteration there.  With several readers the stage covers the
    largest of their ranges (bound inference takes the union; they nest in the cases
    TVM's candidates make, e.g. softmax's exp read elementwise by its norm and whole
    by its sum computed inside it).  That is an approximation: at a fused loop,
    bound inference may relax a reader's range to the whole dimension.  No reader:
    ``parent``, the whole range."""
    if len(readers) <= 1:
        return _attached_outer(info, nests[readers[0]] if readers else parent, k)
    outs = [_attached_outer(info, nests[r], k) for r in readers]
    root_ext = [max(col) for col in zip(*(o[0] for o in outs))]
    return root_ext, outs[0][1], outs[0][2]


@_memo
def reader(pinfo, op):
    """The access of ``pinfo``'s op reading ``op``'s output, as Python lists:
    per tuple, per dimension ((root, coef) pairs, const); plus the affine flags."""
    acc = next((a for a in pinfo.accesses if a.kind == READ and a.tensor.op is op), None)
    if acc is None:
        return None, None, None
    forms = [[([(r, c) for r, c in enumerate(row) if c], const)
              for row, const in zip(co, cs)] for co, cs in zip(
                  acc.coefs.tolist(), acc.consts.tolist())]
    return acc, forms, acc.affine.tolist()


def _attached_range(info, parent, k):
    """(root extents, |M|.T, M.T) of a stage attached inside ``parent``'s loop ``k - 1``,
    for the index map M[root of stage, root of parent].  They depend only on the two
    bodies and the parent's spans inside the attach point, so they are memoized on
    those; the shared values are read-only."""
    acc = reader(parent.info, info.op)[0]
    inner = None if acc is None else tuple(parent.span[k:].sum(axis=0).tolist())
    return _range_geometry(info, parent.info, inner)


# (id of a root parent's span, attach position, stage's body info, parent's body info)
# -> (that span, root extents, spans and steps of the enclosing loops); bounded like
# ``_memo``
_OUTER: dict = {}


def _attached_outer(info, parent, k) -> tuple:
    """(root extents, spans, steps of the ``k`` enclosing loops, as moves of this
    stage's roots) of a stage attached inside ``parent``'s loop ``k - 1``.

    When ``parent`` is attached nowhere, its span and step arrays are the shared ones
    of a ``_loop_geometry`` entry, which stand for its loops: the result is memoized on
    the span array's identity (the entry holds the array, so its id is not reused while
    the entry exists) and the two body analyses (structurally equal bodies of other ops
    share a geometry entry, so the span alone does not name the parent's op).  In a
    search round 69% of the attached stages of matmul and dense sit in a parent loop
    nest seen before, 30% of conv2d's (whose deeper attachments are not memoized).
    The shared arrays are read-only."""
    memo = not parent.attached
    if memo:
        # the span array stands for the parent's loops, not for its op: ops rebuilt by
        # a dataflow step share loop-geometry entries (``BodyInfo.proto``)
        key = (id(parent.span), k, info, parent.info)
        hit = _OUTER.get(key)
        if hit is not None and hit[0] is parent.span:
            return hit[1]
    root_ext, abs_mt, mt = _attached_range(info, parent, k)
    outer_span, outer_step = parent.span[:k] @ abs_mt, parent.step[:k] @ mt
    outer_span.flags.writeable = outer_step.flags.writeable = False
    out = (root_ext, outer_span, outer_step)
    if memo:
        if len(_OUTER) >= 16384:
            _OUTER.clear()
        _OUTER[key] = (parent.span, out)
    return out


@_memo
def _range_geometry(info, pinfo, inner):
    ext, M = _range_of(info, pinfo, inner)
    abs_m = np.abs(M)
    M.flags.writeable = abs_m.flags.writeable = False
    return ext, abs_m.T, M.T


def _range_of(info, pinfo, inner):
    acc, forms, affine = reader(pinfo, info.op)
    n_sp = info.n_spatial
    M = np.zeros((info.n_root, pinfo.n_root))
    if acc is None:
        return list(info.root_ext), M
    ext = []
    for d in range(n_sp):
        dom = info.root_ext[d]
        if not affine[d]:
            ext.append(dom)
            continue
        lo = hi = None
        for tup in forms:
            pairs, const = tup[d]
            moved = [c * inner[r] for r, c in pairs]
            a = const + sum(x for x in moved if x < 0)
            b = const + sum(x for x in moved if x > 0)
            lo = a if lo is None or a < lo else lo
            hi = b if hi is None or b > hi else hi
        assert lo is not None and hi is not None     # every access has a tuple
        ext.append(max(1, min(dom, int(hi - lo) + 1)))
    M[:n_sp] = acc.coefs[0]
    return ext + list(info.root_ext[n_sp:]), M
