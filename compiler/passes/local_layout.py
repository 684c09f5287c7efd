"""Pass ``permute_local_layout``: a kernel-local buffer's vectorized dimension goes last.

A buffer the function allocates itself (a ``cache_write`` accumulator, a stage computed
at another's tile) has a layout nobody outside the kernel sees, so it may be stored in
any dimension order.  Lowering keeps the stage's own order (NCHW for a convolution), and
when a schedule vectorizes a dimension that is not the last one -- output channels of an
NCHW conv, the SIMD-friendly axis when the width is only 7 -- every vector access to the
accumulator is a Ramp with stride ``prod(shape[d+1:])``: a gather and a scatter per FMA,
which also keeps LLVM from promoting the accumulator to registers (5 GFLOPS instead of
100+).  This pass moves that dimension to the end, so the same accesses become
contiguous vector loads/stores of a small alloca that SROA turns into registers.

Which dimension: every access to the buffer votes for the dimension whose index depends
on an enclosing vectorized loop variable (also through LetStmt bindings), weighted by
its trip count (product of the constant extents of the enclosing loops).  The dimension
with the largest weight goes last if it outweighs the accesses already vectorized along
the last dimension; otherwise nothing changes.  Accesses whose vector spans several
dimensions, or no vector at all, do not vote.

Invariants:
- Runs before ``flatten_buffers`` (it needs one index per dimension).  Function
  parameters and buffers with explicit strides (``storage_align``) keep their layout; so
  does a buffer whose data pointer is used directly, that an AttrStmt names, or that is
  accessed with a number of indices other than its rank.
- The permutation is applied to the Allocate'd Buffer and to every access of it alike,
  so results are unchanged whatever is chosen (it is a bijection of the storage).
- Relative order of the other dimensions is kept; nothing changes when no buffer
  qualifies (the function object itself is returned).
"""
from __future__ import annotations

from ..tir.analysis import uses_var
from ..tir.expr import BufferLoad, IntImm, PrimExpr
from ..tir.functor import Mutator, Visitor, transform_func
from ..tir.stmt import Allocate, Buffer, BufferStore, ForKind, PrimFunc

__all__ = ["permute_local_layout"]


class _Votes(Visitor):
    """For each candidate Allocate'd buffer: trip-count weight of vector accesses per dim."""

    def __init__(self):
        super().__init__()
        self.vec_vars: set = set()     # vectorized loop vars and lets derived from them
        self.trip = 1
        self.weights: dict = {}        # Buffer -> {dim: weight}
        self.blocked: set = set()
        self.by_data: dict = {}        # data Var -> Buffer, to spot raw pointer uses

    def visit_Allocate(self, s):
        b = s.buffer
        if len(b.shape) >= 2 and not b.strides:
            self.weights[b] = {}
            self.by_data[b.data] = b
        self.visit(s.body)

    def visit_For(self, s):
        self.visit(s.min)
        self.visit(s.extent)
        saved = self.trip
        # a loop of unknown extent weighs as one iteration: only the ranking matters
        self.trip *= s.extent.value if isinstance(s.extent, IntImm) else 1
        vec = s.kind == ForKind.VECTORIZED
        if vec:
            self.vec_vars.add(s.loop_var)
        self.visit(s.body)
        if vec:
            self.vec_vars.discard(s.loop_var)
        self.trip = saved

    def visit_LetStmt(self, s):
        self.visit(s.value)
        derived = bool(self.vec_vars) and uses_var(s.value, self.vec_vars)
        if derived:
            self.vec_vars.add(s.var)
        self.visit(s.body)
        if derived:
            self.vec_vars.discard(s.var)

    def visit_AttrStmt(self, s):
        if isinstance(s.node, Buffer):
            self.blocked.add(s.node)
        if isinstance(s.value, PrimExpr):
            self.visit(s.value)
        self.visit(s.body)

    def visit_Var(self, v):
        # the data pointer outside a BufferLoad/Store (Buffers are opaque to the walk)
        if v in self.by_data:
            self.blocked.add(self.by_data[v])

    def visit_BufferLoad(self, e):
        self._vote(e.buffer, e.indices)
        self.visit(e.indices)

    def visit_BufferStore(self, s):
        self._vote(s.buffer, s.indices)
        self.visit(s.indices)
        self.visit(s.value)

    def _vote(self, buf, indices) -> None:
        w = self.weights.get(buf)
        if w is None:
            return
        if len(indices) != len(buf.shape):
            self.blocked.add(buf)
            return
        if not self.vec_vars:
            return
        dims = [k for k, i in enumerate(indices) if uses_var(i, self.vec_vars)]
        if len(dims) == 1:
            w[dims[0]] = w.get(dims[0], 0) + self.trip


def _choose(buf: Buffer, weights: dict):
    """The new dimension order of ``buf`` (a permutation of its dims), or None."""
    if not weights:
        return None
    last = len(buf.shape) - 1
    best = max(weights, key=lambda d: (weights[d], d == last))
    if best == last or weights[best] <= weights.get(last, 0):
        return None
    return tuple(d for d in range(len(buf.shape)) if d != best) + (best,)


class _Permute(Mutator):
    def __init__(self, orders: dict):
        super().__init__()
        self.orders = orders          # original Buffer -> dim order
        self.remap: dict = {}         # original Buffer -> permuted Buffer

    def _new(self, b: Buffer) -> Buffer:
        nb = self.remap.get(b)
        if nb is None:
            shape = tuple(b.shape[d] for d in self.orders[b])
            nb = Buffer(b.name, shape, b.dtype, b.data, (), b.scope, b.align)
            self.remap[b] = nb
        return nb

    def visit_Allocate(self, s):
        body = self.visit(s.body)
        if s.buffer in self.orders:
            return Allocate(self._new(s.buffer), body)
        return s if body is s.body else Allocate(s.buffer, body)

    def _indices(self, buf, indices):
        indices = self.visit_tuple(indices)
        order = self.orders.get(buf)
        if order is None:
            return buf, indices
        return self._new(buf), tuple(indices[d] for d in order)

    def visit_BufferLoad(self, e):
        buf, idx = self._indices(e.buffer, e.indices)
        return e if buf is e.buffer and idx is e.indices else BufferLoad(buf, idx)

    def visit_BufferStore(self, s):
        buf, idx = self._indices(s.buffer, s.indices)
        val = self.visit(s.value)
        if buf is s.buffer and idx is s.indices and val is s.value:
            return s
        return BufferStore(buf, val, idx)


def permute_local_layout(func: PrimFunc) -> PrimFunc:
    """Store each vectorized dimension of a kernel-local buffer innermost (see module)."""
    votes = _Votes()
    votes.visit(func.body)
    orders = {}
    for buf, w in votes.weights.items():
        order = None if buf in votes.blocked else _choose(buf, w)
        if order is not None:
            orders[buf] = order
    if not orders:
        return func
    return transform_func(func, _Permute(orders))

