"""Emission of calls out of generated code: packed calls and C (extern) calls.

Role: helpers of ``CallMixin._e_call`` (they take the emitter).  Invariants:
- ``tvm_call_packed(name, args...)`` becomes one call of the runtime trampoline
  ``i32 @__tas_call_packed(ptr name, ptr values, ptr codes, i32 n)`` (ABI in
  ``compiler.runtime.packed``).  The argument arrays and array descriptors are entry-block
  allocas, so a call inside a loop does not grow the stack.  A nonzero result means the
  Python callee raised: the kernel reports a RuntimeError through its status word and
  returns at once, and the runtime re-raises the callee's exception.  (Heap blocks of
  Allocates around the call are not freed on that error path; stack ones are.)
- ``call_extern``/``call_pure_extern(c_name, args...)`` declare ``c_name`` with the
  argument and result types of the call and call it; vector calls go lane by lane (a C
  function takes scalars).  Unknown symbols are caught when the object is loaded.
"""
from __future__ import annotations

from ..errors import CodegenError
from ..runtime.packed import DL_CODE, TRAMPOLINE_SYMBOL, TypeCode
from ..tir import dtype as dt
from ..tir.calls import MAKE_ARRAY
from ..tir.expr import Call, StringImm
from .llvm_types import global_name, ltype

__all__ = ["emit_packed_call", "emit_extern_call"]


def _string_global(em, text: str) -> str:
    """A private NUL-terminated constant holding ``text``; one per distinct string."""
    key = ("packed_str", text)
    sym = em.mod.globals.get(key)
    if sym is None:
        sym = f"@.tas_str.{em.mod.counter('packed_str')}"
        data = text.encode() + b"\0"
        lit = "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else f"\\{c:02X}"
                      for c in data)
        em.mod.globals[key] = sym
        em.mod.globals[("g", sym)] = (f"{sym} = private unnamed_addr constant "
                                      f"[{len(data)} x i8] c\"{lit}\", align 1")
    return sym


def _dtype_word(dtype: str) -> int:
    base = dt.element_of(dtype)
    kind = "bool" if base == "bool" else base.rstrip("0123456789")
    if kind not in DL_CODE:
        raise CodegenError(f"codegen: call_packed array of dtype {dtype}; expected a numeric "
                           "dtype")
    bits = 8 if base == "bool" else dt.bits(base)
    return DL_CODE[kind] | bits << 8 | 1 << 16


def _array_word(em, arg: Call) -> str:
    """i64 address of the array descriptor {data, ndim, dtype, shape...} of ``arg``."""
    data, dtype, shape = arg.args[0], arg.args[1].value, arg.args[2:]
    desc = em.entry_alloca(f"[{3 + len(shape)} x i64]", 8, "dltensor")
    words = [em.op(f"ptrtoint ptr {em.expr(data)} to i64"), str(len(shape)),
             str(_dtype_word(dtype))] + [str(int(s.value)) for s in shape]
    for k, w in enumerate(words):
        p = em.op(f"getelementptr inbounds [{len(words)} x i64], ptr {desc}, i64 0, i64 {k}")
        em.emit(f"store i64 {w}, ptr {p}, align 8")
    return em.op(f"ptrtoint ptr {desc} to i64")


def _value_word(em, a) -> tuple:
    """(i64 operand, type code) of one packed-call argument."""
    if isinstance(a, Call) and a.op == MAKE_ARRAY:
        return _array_word(em, a), TypeCode.ARRAY
    if isinstance(a, StringImm):
        return em.op(f"ptrtoint ptr {_string_global(em, a.value)} to i64"), TypeCode.STR
    d = a.dtype
    if dt.lanes(d) != 1:
        raise CodegenError(f"codegen: call_packed argument {a} is a vector ({d}); "
                           "expected a scalar")
    v = em.expr(a)
    if d == "handle":
        return em.op(f"ptrtoint ptr {v} to i64"), TypeCode.HANDLE
    if dt.is_float(d):
        w = em.cast_value(v, d, "float64")
        return em.op(f"bitcast double {w} to i64"), TypeCode.FLOAT
    if d == "bool":
        return em.op(f"zext i1 {v} to i64"), TypeCode.BOOL
    code = TypeCode.UINT if d.startswith("uint") else TypeCode.INT
    return em.cast_value(v, d, "int64"), code


def emit_packed_call(em, e: Call) -> str:
    """The i32 result (0) of ``tvm_call_packed``; returns early on a callee error."""
    if em.load_mask is not None or not e.args or not isinstance(e.args[0], StringImm):
        raise CodegenError(f"codegen: malformed or vectorized packed call {e}")
    name, args = e.args[0].value, e.args[1:]
    n = max(len(args), 1)
    vals = em.entry_alloca(f"[{n} x i64]", 8, "pk_values")
    codes = em.entry_alloca(f"[{n} x i32]", 4, "pk_codes")
    for k, a in enumerate(args):
        w, code = _value_word(em, a)
        pv = em.op(f"getelementptr inbounds [{n} x i64], ptr {vals}, i64 0, i64 {k}")
        em.emit(f"store i64 {w}, ptr {pv}, align 8")
        pc = em.op(f"getelementptr inbounds [{n} x i32], ptr {codes}, i64 0, i64 {k}")
        em.emit(f"store i32 {code}, ptr {pc}, align 4")
    fn = em.mod.declare(global_name(TRAMPOLINE_SYMBOL),
                        f"declare i32 {global_name(TRAMPOLINE_SYMBOL)}(ptr, ptr, ptr, i32)")
    r = em.op(f"call i32 {fn}(ptr {_string_global(em, name)}, ptr {vals}, ptr {codes}, "
              f"i32 {len(args)})")
    fail, ok = em.new_label("packed.fail"), em.new_label("packed.ok")
    em.cbr(em.op(f"icmp ne i32 {r}, 0"), fail, ok)
    em.start_block(fail)
    em.report("RuntimeError", f"kernel {em.root!r}: packed function {name!r} failed")
    em.emit("ret void")
    em.start_block(ok)
    return r


def emit_extern_call(em, e: Call) -> str:
    """Call the C function named by ``e.args[0]`` (lane by lane for vectors)."""
    fname, args = e.args[0].value, e.args[1:]
    d = e.dtype
    lanes = max([dt.lanes(d)] + [dt.lanes(a.dtype) for a in args])
    if lanes > 1:
        vd = dt.with_lanes(dt.element_of(d), lanes)
        ops = tuple(em.expr_as(a, dt.with_lanes(dt.element_of(a.dtype), lanes)) for a in args)
        return _vector_extern(em, fname, vd, ops, args)
    return _scalar_extern(em, fname, d, [em.expr(a) for a in args],
                          [a.dtype for a in args])


def _scalar_extern(em, fname: str, d: str, vals, dtypes) -> str:
    tys = [ltype(x) for x in dtypes]
    sym = global_name(fname)
    em.mod.declare(sym, f"declare {ltype(d)} {sym}({', '.join(tys)})")
    ops = ", ".join(f"{t} {v}" for t, v in zip(tys, vals))
    return em.op(f"call {ltype(d)} {sym}({ops})")


def _vector_extern(em, fname: str, vd: str, ops, args) -> str:
    lanes, base = dt.lanes(vd), dt.element_of(vd)
    dts = [dt.element_of(a.dtype) for a in args]
    out = "poison"
    for i in range(lanes):
        xs = [em.extract(v, dt.with_lanes(x, lanes), i) for v, x in zip(ops, dts)]
        r = _scalar_extern(em, fname, base, xs, dts)
        out = em.op(f"insertelement {ltype(vd)} {out}, {ltype(base)} {r}, i64 {i}")
    return out
