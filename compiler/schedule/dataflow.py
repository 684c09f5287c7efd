"""Schedule primitives that rewrite the dataflow: cache_read, cache_write, rfactor.

Invariants: ops are immutable, so a rewrite makes new ops and re-points stages at them
(``Stage.set_op``); every op a stage ever had stays in ``stage_map`` so user tensors stay
valid handles.  After any rewrite, all readers of a replaced tensor read the new one
(``_replace_dataflow``) and ``Schedule.stages`` stays topologically sorted.
"""
from __future__ import annotations

from ..errors import ScheduleError
from ..te.tensor import ComputeOp, Tensor
from ..tir import expr as E
from ..tir import op as _op
from ..tir.analysis import free_vars, producers_read
from ..tir.functor import Mutator, substitute
from .bound import leaf_values, overshoot_checks
from .relations import dom_extent


class _TensorRewriter(Mutator):
    """Replace reads of tensors per ``tmap`` (Tensor -> Tensor) and vars per ``vmap``."""

    def __init__(self, tmap: dict, vmap: dict | None = None):
        super().__init__()
        self.tmap, self.vmap = tmap, vmap or {}

    def visit_Var(self, v):
        return self.vmap.get(v, v)

    def visit_ProducerLoad(self, e):
        idx = self.visit_tuple(e.indices)
        t = self.tmap.get(e.producer, e.producer)
        if t is e.producer and idx is e.indices:
            return e
        return E.ProducerLoad(t, idx)

    def visit_Reduce(self, e):
        src = self.visit_tuple(e.source)
        cond = self.visit(e.condition)
        axis = tuple(self.vmap.get(a, a) for a in e.axis)
        if src is e.source and cond is e.condition and all(a is b for a, b in zip(axis, e.axis)):
            return e
        return E.Reduce(e.combiner, src, axis, cond, e.value_index, e.init)


def _rewrite_op(op: ComputeOp, tmap: dict) -> ComputeOp:
    rw = _TensorRewriter(tmap)
    body = tuple(rw.visit(b) for b in op.body)
    if all(a is b for a, b in zip(body, op.body)):
        return op
    return ComputeOp(op.name, op.tag, op.attrs, op.axis, op.reduce_axis, body)


def _replace_dataflow(sch, tmap: dict, skip=()) -> None:
    """Make every stage (except ``skip``) read through ``tmap``; propagate new ops."""
    for st in sch.stages:
        if st in skip or not isinstance(st.op, ComputeOp):
            continue
        new = _rewrite_op(st.op, tmap)
        if new is not st.op:
            old = st.op
            _swap_op_keep_loops(st, new)
            sch.stage_map[new] = st
            for i in range(old.num_outputs):
                tmap[old.output(i)] = new.output(i)
    sch.outputs = [_latest(sch, op) for op in sch.outputs]


def _swap_op_keep_loops(st, new_op) -> None:
    """Replace the op of ``st`` by one with the same axes (loop structure is kept)."""
    st.op = new_op


def _latest(sch, op):
    return sch.stage_map[op].op


def _insert_before(sch, new_stage, before) -> None:
    sch.stages.insert(sch.stages.index(before), new_stage)


def _stage_of(sch, tensor, what):
    if not isinstance(tensor, Tensor):
        raise ScheduleError(f"{what}: expected a Tensor, got {tensor!r}")
    st = sch.stage_map.get(tensor.op)
    if st is None:
        raise ScheduleError(f"{what}: tensor {tensor.name} is not part of this schedule")
    return st, st.op.output(tensor.value_index)


def cache_read(sch, tensor, scope: str, readers):
    """Insert a copy stage ``<name>.<scope>`` of ``tensor`` read by ``readers`` instead."""
    src_stage, cur = _stage_of(sch, tensor, "cache_read")
    if not isinstance(readers, (list, tuple)):
        readers = [readers]
    reader_stages = []
    for r in readers:
        st = sch[r]
        if cur not in st.op.input_tensors:
            raise ScheduleError(f"cache_read of {cur.name}: stage {st.name} does not read it")
        reader_stages.append(st)
    if not reader_stages:
        raise ScheduleError(f"cache_read of {cur.name}: needs at least one reader")
    shape = cur.shape
    names = [f"ax{k}" for k in range(len(shape))]
    axis = [E.IterVar(E.Range(_op.const(0), s), E.Var(n), E.IterVar.DataPar)
            for n, s in zip(names, shape)]
    op = ComputeOp(f"{cur.op.name}.{scope}", "", {}, axis, (),
                   (E.ProducerLoad(cur, tuple(iv.var for iv in axis)),))
    new_stage = type(src_stage)(op, sch)
    new_stage.scope = scope
    sch.stage_map[op] = new_stage
    # right after the source, as Ansor numbers stages (stage ids go into tuning records)
    sch.stages.insert(sch.stages.index(src_stage) + 1, new_stage)
    # One pass in topological order: a reader reads the cache instead of ``cur``, and
    # every stage (reader or not) reads the new op of any stage rewritten before it.
    # A reader downstream of another reader needs both at once.
    follow: dict = {}
    for st in sch.stages:
        if st is new_stage or not isinstance(st.op, ComputeOp):
            continue
        tmap = dict(follow)
        if st in reader_stages:
            tmap[cur] = op.output(0)
        new = _rewrite_op(st.op, tmap)
        if new is not st.op:
            old, st.op = st.op, new
            sch.stage_map[new] = st
            for i in range(old.num_outputs):
                follow[old.output(i)] = new.output(i)
    sch.outputs = [_latest(sch, o) for o in sch.outputs]
    return op.output(0)


def _fresh_axes(op: ComputeOp, suffix: str = ""):
    """Copies of ``op``'s axes and reduce axes plus the var map old -> new."""
    vmap, axis, raxis = {}, [], []
    for iv in op.axis:
        n = E.IterVar(iv.dom, E.Var(iv.var.name + suffix, iv.var.dtype), iv.iter_type)
        vmap[iv.var] = n.var
        axis.append(n)
    for iv in op.reduce_axis:
        dom = iv.dom
        if not isinstance(dom.extent, E.IntImm):
            # an extent read from a tensor at the spatial axes (a sparse row's length)
            # must read it at the copies' axes
            dom = E.Range(substitute(dom.min, vmap), substitute(dom.extent, vmap))
        n = E.IterVar(dom, E.Var(iv.var.name + suffix, iv.var.dtype), iv.iter_type)
        vmap[iv.var] = n.var
        raxis.append(n)
    return axis, raxis, vmap


def _remap_reduce_axes(body, raxis_old, raxis_new):
    amap = {o: n for o, n in zip(raxis_old, raxis_new)}
    out = []
    for b in body:
        if isinstance(b, E.Reduce):
            b = E.Reduce(b.combiner, b.source, tuple(amap.get(a, a) for a in b.axis),
                         b.condition, b.value_index, b.init)
        out.append(b)
    return tuple(out)


def cache_write(sch, tensor, scope: str):
    """Compute ``tensor`` into a new stage ``<name>.<scope>``; the original stage copies it."""
    st, cur = _stage_of(sch, tensor, "cache_write")
    op = st.op
    if not isinstance(op, ComputeOp):
        raise ScheduleError(f"cache_write: stage {st.name} is a placeholder")
    if st.relations or st.attach_type == "inline":
        raise ScheduleError(f"cache_write on stage {st.name}: must be applied before the stage is "
                            "split, fused or inlined")
    axis, raxis, vmap = _fresh_axes(op, "_c")
    rw = _TensorRewriter({}, vmap)
    body = _remap_reduce_axes(tuple(rw.visit(b) for b in op.body), op.reduce_axis, raxis)
    cache_op = ComputeOp(f"{op.name}.{scope}", op.tag, op.attrs, axis, raxis, body)
    cache_stage = type(st)(cache_op, sch)
    cache_stage.scope = scope
    sch.stage_map[cache_op] = cache_stage
    _insert_before(sch, cache_stage, st)
    # The copy keeps the original op's axes (TVM's CacheWriteWithReLayout): the user's
    # ``C.op.axis`` stays the handle for scheduling the rewritten stage ``s[C]``.
    idx = tuple(iv.var for iv in op.axis)
    copy_body = tuple(E.ProducerLoad(cache_op.output(i), idx) for i in range(op.num_outputs))
    copy_op = ComputeOp(op.name, op.tag, op.attrs, op.axis, (), copy_body)
    st.set_op(copy_op)
    sch.stage_map[copy_op] = st
    tmap = {op.output(i): copy_op.output(i) for i in range(op.num_outputs)}
    _replace_dataflow(sch, tmap, skip=[st, cache_stage])
    outs = [cache_op.output(i) for i in range(op.num_outputs)]
    return outs[0] if len(outs) == 1 else outs


def rfactor(sch, tensor, axis, factor_axis: int = 0):
    """Factor the reduction of ``tensor`` over leaf ``axis`` into a new stage (TVM rfactor).

    The new tensor has ``axis`` as a data-parallel dimension at position ``factor_axis``
    and reduces over the other reduce leaves; the original stage then reduces the new
    tensor over a fresh axis of ``axis``'s extent.
    """
    st, cur = _stage_of(sch, tensor, "rfactor")
    op = st.op
    if not isinstance(op, ComputeOp) or not op.reduce_axis:
        raise ScheduleError(f"rfactor on stage {st.name}: the stage is not a reduction")
    if op.num_outputs != 1:
        raise ScheduleError(f"rfactor on stage {st.name}: multi-output reductions are not "
                            "supported")
    st._check_leaf(axis, "rfactor")
    if axis.iter_type != E.IterVar.CommReduce:
        raise ScheduleError(f"rfactor on stage {st.name}: axis {axis.var.name} is not a "
                            "reduction axis")
    for iv in op.reduce_axis:
        if producers_read(iv.dom.extent):
            raise ScheduleError(f"rfactor on stage {st.name}: reduce axis {iv.var.name} has "
                                f"the data-dependent extent {iv.dom.extent}; rfactor needs "
                                "extents that do not read tensors")
    ndim = len(op.axis)
    if not 0 <= factor_axis <= ndim:
        raise ScheduleError(f"rfactor on stage {st.name}: factor_axis {factor_axis} out of "
                            f"range [0, {ndim}]")
    red = op.body[0]
    root_vals, preds = _reduce_root_values(st, op)
    # the RF stage: spatial copies + the factor axis, reduce over the other reduce leaves
    sp_axis, _, sp_map = _fresh_axes(op)
    fax = E.IterVar(E.Range(_op.const(0), axis.dom.extent), E.Var(axis.var.name), E.IterVar.DataPar)
    leaf_map = {axis.var: fax.var}
    new_raxis = []
    for lv in st.leaf_iter_vars:
        if lv is axis or lv.iter_type == E.IterVar.DataPar:
            continue
        if lv.iter_type != E.IterVar.CommReduce:
            raise ScheduleError(f"rfactor on stage {st.name}: axis {lv.var.name} mixes data and "
                                "reduction axes")
        n = E.IterVar(E.Range(_op.const(0), lv.dom.extent), E.Var(lv.var.name),
                      E.IterVar.CommReduce)
        leaf_map[lv.var] = n.var
        new_raxis.append(n)
    vmap = dict(sp_map)
    for rv, val in root_vals.items():
        vmap[rv] = substitute(val, leaf_map)
    rw = _TensorRewriter({}, vmap)
    src = tuple(rw.visit(s) for s in red.source)
    cond = rw.visit(red.condition)
    for p in preds:
        cond = _op.logical_and(cond, substitute(p, leaf_map))
    rf_axis = list(sp_axis)
    rf_axis.insert(factor_axis, fax)
    rf_body: tuple
    if new_raxis:
        rf_body = (E.Reduce(red.combiner, src, tuple(new_raxis), cond, 0, ()),)
    else:
        # if_then_else, not select: select evaluates both sides, and the source reads
        # past the tensor where an uneven split's guard is false (LLVM took the
        # out-of-bounds read of a local buffer for undefined behaviour: the kernel hung)
        rf_body = (_op.if_then_else(cond, src[0], red.combiner.identity_element[0]),)
    rf_op = ComputeOp(f"{op.name}.rf", op.tag, op.attrs, rf_axis, new_raxis, rf_body)
    rf_stage = type(st)(rf_op, sch)
    sch.stage_map[rf_op] = rf_stage
    _insert_before(sch, rf_stage, st)
    # the original stage reduces the rfactor tensor
    out_axis, _, _ = _fresh_axes(op)
    kv = E.IterVar(E.Range(_op.const(0), axis.dom.extent), E.Var(axis.var.name + "_v"),
                   E.IterVar.CommReduce)
    idx = [iv.var for iv in out_axis]
    idx.insert(factor_axis, kv.var)
    body = (E.Reduce(red.combiner, (E.ProducerLoad(rf_op.output(0), tuple(idx)),), (kv,),
                     _op.const(True), 0, red.init),)
    new_op = ComputeOp(op.name, op.tag, op.attrs, out_axis, (kv,), body)
    st.set_op(new_op)
    sch.stage_map[new_op] = st
    _replace_dataflow(sch, {cur: new_op.output(0)}, skip=[st, rf_stage])
    return rf_op.output(0)


def _reduce_root_values(st, op):
    """Root reduce vars as expressions of the stage's leaf vars, and the guards of the
    reduction's uneven splits.

    Guards that mention a data-parallel leaf are dropped: rfactor gives the new stages
    fresh spatial axes over the whole domain (the stage's spatial splits are reset, as
    in TVM), so those loop variables no longer exist.
    """
    def factor_of(rel):
        return rel.factor if rel.factor is not None else dom_extent(rel.inner)

    vals = leaf_values(st, dom_extent, factor_of)
    leaf_ext = {iv.var: dom_extent(iv) for iv in st.leaf_iter_vars}
    spatial = {iv.var for iv in st.leaf_iter_vars if iv.iter_type == E.IterVar.DataPar}
    preds = [p for iv, p in overshoot_checks(st, vals, dom_extent, leaf_ext)
             if iv.iter_type != E.IterVar.DataPar and not (set(free_vars(p)) & spatial)]
    out = {}
    for iv in op.reduce_axis:
        out[iv.var] = _op.add(vals[iv], iv.dom.min)
    return out, preds

