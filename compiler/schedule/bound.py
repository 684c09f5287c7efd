"""Bound inference (TVM's InferBound).

For every non-inlined stage this computes:
- the range of each root axis: a symbolic ``min`` (an expression of the loops that
  enclose the stage's attach point) and an ``extent``;
- the extent of every derived axis (split outer/inner, fused);
- the value of each root axis in terms of the leaf loops, and the predicates needed when
  a split does not divide evenly or an attached region may leave the tensor's domain.

Stages are visited consumers first.  A stage attached with ``compute_at`` covers the
union of what its consumers read, with the consumers' loops inside the attach point
relaxed to their full ranges and the loops at or above it kept symbolic.  Root and
output stages cover their whole domain.  Every loop runs from 0.

Extents are Python ints for static shapes and integer PrimExprs of the shape variables
(``te.var``) otherwise; shape variables are symbolic constants here (never relaxed).
A static program takes exactly the paths it took before symbolic shapes existed, so its
IR does not change.  When a symbolic comparison cannot be proven, the result is the
safe one: the whole domain, or one more guard (``likely(...)``, as TVM marks them).
"""

from __future__ import annotations

from ..errors import LoweringError
from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import op as _op
from ..tir.functor import substitute
from .inline import collect_reads
from .relations import Fuse, Split, as_expr, dom_extent, ext_mul, split_extents


class Bounds:
    """Result of bound inference; read by schedule_ops."""

    def __init__(self):
        self.root_min: dict = {}     # root IterVar -> PrimExpr
        self.ext: dict = {}          # IterVar -> int (PrimExpr when symbolic)
        self.factor: dict = {}       # Split -> int (PrimExpr: nparts of a symbolic extent)
        self.path: dict = {}         # Stage -> [IterVar] loops enclosing its attach point
        self.root_value: dict = {}   # Stage -> {root Var: PrimExpr of leaf vars}
        self.preds: dict = {}        # Stage -> [(PrimExpr, is_reduce_pred)]
        self.var_ext: dict = {}      # loop Var -> int (or PrimExpr)


# ---------------------------------------------------------------- linear forms
def linear(e):
    """(coeffs: dict Var -> int, const: int) when ``e`` is affine in Vars, else None."""
    t = type(e)
    if t is E.IntImm:
        return {}, e.value
    if t is E.Var:
        return {e: 1}, 0
    if t is E.Add or t is E.Sub:
        a, b = linear(e.a), linear(e.b)
        if a is None or b is None:
            return None
        s = -1 if t is E.Sub else 1
        co = dict(a[0])
        for v, c in b[0].items():
            co[v] = co.get(v, 0) + s * c
        return {v: c for v, c in co.items() if c}, a[1] + s * b[1]
    if t is E.Mul:
        a, b = linear(e.a), linear(e.b)
        if a is None or b is None:
            return None
        if not a[0]:
            a, b = b, a
        if b[0]:
            return None
        k = b[1]
        return {v: c * k for v, c in a[0].items() if c * k}, a[1] * k
    # Any other integer term (e.g. ``fused // 256`` of an outer loop) is an opaque atom
    # compared by identity; ``interval`` hands out one object per point sub-term, so the
    # bounds of a region share atoms and their difference folds to a constant.
    return {e: 1}, 0


def from_linear(co: dict, c: int, dtype: str = "int32"):
    """Rebuild ``sum(coef * var) + c`` (terms in dict order)."""
    out = None
    for v, k in co.items():
        t = v if k == 1 else _op.mul(v, k)
        out = t if out is None else _op.add(out, t)
    if out is None:
        return _op.const(c, dtype)
    return _op.add(out, c) if c else out


def sub_simplified(a, b):
    """``a - b``, canceling common affine terms (keeps lowered indices short)."""
    la, lb = linear(a), linear(b)
    if la is None or lb is None:
        return _op.sub(a, b)
    co = dict(la[0])
    for v, k in lb[0].items():
        co[v] = co.get(v, 0) - k
    return from_linear({v: k for v, k in co.items() if k}, la[1] - lb[1], a.dtype)


def _same_vars(la, lb) -> bool:
    return la is not None and lb is not None and la[0] == lb[0]


def _emin(a, b):
    la, lb = linear(a), linear(b)
    if _same_vars(la, lb):
        return a if la[1] <= lb[1] else b
    return _op.min_(a, b)


def _emax(a, b):
    la, lb = linear(a), linear(b)
    if _same_vars(la, lb):
        return a if la[1] >= lb[1] else b
    return _op.max_(a, b)


# ---------------------------------------------------------------- intervals
def interval(e, fixed, var_ext):
    """Symbolic [lo, hi] of integer ``e``; loop vars not in ``fixed`` range over [0, ext-1].

    Returns None when no bound is known (the caller then uses the whole domain).
    """
    t = type(e)
    if t is E.IntImm:
        return e, e
    if t is E.Var:
        n = var_ext.get(e)
        if n is None or e in fixed:
            return e, e
        if isinstance(n, int):
            return _op.const(0, e.dtype), _op.const(n - 1, e.dtype)
        return _op.const(0, e.dtype), _op.sub(n, 1)
    if t in (E.Add, E.Sub, E.Mul, E.FloorDiv, E.FloorMod, E.Min, E.Max):
        a = interval(e.a, fixed, var_ext)
        b = interval(e.b, fixed, var_ext)
        if a is None or b is None:
            return None
        return _combine(t, a, b)
    if t is E.Cast and e.dtype.startswith("int"):
        return interval(e.value, fixed, var_ext)
    if t is E.Select or (t is E.Call and e.op == "if_then_else"):
        x, y = (e.true_value, e.false_value) if t is E.Select else e.args[1:]
        a, b = interval(x, fixed, var_ext), interval(y, fixed, var_ext)
        if a is None or b is None:
            return None
        return _emin(a[0], b[0]), _emax(a[1], b[1])
    return None


def _const(x):
    return x.value if isinstance(x, E.IntImm) else None


def provably_le(a, b) -> bool:
    """True when ``a <= b`` for every value of the variables (affine terms cancel);
    False when unknown.  ``a`` and ``b`` are extents (ints or PrimExprs)."""
    la, lb = linear(as_expr(a)), linear(as_expr(b))
    return _same_vars(la, lb) and la[1] <= lb[1]


def _span(lo, hi):
    """``hi - lo + 1`` as an extent (int when constant), or None when not affine."""
    la, lh = linear(lo), linear(hi)
    if la is None or lh is None:
        return None
    co = dict(lh[0])
    for v, k in la[0].items():
        co[v] = co.get(v, 0) - k
    co = {v: k for v, k in co.items() if k}
    c = lh[1] - la[1] + 1
    return c if not co else from_linear(co, c, hi.dtype)


_BUILD = {E.Add: _op.add, E.Sub: _op.sub, E.Mul: _op.mul, E.FloorDiv: _op.floordiv,
          E.FloorMod: _op.floormod, E.Min: _op.min_, E.Max: _op.max_}


def _combine(t, a, b):
    (alo, ahi), (blo, bhi) = a, b
    if alo is ahi and blo is bhi:
        v = _BUILD[t](alo, blo)
        return v, v
    if t is E.Add:
        return _op.add(alo, blo), _op.add(ahi, bhi)
    if t is E.Sub:
        return _op.sub(alo, bhi), _op.sub(ahi, blo)
    if t is E.Min:
        return _emin(alo, blo), _emin(ahi, bhi)
    if t is E.Max:
        return _emax(alo, blo), _emax(ahi, bhi)
    c = _const(blo) if blo is bhi else None
    if t is E.Mul:
        if c is None and alo is ahi and _const(alo) is not None:
            (alo, ahi), (blo, bhi), c = (blo, bhi), (alo, ahi), _const(alo)
        if c is not None:
            lo, hi = _op.mul(alo, c), _op.mul(ahi, c)
            return (lo, hi) if c >= 0 else (hi, lo)
        vals = [_const(x) for x in (alo, ahi, blo, bhi)]
        if None in vals:
            return None
        prods = [vals[0] * vals[2], vals[0] * vals[3], vals[1] * vals[2], vals[1] * vals[3]]
        return _op.const(min(prods)), _op.const(max(prods))
    if c is None or c <= 0:
        return None
    if t is E.FloorDiv:
        split = _split_multiple(alo, ahi, c)
        if split is not None:
            # (c*q + lo_r) // c .. (c*q + hi_r) // c: the region stays affine in q, so
            # its extent is a constant (a block read through ``r // bs`` at a loop
            # over ``r``'s outer part needs just its blocks, not the whole axis)
            co, lo_r, hi_r = split
            qco = {v: k // c for v, k in co.items()}
            return (from_linear(qco, lo_r // c, alo.dtype),
                    from_linear(qco, hi_r // c, ahi.dtype))
        return _op.floordiv(alo, c), _op.floordiv(ahi, c)
    # FloorMod
    if alo is ahi:
        v = _op.floormod(alo, c)
        return v, v
    split = _split_multiple(alo, ahi, c)
    if split is not None and split[1] // c == split[2] // c:
        return _op.const(split[1] % c), _op.const(split[2] % c)
    lo, hi = _const(alo), _const(ahi)
    if lo is not None and hi is not None and lo // c == hi // c:
        return _op.const(lo % c), _op.const(hi % c)
    return _op.const(0), _op.const(c - 1)


def _split_multiple(lo, hi, c: int):
    """``(terms, lo_const, hi_const)`` when ``lo`` and ``hi`` are affine with the same
    variable terms, every coefficient a multiple of ``c`` (so ``x // c`` and ``x % c``
    depend on the constants only); else None."""
    la, lh = linear(lo), linear(hi)
    if la is None or lh is None or not la[0] or len(la[0]) != len(lh[0]):
        return None
    if any(lh[0].get(v) != k or k % c for v, k in la[0].items()):
        return None
    return la[0], la[1], lh[1]


# ---------------------------------------------------------------- inference
def attach_path(st, bounds: Bounds) -> list:
    """Loops (IterVars) enclosing the point where ``st`` is computed, outermost first."""
    p = bounds.path.get(st)
    if p is None:
        if st.attach_type == "scope":
            tgt = st.attach_stage
            leaves = tgt.leaf_iter_vars
            ivar = resolve_attach_ivar(tgt, st.attach_ivar)
            pos = next((k for k, iv in enumerate(leaves) if iv is ivar), None)
            if pos is None:
                raise LoweringError(f"stage {st.name} is attached at {tgt.name}."
                                    f"{st.attach_ivar.var.name}, which is no longer a loop of "
                                    f"{tgt.name}")
            p = attach_path(tgt, bounds) + list(leaves[:pos + 1])
        else:
            p = []
        bounds.path[st] = p
    return p


def resolve_attach_ivar(stage, ivar):
    """The leaf loop that now stands for ``ivar``: the inner part after a split (as
    Ansor's AttachMap does), the fused axis after a fuse."""
    changed = True
    while changed:
        changed = False
        for rel in stage.relations:
            if isinstance(rel, Split) and rel.parent is ivar:
                ivar, changed = rel.inner, True
            elif isinstance(rel, Fuse) and (rel.outer is ivar or rel.inner is ivar):
                ivar, changed = rel.fused, True
    return ivar


def infer_bound(sch, bodies: dict, loop_stages=None) -> Bounds:
    """Bounds of every stage in ``bodies``.  ``loop_stages`` maps a stage that only runs
    its own loops (a scan's time loop) to ``(reads, free)``: expressions standing for what
    it reads of the stages attached inside it, and ``{Var: extent}`` of their free index
    variables (relaxed to the whole extent)."""
    b = Bounds()
    reads = {st: collect_reads(body) for st, body in bodies.items()}
    loop_stages = loop_stages or {}
    for st, (body, free) in loop_stages.items():
        reads[st] = collect_reads(body)
        b.var_ext.update(free)
    for st in reversed(sch.stages):
        if st in loop_stages:
            for iv in st.leaf_iter_vars:
                b.ext[iv] = b.var_ext[iv.var] = iv.dom.extent.value
            b.root_value[st], b.preds[st] = {}, []
            continue
        if st not in bodies:
            continue
        op = st.op
        for iv in op.axis:
            lo, n = (_op.const(0), dom_extent(iv))
            if st.attach_type == "scope":
                lo, n = _attached_range(st, iv, op, bodies, reads, b)
            b.root_min[iv], b.ext[iv] = lo, n
        for iv in op.reduce_axis:
            b.root_min[iv], b.ext[iv] = iv.dom.min, dom_extent(iv)
        _pass_down(st, b)
        _pass_up(st, b)
    return b


def _attached_range(st, iv, op, bodies, reads, b: Bounds):
    """(min expr, extent) of root axis ``iv`` of attached stage ``st``."""
    dim = next(k for k, a in enumerate(op.axis) if a is iv)
    dom = dom_extent(iv)
    path = attach_path(st, b)
    fixed = {x.var for x in path}
    lo = hi = None
    for c, creads in reads.items():
        idxs = [idx for k in range(op.num_outputs) for idx in creads.get(op.output(k), ())]
        if idxs:
            _check_scope(st, c, path, b)   # once per consumer, not per access
        for idx in idxs:
            e = substitute(idx[dim], b.root_value[c])
            r = interval(e, fixed, b.var_ext)
            if r is None:
                return _op.const(0), dom
            lo = r[0] if lo is None else _emin(lo, r[0])
            hi = r[1] if hi is None else _emax(hi, r[1])
    if lo is None:
        raise LoweringError(f"stage {st.name} is attached with compute_at but nothing reads it")
    if not isinstance(dom, int):
        n = _span(lo, hi)
        if n is None or provably_le(dom, n):
            return _op.const(0), dom
        return lo, (max(n, 1) if isinstance(n, int) else n)
    la, lh = linear(lo), linear(hi)
    if _same_vars(la, lh):
        n = lh[1] - la[1] + 1
    else:
        r = interval(_op.sub(hi, lo), set(), b.var_ext)
        n = _const(r[1]) + 1 if r is not None and _const(r[1]) is not None else dom
    if n >= dom:
        return _op.const(0), dom
    return lo, max(n, 1)


def _check_scope(st, consumer, path, b: Bounds) -> None:
    outer = set(map(id, attach_path(consumer, b))) | set(map(id, consumer.leaf_iter_vars))
    for iv in path:
        if id(iv) not in outer:
            raise LoweringError(
                f"stage {st.name} is computed at {st.attach_stage.name}.{st.attach_ivar.var.name}"
                f" but is also read by stage {consumer.name}, which is outside that loop")


def _pass_down(st, b: Bounds) -> None:
    for rel in st.relations:
        if isinstance(rel, Split):
            pe = b.ext[rel.parent]
            f, b.ext[rel.outer], b.ext[rel.inner] = split_extents(pe, rel.factor, rel.nparts)
            b.factor[rel] = f
        else:
            b.ext[rel.fused] = ext_mul(b.ext[rel.outer], b.ext[rel.inner])
    for iv in st.leaf_iter_vars:
        b.var_ext[iv.var] = b.ext[iv]


def leaf_values(st, ext_of, factor_of) -> dict:
    """Every IterVar of ``st`` (root, intermediate, leaf) as an expression of its leaves.

    ``ext_of(iv)`` gives a loop's extent, ``factor_of(split)`` a split's inner factor.
    """
    vals = {iv: iv.var for iv in st.leaf_iter_vars}
    for rel in reversed(st.relations):
        if isinstance(rel, Split):
            vals[rel.parent] = _op.add(_op.mul(vals[rel.outer], factor_of(rel)), vals[rel.inner])
        elif isinstance(rel, Fuse):
            n = ext_of(rel.inner)
            vals[rel.outer] = _op.floordiv(vals[rel.fused], n)
            vals[rel.inner] = _op.floormod(vals[rel.fused], n)
    return vals


def overshoot_checks(st, vals, ext_of, leaf_ext) -> list:
    """``(iv, value < extent)`` for every non-leaf IterVar whose value can overshoot.

    A non-dividing split makes its loops cover more than the parent's extent.  Checking
    only the root axes is not enough: when the inner part of an uneven split is split
    again (or a fused axis is split), an intermediate value can overshoot while the root
    value stays in range, and the same root point is then visited twice.  So every
    derived axis whose maximum can reach its extent gets its own guard (TVM's
    MakeBoundCheck over all iter vars).  Roots come first, in axis order.
    """
    leaves = set(map(id, st.leaf_iter_vars))
    roots = list(st.op.axis) + list(st.op.reduce_axis)
    root_ids = set(map(id, roots))
    inner = [iv for rel in st.relations
             for iv in ((rel.parent,) if isinstance(rel, Split) else (rel.outer, rel.inner))
             if id(iv) not in root_ids and id(iv) not in leaves]
    out = []
    for iv in roots + inner:
        if id(iv) in leaves:
            continue
        val, n = vals[iv], ext_of(iv)
        r = interval(val, set(), leaf_ext)
        if not isinstance(n, int):
            # a symbolic tail: guarded unless provably inside, marked likely as in TVM
            if r is None or not provably_le(_op.add(r[1], 1), n):
                out.append((iv, _op.likely(_op.cmp(E.LT, val, n))))
        elif r is None or _const(r[1]) is None or _const(r[1]) >= n:
            out.append((iv, _op.cmp(E.LT, val, n)))
    return out


def _pass_up(st, b: Bounds) -> None:
    vals = leaf_values(st, b.ext.__getitem__, b.factor.__getitem__)
    op: ComputeOp = st.op
    rv, preds = {}, []
    leaf_ext = {iv.var: b.var_ext[iv.var] for iv in st.leaf_iter_vars}
    for iv, pred in overshoot_checks(st, vals, b.ext.__getitem__, leaf_ext):
        preds.append((pred, iv.iter_type == E.IterVar.CommReduce))
    for iv in list(op.axis) + list(op.reduce_axis):
        is_red = iv.iter_type != E.IterVar.DataPar
        lo = b.root_min[iv]
        val = _op.add(lo, vals[iv])
        rv[iv.var] = val
        if not is_red and st.attach_type == "scope" and not (
                isinstance(dom_extent(iv), int) and isinstance(b.ext[iv], int)):
            preds += _symbolic_region_preds(lo, val, b.ext[iv], dom_extent(iv), b)
        elif not is_red and st.attach_type == "scope" and not isinstance(lo, E.IntImm):
            dom = iv.dom.extent.value
            r2 = interval(lo, set(), b.var_ext)
            lo_min = _const(r2[0]) if r2 else None
            lo_max = _const(r2[1]) if r2 else None
            if lo_min is None or lo_min < 0:
                preds.append((_op.cmp(E.GE, val, 0), False))
            if lo_max is None or lo_max + b.ext[iv] > dom:
                preds.append((_op.cmp(E.LT, val, dom), False))
    b.root_value[st] = rv
    b.preds[st] = preds


def _symbolic_region_preds(lo, val, ext, dom, b: Bounds) -> list:
    """Guards keeping an attached stage's symbolic region inside its domain [0, dom)."""
    r = interval(lo, set(), b.var_ext)
    lo_min = _const(r[0]) if r else None
    out = []
    if lo_min is None or lo_min < 0:
        out.append((_op.cmp(E.GE, val, 0), False))
    if r is None or not provably_le(_op.add(r[1], as_expr(ext)), dom):
        out.append((_op.likely(_op.cmp(E.LT, val, as_expr(dom))), False))
    return out
