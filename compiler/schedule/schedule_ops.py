"""ScheduleOps: build the loop nest of every stage and nest attached stages inside.

Invariants of the output (see docs/CONTRACTS.md section 1):
- every loop runs from 0 with a constant extent (an expression of the shape variables
  when the shape is symbolic, or a buffer load when a reduce axis's extent reads a
  tensor); a root axis's value is
  ``root_min + offset(leaves)`` as computed by bound inference;
- a tensor's buffer holds the region [root_min, root_min + extent) of every dimension,
  so reads subtract the producer's ``root_min`` (zero for root stages and arguments);
- a reduction is split into an init nest (over the data-parallel leaves that follow the
  first reduction leaf) and an update nest, as TVM's MakeReduction does;
- stages attached at a loop are computed at the start of that loop's body, inside an
  Allocate of their buffer, in topological order.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import op as _op
from ..tir import stmt as S
from ..tir.functor import Mutator, substitute
from .bound import resolve_attach_ivar, sub_simplified
from .relations import as_expr
from .schedule import ANN_PARALLEL, ANN_UNROLL, ANN_VECTORIZE

_KIND = {ANN_PARALLEL: S.ForKind.PARALLEL, ANN_VECTORIZE: S.ForKind.VECTORIZED,
         ANN_UNROLL: S.ForKind.UNROLLED}


class TensorBinding:
    """Where a tensor lives: its buffer and the offset of each dimension."""
    __slots__ = ("buffer", "offsets")

    def __init__(self, buffer, offsets):
        self.buffer, self.offsets = buffer, tuple(offsets)


class _ToBuffer(Mutator):
    """Substitute root vars and turn tensor reads into buffer loads."""

    def __init__(self, vmap: dict, bindings: dict):
        super().__init__()
        self.vmap, self.bindings = vmap, bindings

    def visit_Var(self, v):
        return self.vmap.get(v, v)

    def visit_ProducerLoad(self, e):
        bind = self.bindings.get(e.producer)
        if bind is None:
            raise LoweringError(f"tensor {e.producer.name} is read but is neither an argument nor "
                                "computed by a stage of the schedule (pass it in args)")
        idx = tuple(sub_simplified(self.visit(i), off) for i, off in zip(e.indices, bind.offsets))
        return E.BufferLoad(bind.buffer, idx)


class _LoadsToBuffer(_ToBuffer):
    """Turn only tensor reads into buffer loads (substituting root vars inside their
    indices): for loop extents and predicates that read a tensor (a data-dependent
    reduce axis), whose other vars are already the loops' own."""

    def __init__(self, vmap: dict, bindings: dict):
        super().__init__(vmap, bindings)
        self.depth = 0

    def visit_Var(self, v):
        return super().visit_Var(v) if self.depth else v

    def visit_ProducerLoad(self, e):
        self.depth += 1
        try:
            return super().visit_ProducerLoad(e)
        finally:
            self.depth -= 1


class OpsBuilder:
    """``opaque`` maps stages that are not compute stages (extern, scan) to a function
    ``(builder, stage) -> Stmt`` building their statement."""

    def __init__(self, sch, bodies, bounds, bindings, alloc_buffers, opaque=None):
        self.sch, self.bodies, self.bounds = sch, bodies, bounds
        self.bindings, self.alloc_buffers = bindings, alloc_buffers
        self.opaque = opaque or {}
        self.attached: dict = {}
        for st in sch.stages:
            if st in bodies and st.attach_type == "scope":
                iv = resolve_attach_ivar(st.attach_stage, st.attach_ivar)
                self.attached.setdefault((id(st.attach_stage), id(iv)), []).append(st)

    def build(self) -> S.Stmt:
        parts = [self.stage(st) for st in self.sch.stages
                 if (st in self.bodies or st in self.opaque) and st.attach_type == "root"]
        return S.seq(*parts)

    # ------------------------------------------------------------------ per stage
    def stage(self, st) -> S.Stmt:
        if st in self.opaque:
            return self.opaque[st](self, st)
        op: ComputeOp = st.op
        vmap = self.bounds.root_value[st]
        dependent = any(not isinstance(iv.dom.extent, E.IntImm) for iv in op.reduce_axis)
        if dependent:
            # a split of an extent read from a tensor puts that read into the root
            # values (the outer loop's stride): they read its buffer too
            loads = _LoadsToBuffer(vmap, self.bindings)
            vmap = {k: loads.visit(v) for k, v in vmap.items()}
        tb = _ToBuffer(vmap, self.bindings)
        body = self.bodies[st]
        outs = [self.bindings[op.output(k)] for k in range(op.num_outputs)]
        sp_idx = tuple(sub_simplified(vmap[iv.var], o)
                       for iv, o in zip(op.axis, outs[0].offsets))
        preds = self.bounds.preds[st]
        sp_pred = _op.all_(*[p for p, red in preds if not red])
        if not op.reduce_axis:
            stores = [S.BufferStore(o.buffer, tb.visit(b), sp_idx) for o, b in zip(outs, body)]
            return self.nest(st, st.leaf_iter_vars, _guard(sp_pred, S.seq(*stores)))
        red0: E.Reduce = body[0]
        init_vals = red0.init or red0.combiner.identity_element
        init = S.seq(*[S.BufferStore(o.buffer, tb.visit(v), sp_idx)
                       for o, v in zip(outs, init_vals)])
        pred = _op.all_(*[p for p, _ in preds])
        if dependent:
            # a split of an extent read from a tensor guards its tail with that read
            pred = _LoadsToBuffer(self.bounds.root_value[st], self.bindings).visit(pred)
        cond = _op.logical_and(pred, tb.visit(red0.condition))
        update = _guard(cond, self.update_stmt(red0, outs, sp_idx, tb))
        leaves = st.leaf_iter_vars
        first = next((k for k, iv in enumerate(leaves) if iv.iter_type != E.IterVar.DataPar),
                     len(leaves))
        # mixed (fused data+reduce) leaves stay in the init nest so every output is set
        init_leaves = [iv for iv in leaves[first:] if iv.iter_type != E.IterVar.CommReduce]
        init_nest = self.nest(st, init_leaves, _guard(sp_pred, init), attach=False)
        upd_nest = self.nest(st, leaves[first:], update)
        return self.nest(st, leaves[:first], S.seq(init_nest, upd_nest))

    def update_stmt(self, red: E.Reduce, outs, idx, tb) -> S.Stmt:
        comb = red.combiner
        loads = [E.BufferLoad(o.buffer, idx) for o in outs]
        srcs = [tb.visit(s) for s in red.source]
        if len(outs) == 1:
            val = substitute(comb.result[0], {comb.lhs[0]: loads[0], comb.rhs[0]: srcs[0]})
            return S.BufferStore(outs[0].buffer, val, idx)
        # multi-output: bind all inputs first so every result sees the old accumulators
        lets, vmap = [], {}
        for k, (lv, rv) in enumerate(zip(comb.lhs, comb.rhs)):
            a, b = E.Var(f"{lv.name}_v", lv.dtype), E.Var(f"{rv.name}_v", rv.dtype)
            lets += [(a, loads[k]), (b, srcs[k])]
            vmap[lv], vmap[rv] = a, b
        stmt = S.seq(*[S.BufferStore(o.buffer, substitute(r, vmap), idx)
                       for o, r in zip(outs, comb.result)])
        for v, val in reversed(lets):
            stmt = S.LetStmt(v, val, stmt)
        return stmt

    # ------------------------------------------------------------------ loops
    def nest(self, st, leaves, inner: S.Stmt, attach: bool = True) -> S.Stmt:
        stmt = inner
        tb = None
        for iv in reversed(leaves):
            if attach:
                stmt = self.with_attached(st, iv, stmt)
            ext = as_expr(self.bounds.ext[iv], iv.var.dtype)
            if not isinstance(ext, E.IntImm) and isinstance(st.op, ComputeOp):
                # an extent read from a tensor (a data-dependent reduce axis, as sparse
                # kernels have) reads its buffer like the body does; made only then,
                # since nearly every loop of a tuning candidate is constant
                if tb is None:
                    tb = _LoadsToBuffer(self.bounds.root_value[st], self.bindings)
                ext = tb.visit(ext)
            thread = st.thread_binds.get(iv)
            if thread is not None:   # TVM's launch: the loop var becomes the thread index
                stmt = S.AttrStmt(thread, "thread_extent", ext,
                                  substitute(stmt, {iv.var: thread.var}))
                continue
            ann = tuple(st.pragmas.get(iv, ()))
            kind = _KIND.get(st.annotations.get(iv), S.ForKind.SERIAL)
            stmt = S.For(iv.var, _op.const(0, iv.var.dtype), ext, kind, stmt, ann)
        return stmt

    def with_attached(self, st, iv, stmt: S.Stmt) -> S.Stmt:
        kids = self.attached.get((id(st), id(iv)))
        if not kids:
            return stmt
        stmt = S.seq(*[self.stage(k) for k in kids], stmt)
        for k in reversed(kids):
            for i in range(k.op.num_outputs):
                buf = self.alloc_buffers.get(k.op.output(i))
                if buf is not None:
                    stmt = S.Allocate(buf, stmt)
        return stmt


def _guard(cond, stmt):
    if isinstance(cond, E.IntImm):
        return stmt if cond.value else S.Evaluate(_op.const(0))
    return S.IfThenElse(cond, stmt)
