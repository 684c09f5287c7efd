"""Lowering of the stages that are not compute stages: te.extern and te.scan.

Role: ``plan_opaque`` runs inside ``schedule_to_primfunc`` after the argument buffers are
bound.  It gives every extern/scan output a whole-tensor buffer (allocated at the root
unless it is an argument), binds a scan's init, update and state placeholder tensors to
its output buffer, and returns what bound inference and ScheduleOps need:
- ``loop_stages`` (for ``infer_bound``): a scan's time loop reads its updates at row
  ``scan_axis + init_rows`` and over their whole other dimensions;
- ``builders`` (for ``OpsBuilder``): the statement of each such stage -- an extern's
  body with its placeholder buffers replaced by the real ones, a scan's time loop (the
  stages attached to it are nested inside by ScheduleOps).

Invariants: these stages only run at the root (the schedule refuses compute_at on them);
an extern stage reads and writes whole buffers, so every input needs a buffer of its
own with zero offsets (an inlined or compute_at'ed producer is a LoweringError).
"""
from __future__ import annotations

from ..errors import LoweringError
from ..te.extern import ExternOp
from ..te.scan import ScanOp
from ..tir import expr as E
from ..tir import op as _op
from ..tir import stmt as S
from ..tir.functor import Mutator
from .schedule_ops import TensorBinding

__all__ = ["plan_opaque", "OpaquePlan"]


class OpaquePlan:
    """What ``plan_opaque`` found: see the module docstring."""

    def __init__(self):
        self.alloc: dict = {}          # Tensor -> Buffer allocated at the root
        self.shared: set = set()       # tensors bound to a scan's buffer (no own buffer)
        self.loop_stages: dict = {}    # Stage -> (reads, {Var: extent})
        self.builders: dict = {}       # Stage -> (OpsBuilder, Stage) -> Stmt


def plan_opaque(sch, bindings: dict, buffer_name) -> OpaquePlan:
    """Bind the buffers of extern/scan stages into ``bindings`` (mutated)."""
    plan = OpaquePlan()
    for st in sch.stages:
        op = st.op
        if not isinstance(op, (ExternOp, ScanOp)):
            continue
        for k in range(op.num_outputs):
            t = op.output(k)
            if t not in bindings:
                buf = S.decl_buffer(t.shape, t.dtype, buffer_name(t), st.scope)
                plan.alloc[t] = buf
                bindings[t] = TensorBinding(buf, [_op.const(0)] * len(t.shape))
        if isinstance(op, ExternOp):
            plan.builders[st] = _build_extern
        else:
            _plan_scan(st, op, bindings, plan)
    return plan


def _plan_scan(st, op: ScanOp, bindings: dict, plan: OpaquePlan) -> None:
    reads, free = [], {}
    row = _op.add(op.scan_axis.var, op.init_rows)
    for k in range(op.num_outputs):
        bind = bindings[op.output(k)]
        for t in (op.init[k], op.update[k], op.state_placeholder[k]):
            bindings[t] = bind
            plan.shared.add(t)
        upd = op.update[k]
        idx = [row]
        for d, ext in enumerate(upd.shape[1:], 1):
            v = E.Var(f"{op.name}.j{d}")
            free[v] = int(ext.value)
            idx.append(v)
        reads.append(E.ProducerLoad(upd, tuple(idx)))
    plan.loop_stages[st] = (tuple(reads), free)
    plan.builders[st] = _build_scan


def _build_scan(ob, st) -> S.Stmt:
    return ob.nest(st, st.leaf_iter_vars, S.seq())


def _build_extern(ob, st) -> S.Stmt:
    op: ExternOp = st.op
    bmap: dict = {}
    pairs = list(zip(op.input_placeholders, op.inputs))
    pairs += [(b, op.output(k)) for k, b in enumerate(op.output_placeholders)]
    for ph, t in pairs:
        bind = ob.bindings.get(t)
        if bind is None:
            raise LoweringError(f"lower: extern stage {op.name} reads tensor {t.name}, which "
                                "has no buffer of its own (was it compute_inline'd?); an "
                                "extern stage needs its inputs in memory")
        if any(not (isinstance(o, E.IntImm) and o.value == 0) for o in bind.offsets):
            raise LoweringError(f"lower: extern stage {op.name} reads tensor {t.name}, which "
                                "is computed only in part (compute_at); expected the whole "
                                "tensor at the root")
        bmap[ph] = bind.buffer
    return _Rebind(bmap).visit(op.body)


class _Rebind(Mutator):
    """Replace placeholder buffers (their accesses and data pointers) by real ones."""

    def __init__(self, bmap: dict):
        super().__init__()
        self.bmap = bmap
        self.vmap = {ph.data: real.data for ph, real in bmap.items()}

    def visit_Var(self, v):
        return self.vmap.get(v, v)

    def visit_BufferLoad(self, e):
        idx = self.visit_tuple(e.indices)
        buf = self.bmap.get(e.buffer, e.buffer)
        return e if idx is e.indices and buf is e.buffer else E.BufferLoad(buf, idx)

    def visit_BufferStore(self, s):
        idx, val = self.visit_tuple(s.indices), self.visit(s.value)
        buf = self.bmap.get(s.buffer, s.buffer)
        if idx is s.indices and val is s.value and buf is s.buffer:
            return s
        return S.BufferStore(buf, val, idx)
