"""Default CPU schedule of reductions (TVM's ``schedule_reduce``): sum/max/min/prod/
mean/all/any/argmax/argmin and global pooling.

Two cases by whether the input's innermost dimension is reduced:
- inner reduction (rows): the kept axes are fused into one parallel loop; a single-output
  reduction whose innermost reduced extent is a multiple of the SIMD width is rfactor'ed
  into a lane-wise partial reduction (vector accumulators), then the lanes are combined;
  with too few rows for the cores (e.g. a sum of everything), the outermost reduction
  is first split into one chunk per thread (a second rfactor) and the chunks combined;
- outer reduction (columns): the kept innermost axis is vectorized with the reduction
  loops outside it, so each step is a contiguous vector load.
Invariants: partial-reduction (rfactor) stages are computed at root with their own
parallel loop (their buffers are tiny: rows x SIMD lanes); an elementwise epilogue is
scheduled as an injective output.
"""
from __future__ import annotations

from ...te.tensor import ComputeOp
from ...tir.functor import Visitor
from .. import tag as _tag
from ..utils import const_tuple, prod
from .injective import schedule_injective_from_existing
from .utils import PARALLEL_MIN_WORK, num_cores, prepare, vector_factor, vector_lanes


def _reads_innermost(op) -> bool:
    """True if the reduction's innermost reduce axis indexes the input's last dimension."""
    inp = op.input_tensors
    if not inp:
        return False
    inner = op.reduce_axis[-1].var
    found = []

    class _Loads(Visitor):
        def visit_ProducerLoad(self, e):
            found.append(e)
            self.visit(e.indices)

    _Loads().visit(tuple(op.body[0].source))
    return any(ld.indices and ld.indices[-1] is inner for ld in found)


def _par(st, axes, work):
    if not axes:
        return None
    fused = st.fuse(*axes) if len(axes) > 1 else axes[0]
    if work >= PARALLEL_MIN_WORK and fused.dom.extent.value > 1:
        st.parallel(fused)
    return fused


def schedule_reduce_from_existing(s, red):
    """Schedule the reduction tensor ``red`` (a stage of ``s``)."""
    op = red.op
    shape = const_tuple(op.output_shape(0))
    work = max(1, prod(shape)) * prod(iv.dom.extent.value for iv in op.reduce_axis)
    lanes = vector_lanes(op.output_dtype(0))
    kin = op.reduce_axis[-1].dom.extent.value
    if _reads_innermost(op):
        vec = op.num_outputs == 1 and kin % lanes == 0 and kin >= 2 * lanes
        if vec and prod(shape) < 2 * num_cores() and work >= 4 * PARALLEL_MIN_WORK and \
                _split_across_cores(s, red, lanes, work):
            return s
        if vec:
            _lane_rfactor(s, red, lanes, work)
        _par(s[red], list(s[red].op.axis), work)
        return s
    st = s[red]
    axes = list(st.op.axis)
    if not axes:
        return s
    v = vector_factor(shape[-1], lanes)
    lo, li = st.split(axes[-1], factor=v) if v < shape[-1] else (None, axes[-1])
    lead = axes[:-1] + ([lo] if lo is not None else [])
    st.reorder(*lead, *st.op.reduce_axis, li)
    _par(st, lead, work)
    if shape[-1] > 1 and op.num_outputs == 1:
        st.vectorize(li)
    return s


def _lane_rfactor(s, red, lanes, work):
    """Partial reductions per SIMD lane (a vector accumulator), then across lanes."""
    op = s[red].op
    ko, ki = s[red].split(op.reduce_axis[-1], factor=lanes)
    rf = s.rfactor(red, ki, factor_axis=len(op.axis))
    f = s[rf]
    rax = list(f.op.axis)
    f.reorder(*rax[:-1], *f.op.reduce_axis, rax[-1])
    _par(f, rax[:-1], work)
    f.vectorize(rax[-1])
    return rf


def _split_across_cores(s, red, lanes, work) -> bool:
    """Few outputs, much work: split the outermost reduction into one chunk per thread
    (rfactor: a parallel stage of per-chunk partial results, each lane-vectorized),
    then combine the chunks.  False (nothing changed) if the axis cannot be chunked."""
    op = s[red].op
    nparts = 2 * num_cores()
    r0 = op.reduce_axis[0]
    ext = r0.dom.extent.value
    inner_only = len(op.reduce_axis) == 1
    if ext < nparts or (inner_only and ext % (nparts * lanes)):
        return False
    po, _ = s[red].split(r0, nparts=nparts)
    part = s.rfactor(red, po, factor_axis=0)
    _lane_rfactor(s, part, lanes, work)
    return True


def schedule_reduce(outs):
    """Schedule reductions in ``outs`` and their elementwise epilogues."""
    s, outs, ops = prepare(outs)
    out_ops = {id(t.op) for t in outs}
    for op in ops:
        if not isinstance(op, ComputeOp):
            continue
        if op.reduce_axis:
            schedule_reduce_from_existing(s, op.output(0))
        elif id(op) in out_ops:
            schedule_injective_from_existing(s, op.output(0))
        elif op.tag.startswith(_tag.INJECTIVE):
            s[op].compute_inline()
    return s


schedule_global_pool = schedule_reduce
