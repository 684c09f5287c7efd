"""Layout rewrite: store a layout-free weight in the order the tuned kernel reads it.

A compute op may name some of its inputs in ``attrs["layout_free_placeholders"]`` (topi's
dense, matmul, batch_matmul and conv2d do, as TVM's).  Such a placeholder is a weight: its
layout is ours to choose.  After a state's steps are replayed, the stage that reads the
weight has split every axis the weight is indexed by into leaves; the rewritten weight has
one dimension per leaf, in the stage's loop order, so the kernel walks it contiguously
(TVM's ``ComputeDAG::RewriteLayout``, written here from its description).

Three options, TVM's ``LayoutRewriteOption``:
- NO_REWRITE: the DAG as written.
- REWRITE_FOR_PRE_TRANSFORMED: the weight placeholder is replaced by one of the new shape;
  the caller transforms the data (``LayoutTransform.apply``) once.  Tuning measures this.
- INSERT_TRANSFORM_STAGE: a compute stage inside the function makes the new layout from
  the original weight, so the function keeps the original signature.

Invariants:
- The rewrite is a bijection between the weight's elements and the new array: it is done
  only when every split on the way is exact (the factor divides the extent), each weight
  index is a distinct root axis of the reading stage, and exactly one stage reads the
  weight.  A fused loop counts as the loops it fused, in order.  A reader attached
  inside another stage must split every data axis it indexes the weight with (else the
  tiles are the consumer's, not in its split tree).  Otherwise the weight keeps its
  layout (no error: it is an optimisation).
- The new DAG has the same stages in the same order (PRE_TRANSFORMED) or the same order
  with one transform stage right after the original weight (INSERT_TRANSFORM_STAGE); step
  stage ids are translated for the latter, so every state replays unchanged.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, fields, replace

import numpy as np

from compiler import te
from compiler.schedule.relations import Fuse, Split
from compiler.te.tensor import ComputeOp, PlaceholderOp, Tensor, post_order_ops
from compiler.tir import expr as E
from compiler.tir import op as tir_op
from compiler.tir.functor import Mutator, Visitor

from .errors import AutoSchedError
from .steps.registry import apply_step, apply_to_schedule


class LayoutRewriteOption(enum.IntEnum):
    NO_REWRITE = 0
    INSERT_TRANSFORM_STAGE = 1
    REWRITE_FOR_PRE_TRANSFORMED = 2

    @staticmethod
    def get_target_default(target, in_relay_integration: bool = False) -> LayoutRewriteOption:
        """TVM's defaults on CPUs: tuning measures a pre-transformed weight; a relay build
        inserts the transform stage (and folds it into the constant weight)."""
        kind = getattr(getattr(target, "kind", None), "name", str(target).split()[0])
        if kind != "llvm":
            return LayoutRewriteOption.NO_REWRITE
        return (LayoutRewriteOption.INSERT_TRANSFORM_STAGE if in_relay_integration
                else LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED)


def as_option(value) -> LayoutRewriteOption:
    """Accept the enum, its int value, or False/True (True = PRE_TRANSFORMED)."""
    if value is True:
        return LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED
    try:
        return LayoutRewriteOption(int(value or 0))
    except (TypeError, ValueError):
        raise AutoSchedError(f"layout_rewrite={value!r}: expected a LayoutRewriteOption "
                             f"({', '.join(o.name for o in LayoutRewriteOption)})") from None


@dataclass(frozen=True)
class LayoutTransform:
    """Original weight -> rewritten weight: split every axis into its leaves (a row-major
    reshape), then put the leaves in loop order (a transpose)."""
    name: str                 # the weight placeholder's name
    arg_index: int            # its position among the DAG's tensors (function arguments)
    orig_shape: tuple
    split_shape: tuple        # the leaves of axis 0, then of axis 1, ... (extents)
    perm: tuple               # split_shape dims in the new layout's order
    new_shape: tuple

    def apply(self, data) -> np.ndarray:
        arr = np.asarray(data)
        if tuple(arr.shape) != self.orig_shape:
            raise AutoSchedError(f"layout transform of {self.name}: got shape "
                                 f"{tuple(arr.shape)}, expected {self.orig_shape}")
        return np.ascontiguousarray(arr.reshape(self.split_shape).transpose(self.perm))


@dataclass(frozen=True)
class _Plan:
    """The rewrite of one weight: the reader op of the DAG and the new index expressions."""
    weight: PlaceholderOp
    reader: ComputeOp
    leaves: tuple             # per weight dim: ((stride, extent), ...) outermost first
    order: tuple              # (dim, leaf) pairs in the new layout's order
    transform: LayoutTransform


# ---------------------------------------------------------------------- planning
def _extent(iv) -> int:
    """A loop's static extent (the schedule's full-domain ranges are constants)."""
    ext = iv.dom.extent
    if not isinstance(ext, E.IntImm):
        raise AutoSchedError(f"layout rewrite: loop {iv.var.name} has a symbolic extent "
                             f"{ext}; the auto-scheduler needs static shapes")
    return ext.value


def _leaves_of(stage, root) -> tuple | None:
    """((leaf iv, stride, extent), ...) of ``root``'s split tree, outermost first; None if
    a split is not exact.  Fuses are looked through (``_unfused_order``)."""
    out = [(root, 1, _extent(root))]
    for rel in stage.relations:
        if not isinstance(rel, Split):
            continue
        for k, (iv, stride, ext) in enumerate(out):
            if iv is rel.parent:
                o_ext, i_ext = _extent(rel.outer), _extent(rel.inner)
                if o_ext * i_ext != ext:
                    return None
                out[k:k + 1] = [(rel.outer, stride * i_ext, o_ext), (rel.inner, stride, i_ext)]
                break
    return tuple(out)


def _unfused_order(stage) -> list:
    """The stage's leaves with every fused loop expanded into the loops it fused (outer
    first): a fused loop walks them in that order, so the layout follows it."""
    parts = {id(r.fused): (r.outer, r.inner) for r in stage.relations if isinstance(r, Fuse)}
    out: list = []

    def expand(iv):
        if id(iv) in parts:
            for sub in parts[id(iv)]:
                expand(sub)
        else:
            out.append(iv)

    for iv in stage.leaf_iter_vars:
        expand(iv)
    return out


def _weight_indices(op, weight) -> tuple | None:
    """The single index tuple ``op`` reads ``weight`` with, or None if it reads it in
    several ways (or not at all)."""
    seen = []

    class _Find(Visitor):
        def visit_ProducerLoad(self, e):
            if e.producer.op is weight:
                seen.append(e.indices)
            self.visit(e.indices)

    _Find().visit(tuple(op.body))
    if not seen or any(len(s) != len(seen[0]) or any(a is not b for a, b in zip(s, seen[0]))
                       for s in seen):
        return None
    return seen[0]


def _root_positions(op, indices) -> tuple | None:
    roots = list(op.axis) + list(op.reduce_axis)
    pos = []
    for ix in indices:
        hit = [k for k, iv in enumerate(roots) if iv.var is ix]
        if not hit or hit[0] in pos:
            return None
        pos.append(hit[0])
    return tuple(pos)


def layout_free_ops(dag) -> frozenset:
    """The placeholder ops some compute op of ``dag`` names layout-free."""
    return frozenset(w.op if isinstance(w, Tensor) else w for op in dag.ops
                     if isinstance(op, ComputeOp)
                     for w in op.attrs.get("layout_free_placeholders", ()))


def has_layout_free(dag) -> bool:
    """Whether some compute op of ``dag`` names a layout-free placeholder."""
    return bool(layout_free_ops(dag))


def plan_rewrites(dag, sch) -> list:
    """One _Plan per layout-free weight of ``dag`` that the replayed ``sch`` allows."""
    plans = []
    for op in dag.ops:
        if not isinstance(op, ComputeOp):
            continue
        for w in op.attrs.get("layout_free_placeholders", ()):
            plan = _plan_one(dag, sch, op, w.op if isinstance(w, Tensor) else w)
            if plan is not None:
                plans.append(plan)
    return plans


def _plan_one(dag, sch, op, weight):
    if not isinstance(weight, PlaceholderOp) or weight not in dag.ops:
        return None
    if sum(1 for o in dag.ops if any(t.op is weight for t in o.input_tensors)) != 1:
        return None
    idx = _weight_indices(op, weight)
    readers = [st for st in sch.stages if any(t.op is weight for t in st.op.input_tensors)]
    if idx is None or len(readers) != 1:
        return None
    stage = readers[0]
    sop = stage.op
    if (len(sop.axis), len(sop.reduce_axis)) != (len(op.axis), len(op.reduce_axis)):
        return None                          # rfactor changed the reader's axes
    pos, spos = _root_positions(op, idx), _root_positions(sop, _weight_indices(sop, weight) or ())
    if pos is None or pos != spos:
        return None
    roots = list(sop.axis) + list(sop.reduce_axis)
    maybe = [_leaves_of(stage, roots[p]) for p in pos]
    trees = [t for t in maybe if t is not None]
    if len(trees) != len(maybe):
        return None
    if stage.attach_type == "scope" and any(
            len(t) == 1 and p < len(sop.axis) for t, p in zip(trees, pos)):
        # an attached reader whose data axis is tiled only by its consumer's loops: the
        # weight's tiles are not in this stage's split tree, and moving the whole axis
        # would only spread each tile's reads (measured 20-30% slower on topi's conv)
        return None
    where = {id(iv): (d, k) for d, tree in enumerate(trees) for k, (iv, _, _) in enumerate(tree)}
    order = tuple(where[id(iv)] for iv in _unfused_order(stage) if id(iv) in where)
    if len(order) != len(where):
        return None
    flat = [(d, k) for d, tree in enumerate(trees) for k in range(len(tree))]
    split_shape = tuple(e for tree in trees for _, _, e in tree)
    perm = tuple(flat.index(dk) for dk in order)
    transform = LayoutTransform(weight.name, _arg_index(dag, weight),
                                tuple(int(s.value) for s in weight.shape), split_shape, perm,
                                tuple(split_shape[p] for p in perm))
    leaves = tuple(tuple((s, e) for _, s, e in tree) for tree in trees)
    return _Plan(weight, op, leaves, order, transform)


def _arg_index(dag, weight) -> int:
    for k, t in enumerate(dag.tensors):
        if t.op is weight:
            return k
    return -1


# ---------------------------------------------------------------------- rewriting
class _Reindex(Mutator):
    """Reads of a weight go to its replacement, at the leaf indices of the new layout."""

    def __init__(self, tmap: dict, plans: dict):
        super().__init__()
        self.tmap, self.plans = tmap, plans

    def visit_ProducerLoad(self, e):
        idx = self.visit_tuple(e.indices)
        plan = self.plans.get(e.producer.op)
        if plan is not None:
            per_dim = [_leaf_exprs(ix, plan.leaves[d]) for d, ix in enumerate(idx)]
            return E.ProducerLoad(self.tmap[e.producer], tuple(per_dim[d][k]
                                                               for d, k in plan.order))
        t = self.tmap.get(e.producer, e.producer)
        return e if (t is e.producer and idx is e.indices) else E.ProducerLoad(t, idx)


def _leaf_exprs(ix, leaves) -> list:
    """``ix`` = sum(leaf_k * stride_k): each leaf as ``(ix // stride) % extent``."""
    out = []
    for k, (stride, ext) in enumerate(leaves):
        e = ix if stride == 1 else tir_op.floordiv(ix, tir_op.const(stride, ix.dtype))
        if k > 0:                            # the outermost leaf needs no wrap-around
            e = tir_op.floormod(e, tir_op.const(ext, ix.dtype))
        out.append(e)
    return out


def _transform_op(plan: _Plan) -> Tensor:
    """The stage that makes the new layout from the original weight."""
    w = plan.weight.output(0)
    t = plan.transform

    def body(*leaf):
        idx = []
        for d, leaves in enumerate(plan.leaves):
            acc = None
            for k, (stride, _) in enumerate(leaves):
                term = leaf[plan.order.index((d, k))]
                term = term if stride == 1 else term * stride
                acc = term if acc is None else acc + term
            idx.append(acc)
        return w[tuple(idx)]

    return te.compute(t.new_shape, body, name=f"{t.name}_layout_rewrite")


def rewrite_dag(dag, plans: list, option: LayoutRewriteOption) -> tuple:
    """(new output tensors, new argument tensors) with every planned weight rewritten."""
    tmap, by_weight = {}, {}
    for plan in plans:
        w = plan.weight.output(0)
        if option == LayoutRewriteOption.INSERT_TRANSFORM_STAGE:
            tmap[w] = _transform_op(plan)
        else:
            tmap[w] = te.placeholder(plan.transform.new_shape, name=plan.weight.name,
                                     dtype=plan.weight.dtype)
        by_weight[plan.weight] = plan
    rw = _Reindex(tmap, by_weight)
    for op in post_order_ops(dag.tensors):
        if not isinstance(op, ComputeOp):
            continue
        body = tuple(rw.visit(b) for b in op.body)
        if any(a is not b for a, b in zip(body, op.body)):
            new = ComputeOp(op.name, op.tag, op.attrs, op.axis, op.reduce_axis, body)
            for i in range(op.num_outputs):
                tmap[op.output(i)] = new.output(i)
    args = [t if option == LayoutRewriteOption.INSERT_TRANSFORM_STAGE and t.op in by_weight
            else tmap.get(t, t) for t in dag.tensors]
    outs = [tmap.get(op.output(0), op.output(0)) for op in dag.outputs]
    return outs, args


# ---------------------------------------------------------------------- replay
_STAGE_FIELDS = ("stage_id", "target_stage_id")


def _shift_ids(step, weights_at: list):
    """``step`` with stage ids moved past the transform stages inserted after weights."""
    def tr(sid):
        return sid + sum(1 for p in weights_at if sid > p)

    changes = {f.name: tr(getattr(step, f.name)) for f in fields(step)
               if f.name in _STAGE_FIELDS}
    if hasattr(step, "reader_stage_ids"):
        changes["reader_stage_ids"] = tuple(tr(r) for r in step.reader_stage_ids)
    return replace(step, **changes)


def translate_steps(dag, steps, weights) -> list:
    """Steps renumbered for a DAG with a transform stage right after each of ``weights``.

    The weight's stage index is tracked through the steps (dataflow steps insert stages
    before it), so each step is shifted by the transform stages before its stages.
    """
    state = dag.init_state()
    out = []
    for st in steps:
        at = [k for k, s in enumerate(state.stages) if s.op in weights]
        out.append(_shift_ids(st, at))
        apply_step(state, st)
    return out


def replay_rewritten(dag, steps, option):
    """(schedule, argument tensors, [LayoutTransform]) of ``steps`` under ``option``."""
    option = as_option(option)
    if option == LayoutRewriteOption.NO_REWRITE or not has_layout_free(dag):
        # the builder's hot path for DAGs without weights: one replay, not two
        return dag.replay(steps), list(dag.tensors), []
    plans = plan_rewrites(dag, dag.replay(steps, readonly=True))
    if not plans:
        return dag.replay(steps), list(dag.tensors), []
    outs, args = rewrite_dag(dag, plans, option)
    if option == LayoutRewriteOption.INSERT_TRANSFORM_STAGE:
        steps = translate_steps(dag, steps, {p.weight for p in plans})
    sch = te.create_schedule([t.op for t in outs])
    for k, st in enumerate(steps):
        apply_to_schedule(st, sch, steps[:k])
    return sch, args, [p.transform for p in plans]
