"""Packed functions: the process-wide registry of Python callables that generated code
can call by name (TVM's ``register_func`` / ``get_global_func`` / ``call_packed``).

Role: ``register_func`` stores a callable under a string name; a kernel built from
``tir.call_packed("name", ...)`` calls the one C entry point ``TRAMPOLINE_SYMBOL`` (a
ctypes callback registered with LLVM's symbol table, so the JIT linker resolves it like a
libm symbol) with the name and an array of argument descriptors; the trampoline looks
the name up, decodes the arguments and calls the Python function.

ABI of ``int32 __tas_call_packed(char *name, int64 *values, int32 *codes, int32 n)``:
``codes[k]`` says how to read ``values[k]``: INT/BOOL (the int64 itself), FLOAT (the bits
of a double), HANDLE (an address, passed as int; 0 as None), STR (a char pointer) or
ARRAY (a pointer to the descriptor ``{data, ndim, dtype, shape[ndim]}`` as int64 words,
dtype packed as ``code | bits << 8 | lanes << 16`` with DLPack's type codes).  Arrays
reach the callee as ``NDArray`` views of the kernel's memory, so writing into them
(``copyto``/``copyfrom``) writes the kernel's buffer in place.

Invariants: no Python exception ever unwinds into native code.  The trampoline catches
everything, hands the exception to ``module.record_callee_error`` and returns -1; the
generated code then reports a failure through its status word and returns, and
``Function.check_status`` re-raises the callee's exception (same type, with a note naming
the packed function) at the call site.  The ctypes callback object lives for the whole
process (its address is baked into linked code).
"""
from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm
import numpy as np

from ..errors import PackedFuncError
from .module import record_callee_error
from .ndarray import NDArray

__all__ = ["PackedFunc", "register_func", "get_global_func", "list_global_func_names",
           "remove_global_func", "install_trampoline", "trampoline_address",
           "TRAMPOLINE_SYMBOL", "TypeCode"]

TRAMPOLINE_SYMBOL = "__tas_call_packed"


class TypeCode:
    """Argument type codes (TVM's numbering)."""
    INT, UINT, FLOAT, HANDLE, NULL, ARRAY, STR, BOOL = 0, 1, 2, 3, 4, 7, 11, 15


# DLPack dtype codes -> numpy kind letters
_DL_KIND = {0: "i", 1: "u", 2: "f", 6: "b"}
DL_CODE = {"int": 0, "uint": 1, "float": 2, "bool": 6}

_REGISTRY: dict = {}
_LOCK = threading.Lock()


class PackedFunc:
    """A registered function; calling it from Python calls the wrapped callable."""
    __slots__ = ("name", "func")

    def __init__(self, name: str, func):
        self.name, self.func = name, func

    def __call__(self, *args):
        return self.func(*args)

    def __repr__(self) -> str:
        return f"<PackedFunc {self.name!r}>"


def register_func(func_name, f=None, override: bool = False):
    """Register ``f`` under ``func_name`` (TVM's ``tvm.register_func``).

    ``register_func("name")`` and bare ``register_func`` (the function's own name) work
    as decorators; a name already registered is a PackedFuncError unless ``override``.
    """
    if callable(func_name) and f is None:
        f, func_name = func_name, func_name.__name__
    if not isinstance(func_name, str) or not func_name:
        raise PackedFuncError(f"register_func: name {func_name!r} must be a non-empty str")

    def register(fn):
        if not callable(fn):
            raise PackedFuncError(f"register_func({func_name!r}): {fn!r} is not callable")
        with _LOCK:
            if func_name in _REGISTRY and not override:
                raise PackedFuncError(f"register_func: global function {func_name!r} is "
                                      "already registered; pass override=True to replace it")
            _REGISTRY[func_name] = PackedFunc(func_name, fn)
        return fn

    return register if f is None else register(f)


def get_global_func(name: str, allow_missing: bool = False):
    """The PackedFunc registered as ``name``; None or PackedFuncError when missing."""
    pf = _REGISTRY.get(name)
    if pf is None and not allow_missing:
        raise PackedFuncError(f"get_global_func: no global function {name!r} is registered; "
                              "register it with compiler.register_func first")
    return pf


def list_global_func_names() -> list:
    return sorted(_REGISTRY)


def remove_global_func(name: str) -> None:
    """Unregister ``name`` (a no-op when absent)."""
    with _LOCK:
        _REGISTRY.pop(name, None)


# ---------------------------------------------------------------- the trampoline
_PROTO = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_int32)


def _numpy_dtype(packed: int) -> np.dtype:
    code, bits, lanes = packed & 0xFF, (packed >> 8) & 0xFF, (packed >> 16) & 0xFFFF
    kind = _DL_KIND.get(code)
    if kind is None or lanes != 1:
        raise PackedFuncError(f"call_packed: array argument has unsupported dtype code "
                              f"{code} ({bits} bits, {lanes} lanes)")
    return np.dtype(np.bool_) if kind == "b" else np.dtype(f"{kind}{bits // 8}")


def _array_arg(addr: int) -> NDArray:
    head = (ctypes.c_int64 * 3).from_address(addr)
    data, ndim, dtype = head[0], head[1], _numpy_dtype(head[2])
    shape = tuple((ctypes.c_int64 * ndim).from_address(addr + 24)) if ndim else ()
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes == 0:
        return NDArray(np.empty(shape, dtype))
    raw = (ctypes.c_byte * nbytes).from_address(data)
    return NDArray(np.frombuffer(memoryview(raw), dtype=dtype).reshape(shape))


def _decode(values: int, codes: int, n: int) -> list:
    vals = (ctypes.c_int64 * n).from_address(values) if n else ()
    kinds = (ctypes.c_int32 * n).from_address(codes) if n else ()
    out: list = []
    for v, c in zip(vals, kinds):
        if c in (TypeCode.INT, TypeCode.UINT):
            out.append(int(v))
        elif c == TypeCode.BOOL:
            out.append(bool(v))
        elif c == TypeCode.FLOAT:
            out.append(ctypes.c_double.from_buffer(ctypes.c_int64(v)).value)
        elif c == TypeCode.ARRAY:
            out.append(_array_arg(v))
        elif c == TypeCode.STR:
            out.append(ctypes.string_at(v).decode())
        elif c in (TypeCode.HANDLE, TypeCode.NULL):
            out.append(int(v) or None)
        else:
            raise PackedFuncError(f"call_packed: argument {len(out)} has unknown type code {c}")
    return out


def _trampoline(name_ptr, values, codes, n) -> int:
    name = name_ptr.decode(errors="replace") if name_ptr else "<null>"
    try:
        pf = _REGISTRY.get(name)
        if pf is None:
            raise PackedFuncError(f"call_packed: no global function {name!r} is registered "
                                  "(register it with compiler.register_func before the call)")
        pf.func(*_decode(values, codes, n))
        return 0
    except BaseException as exc:    # noqa: BLE001 -- must never unwind into native code
        record_callee_error(name, exc)
        return -1


_CALLBACK = _PROTO(_trampoline)
_INSTALLED = {"done": False}


def trampoline_address() -> int:
    addr = ctypes.cast(_CALLBACK, ctypes.c_void_p).value
    assert addr is not None
    return addr


def install_trampoline() -> None:
    """Register ``TRAMPOLINE_SYMBOL`` in LLVM's process symbol table (idempotent), so the
    loader's check for unresolved symbols finds it; the JIT linker gets it through
    ``JITLibraryBuilder.import_symbol`` (its process lookup does not see this table)."""
    if not _INSTALLED["done"]:
        llvm.add_symbol(TRAMPOLINE_SYMBOL, trampoline_address())
        _INSTALLED["done"] = True
