"""Emission of BufferLoad / BufferStore (flattened: exactly one index).

Role: a mixin of ``FunctionEmitter``.  Invariants:
- a buffer's base pointer is the operand bound to ``buffer.data`` in ``self.vars``
  (function parameter, alloca, heap block, or a closure field in outlined code);
- alignment claimed on every access is the element size only: numpy hands us arrays
  that may be just 16-byte aligned, and over-claiming is undefined behaviour;
- scalar index -> GEP + load/store; a unit-stride Ramp (also ``Broadcast + Ramp``) ->
  one vector load/store; a Broadcast index -> one scalar load then a splat; any other
  vector index -> ``llvm.masked.gather``/``scatter`` with an all-true mask (the X86
  backend scalarizes them when hardware gathers are slow, so this costs nothing);
- while ``load_mask`` is set (the taken branch of a vector ``if_then_else``), every
  vector load becomes ``llvm.masked.load``/``gather`` with that mask: lanes whose
  condition is false are never read;
- bool lives as i8 in memory: ``trunc`` after loads, ``zext`` before stores;
- unsigned 8/16/32-bit indices are zero-extended because GEP sign-extends.
"""
from __future__ import annotations

from ..errors import CodegenError
from ..tir import dtype as dt
from ..tir.expr import Add, Broadcast, IntImm, Ramp
from .llvm_builder import EmitterBase
from .llvm_types import elem_bytes, intrinsic_suffix, ltype, mtype

_ALL_TRUE = "splat (i1 true)"


def contiguous_base(idx):
    """The scalar start index if ``idx`` addresses consecutive elements, else None."""
    t = type(idx)
    if t is Ramp:
        s = idx.stride
        return idx.base if type(s) is IntImm and s.value == 1 else None
    if t is Add:
        a, b = idx.a, idx.b
        if type(a) is Broadcast and type(b) is Ramp:
            a, b = b, a
        if type(a) is Ramp and type(b) is Broadcast:
            base = contiguous_base(a)
            if base is not None and base.dtype == b.value.dtype:
                return Add(base, b.value)
    return None


class MemoryMixin(EmitterBase):
    """Loads and stores of flattened buffers."""

    def buffer_ptr(self, buffer) -> str:
        p = self.lookup(buffer.data, True)
        if p is None:
            raise CodegenError(f"codegen: buffer {buffer.name!r} is accessed but neither a "
                               "parameter nor allocated in an enclosing Allocate")
        return p

    def _index(self, node, buffer):
        if len(node.indices) != 1:
            raise CodegenError(f"codegen: access to buffer {buffer.name!r} with "
                               f"{len(node.indices)} indices; expected exactly one "
                               "(run the flatten pass first)")
        return node.indices[0]

    def _gep(self, elem_t: str, ptr: str, idx) -> str:
        """Address of element ``idx`` (scalar or vector index expression)."""
        v = self.expr(idx)
        d = idx.dtype
        it = ltype(d)
        if dt.is_uint(d) and dt.bits(d) < 64:
            wide = dt.with_lanes("int64", dt.lanes(d))
            v = self.op(f"zext {it} {v} to {ltype(wide)}")
            it = ltype(wide)
        elif dt.is_bool(d) or not dt.is_integral(d):
            raise CodegenError(f"codegen: buffer index {idx} has dtype {d}; expected an "
                               "integer")
        return self.op(f"getelementptr inbounds {elem_t}, ptr {ptr}, {it} {v}", "p")

    def _e_load(self, e) -> str:
        buf = e.buffer
        idx = self._index(e, buf)
        bd = buf.dtype
        n = dt.lanes(idx.dtype)
        if n > 1 and dt.lanes(bd) > 1:
            raise CodegenError(f"codegen: vector index into buffer {buf.name!r} of vector "
                               f"dtype {bd}; expected a scalar element dtype")
        et, align = mtype(bd), elem_bytes(bd)
        if n == 1:
            ptr = self.buffer_ptr(buf)
            v = self.op(f"load {et}, ptr {self._gep(et, ptr, idx)}, align {align}")
            return self.op(f"trunc i8 {v} to i1") if dt.is_bool(bd) else v
        if self.load_mask is not None:        # inside a masked if_then_else branch
            return self.vector_load(e, self.load_mask, None)
        if type(idx) is Broadcast:
            ptr = self.buffer_ptr(buf)
            v = self.op(f"load {et}, ptr {self._gep(et, ptr, idx.value)}, align {align}")
            if dt.is_bool(bd):
                v = self.op(f"trunc i8 {v} to i1")
            return self.broadcast(v, bd, n)
        return self.vector_load(e, _ALL_TRUE, None)

    def vector_load(self, load, mask: str, passthru) -> str:
        """Vector ``load`` reading only the lanes set in ``mask`` (an ``<N x i1>``
        operand, or _ALL_TRUE); other lanes take ``passthru`` (an operand, or zero)."""
        buf = load.buffer
        idx = load.indices[0]
        d = load.dtype
        n = dt.lanes(d)
        et, align, vt = mtype(buf.dtype), elem_bytes(buf.dtype), mtype(d)
        ptr = self.buffer_ptr(buf)
        if passthru is None:
            passthru = "zeroinitializer"
        elif dt.is_bool(d):
            passthru = self.op(f"zext {ltype(d)} {passthru} to {vt}")
        base = contiguous_base(idx)
        if base is not None and mask is _ALL_TRUE:
            v = self.op(f"load {vt}, ptr {self._gep(et, ptr, base)}, align {align}")
        elif base is not None:
            fn = self.mod.intrinsic(f"llvm.masked.load.{_msfx(d)}.p0", vt,
                                    ("ptr", "i32 immarg", f"<{n} x i1>", vt))
            v = self.op(f"call {vt} {fn}(ptr {self._gep(et, ptr, base)}, i32 {align}, "
                        f"<{n} x i1> {mask}, {vt} {passthru})")
        else:
            ptrs = self._gep(et, ptr, idx)
            fn = self.mod.intrinsic(f"llvm.masked.gather.{_msfx(d)}.v{n}p0", vt,
                                    (f"<{n} x ptr>", "i32 immarg", f"<{n} x i1>", vt))
            v = self.op(f"call {vt} {fn}(<{n} x ptr> {ptrs}, i32 {align}, "
                        f"<{n} x i1> {mask}, {vt} {passthru})")
        if dt.is_bool(d):
            v = self.op(f"trunc {vt} {v} to {ltype(d)}")
        return v

    def _s_store(self, s) -> None:
        buf = s.buffer
        idx = self._index(s, buf)
        ptr = self.buffer_ptr(buf)
        bd = buf.dtype
        n = dt.lanes(idx.dtype)
        d = dt.with_lanes(bd, n) if n > 1 else bd
        vd = self.dtype_of(s.value)
        if dt.element_of(vd) != dt.element_of(bd):
            raise CodegenError(f"codegen: storing {vd} value into buffer {buf.name!r} of "
                               f"dtype {bd}; expected matching element types")
        v = self.expr_as(s.value, d)
        if dt.is_bool(bd):
            v = self.op(f"zext {ltype(d)} {v} to {mtype(d)}")
        et, align, vt = mtype(bd), elem_bytes(bd), mtype(d)
        if n == 1:
            self.emit(f"store {vt} {v}, ptr {self._gep(et, ptr, idx)}, align {align}")
            return
        base = contiguous_base(idx)
        if base is not None:
            self.emit(f"store {vt} {v}, ptr {self._gep(et, ptr, base)}, align {align}")
            return
        ptrs = self._gep(et, ptr, idx)
        fn = self.mod.intrinsic(f"llvm.masked.scatter.{_msfx(d)}.v{n}p0", "void",
                                (vt, f"<{n} x ptr>", "i32 immarg", f"<{n} x i1>"))
        self.emit(f"call void {fn}({vt} {v}, <{n} x ptr> {ptrs}, i32 {align}, "
                  f"<{n} x i1> {_ALL_TRUE})")


def _msfx(d: str) -> str:
    """Intrinsic suffix of the in-memory vector type (bool vectors are i8 vectors)."""
    if dt.is_bool(d):
        return f"v{dt.lanes(d)}i8"
    return intrinsic_suffix(d)
