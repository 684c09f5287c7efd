"""Calls out of generated code: ``call_packed`` (into registered Python/packed functions)
and ``call_extern`` / ``call_pure_extern`` (C functions the JIT resolves, e.g. libm's).

Representation (all ``Call`` nodes, so every pass walks them generically):
- ``Call("int32", PACKED, (StringImm(name), arg, ...))``: an argument is a scalar
  expression or, for a Buffer, ``Call("handle", MAKE_ARRAY, (buf.data, StringImm(dtype),
  *shape))`` -- the descriptor the code generator builds on the stack (TVM's
  ``tvm_stack_make_array``).  Keeping the data Var as an ordinary operand lets lowering
  rebind it by substitution and tells the runtime the kernel may write through it.
- ``Call(dtype, EXTERN or PURE_EXTERN, (StringImm(c_name), arg, ...))``.
"""
from __future__ import annotations

from ..errors import TEError
from . import dtype as dt
from .expr import Call, IntImm, PrimExpr, StringImm
from .op import const, convert
from .stmt import Buffer

PACKED = "tvm_call_packed"
MAKE_ARRAY = "tvm_stack_make_array"
EXTERN = "call_extern"
PURE_EXTERN = "call_pure_extern"

__all__ = ["call_packed", "call_extern", "call_pure_extern", "make_array", "PACKED",
           "MAKE_ARRAY", "EXTERN", "PURE_EXTERN"]


def make_array(buf: Buffer) -> PrimExpr:
    """The array descriptor of ``buf`` passed to a packed function."""
    for s in buf.shape:
        if not isinstance(s, IntImm):
            raise TEError(f"call_packed: buffer {buf.name} has non-constant extent {s}; "
                          "only static shapes can be passed")
    return Call("handle", MAKE_ARRAY, (buf.data, StringImm(buf.dtype)) + tuple(buf.shape))


def _packed_arg(name: str, k: int, a) -> PrimExpr:
    if isinstance(a, Buffer):
        return make_array(a)
    if isinstance(a, str):
        return StringImm(a)
    if isinstance(a, bool):
        return const(a, "bool")
    if hasattr(a, "op") and hasattr(a, "value_index"):
        raise TEError(f"call_packed({name!r}): argument {k} is the tensor {a!r}; pass the "
                      "Buffers te.extern's fcompute receives (ins[i], outs[i])")
    try:
        e = convert(a)
    except TEError:
        raise TEError(f"call_packed({name!r}): argument {k} {a!r} is not a Buffer, number, "
                      "str or scalar expression") from None
    if dt.lanes(e.dtype) != 1:
        raise TEError(f"call_packed({name!r}): argument {k} {e} is a vector ({e.dtype}); "
                      "expected a scalar")
    return e


def call_packed(*args) -> PrimExpr:
    """Call the packed function named ``args[0]`` with the rest (TVM's tir.call_packed)."""
    if not args or not isinstance(args[0], str):
        raise TEError(f"call_packed: the first argument must be the function name (a str), "
                      f"got {args[:1]!r}")
    name = args[0]
    rest = tuple(_packed_arg(name, k, a) for k, a in enumerate(args[1:], 1))
    return Call("int32", PACKED, (StringImm(name),) + rest)


def _extern(kind: str, dtype: str, func_name, args) -> PrimExpr:
    if not isinstance(func_name, str) or not func_name.isidentifier():
        raise TEError(f"{kind}: function name {func_name!r} must be a C identifier such as "
                      "'expf'")
    try:
        dt.parse(dtype)
    except ValueError as err:
        raise TEError(f"{kind}({func_name!r}): {err}") from None
    conv = []
    for k, a in enumerate(args):
        # a Python number takes the call's dtype (C's usual double/float arguments)
        e = convert(a, dtype if isinstance(a, float) and dt.is_float(dtype) else None)
        if isinstance(e, StringImm) or dt.element_of(e.dtype) == "handle":
            raise TEError(f"{kind}({func_name!r}): argument {k} {e} must be numeric")
        conv.append(e)
    return Call(dtype, kind, (StringImm(func_name),) + tuple(conv))


def call_extern(dtype: str, func_name: str, *args) -> PrimExpr:
    """Call the C function ``func_name`` returning ``dtype`` (TVM's tir.call_extern)."""
    return _extern(EXTERN, dtype, func_name, args)


def call_pure_extern(dtype: str, func_name: str, *args) -> PrimExpr:
    """Like ``call_extern`` for a function without side effects (e.g. ``expf``)."""
    return _extern(PURE_EXTERN, dtype, func_name, args)
