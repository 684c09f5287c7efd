"""Pass ``flatten_buffers``: multi-dimensional buffer accesses become one linear index.

The index is row-major over ``buffer.shape``, or ``sum(index_k * strides[k])`` when the
buffer has explicit strides (``storage_align``).  Allocate'd buffers are replaced by a new
Buffer with a 1-D shape (``strides[0] * shape[0]`` elements when strided, else the product
of the shape) and the same ``data`` Var; every access inside the Allocate is redirected to
the new object.  Parameter buffers keep their identity and multi-dimensional shape (the
runtime checks call shapes against it); only their accesses are flattened.

Invariants: after the pass every BufferLoad/BufferStore has exactly one index and every
Allocate'd buffer is 1-D without strides.  Running the pass twice changes nothing.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..tir import op as _op
from ..tir.arith import Simplifier
from ..tir.expr import BufferLoad, IntImm, PrimExpr
from ..tir.functor import Mutator, transform_func
from ..tir.stmt import Allocate, AttrStmt, Buffer, BufferStore, For, PrimFunc
from .common import loop_range

__all__ = ["flatten_buffers", "flat_size", "row_major_strides"]


def row_major_strides(shape: tuple) -> tuple:
    """Element strides of a dense row-major array of ``shape``."""
    strides = []
    acc = None
    for s in reversed(shape):
        strides.append(IntImm(s.dtype, 1) if acc is None else acc)
        acc = s if acc is None else _op.mul(acc, s)
    return tuple(reversed(strides))


def flat_size(buf: Buffer) -> PrimExpr:
    """Number of elements the storage of ``buf`` spans."""
    if buf.strides:
        return _op.mul(buf.strides[0], buf.shape[0])
    size: PrimExpr = IntImm("int32", 1)
    for s in buf.shape:
        size = _op.mul(size, s)
    return size


class _Flattener(Mutator):
    def __init__(self):
        super().__init__()
        self.remap: dict = {}      # allocated Buffer -> its 1-D replacement
        self.strides: dict = {}    # Buffer (original) -> strides used for flattening
        self.simp = Simplifier()

    def _strides(self, buf: Buffer) -> tuple:
        st = self.strides.get(buf)
        if st is None:
            st = buf.strides if buf.strides else row_major_strides(buf.shape)
            if len(st) != len(buf.shape):
                raise LoweringError(f"flatten_buffers: buffer {buf.name} has {len(st)} strides "
                                    f"for shape {list(buf.shape)}; expected {len(buf.shape)}")
            self.strides[buf] = st
        return st

    def _flatten(self, buf: Buffer, indices: tuple) -> tuple:
        indices = self.visit_tuple(indices)
        if len(indices) == 1 and (len(buf.shape) != 1 or not buf.strides):
            return indices       # already flat (or dense 1-D): nothing to combine
        if len(indices) != len(buf.shape):
            raise LoweringError(f"flatten_buffers: access to buffer {buf.name} has "
                                f"{len(indices)} indices; expected {len(buf.shape)} "
                                f"(shape {list(buf.shape)}) or 1")
        if not indices:
            return (IntImm("int32", 0),)
        flat = None
        for idx, st in zip(indices, self._strides(buf)):
            term = _op.mul(idx, st)
            flat = term if flat is None else _op.add(flat, term)
        return (self.simp.visit(flat),)

    def visit_BufferLoad(self, e):
        idx = self._flatten(e.buffer, e.indices)
        buf = self.remap.get(e.buffer, e.buffer)
        if idx is e.indices and buf is e.buffer:
            return e
        return BufferLoad(buf, idx)

    def visit_BufferStore(self, s):
        idx = self._flatten(s.buffer, s.indices)
        val = self.visit(s.value)
        buf = self.remap.get(s.buffer, s.buffer)
        if idx is s.indices and buf is s.buffer and val is s.value:
            return s
        return BufferStore(buf, val, idx)

    def visit_For(self, s):
        # loop ranges let the combined index fold split/fuse arithmetic
        self.simp.bind(s.loop_var, loop_range(self.simp, s.min, s.extent))
        body = self.visit(s.body)
        self.simp.unbind(s.loop_var)
        if body is s.body:
            return s
        return For(s.loop_var, s.min, s.extent, s.kind, body, s.annotations)

    def visit_Allocate(self, s):
        b = s.buffer
        nb = b
        if len(b.shape) != 1 or b.strides:
            nb = Buffer(b.name, (flat_size(b),), b.dtype, b.data, (), b.scope, b.align)
            self.remap[b] = nb
        body = self.visit(s.body)
        if nb is b and body is s.body:
            return s
        return Allocate(nb, body)

    def visit_AttrStmt(self, s):
        node = self.remap.get(s.node, s.node) if isinstance(s.node, Buffer) else s.node
        val = self.visit(s.value) if isinstance(s.value, PrimExpr) else s.value
        body = self.visit(s.body)
        if node is s.node and val is s.value and body is s.body:
            return s
        return AttrStmt(node, s.key, val, body)


def flatten_buffers(func: PrimFunc) -> PrimFunc:
    """Give every buffer access a single row-major (or strided) index."""
    return transform_func(func, _Flattener())
