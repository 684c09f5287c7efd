"""Compiled kernels callable on numpy arrays.

Role: ``Function`` wraps one exported symbol (and its ``<name>__repeat`` timing wrapper)
and turns numpy arrays into raw pointers; ``Module`` groups the functions of one loaded
object (or shared library), owns the JIT resources (or the library handle) and offers
``time_evaluator``, ``get_source`` and TVM's ``save``/``export_library``.

Invariants (what makes a bad call an exception instead of a crash or silent corruption):
- Every argument is checked before the call: count (TypeError), ndarray (TypeError),
  dtype, shape, C-contiguity, writeability of written params, and no two params sharing
  memory (kernel params are ``noalias``) -- all ValueError naming the parameter.
- A kernel with symbolic shapes (``FuncMeta.shape_vars``) takes its shape variables from
  the arrays of each call and checks that every dimension agrees with them
  (runtime.symbolic); their values are passed after the pointers.
- Each param's ``align`` is what the code assumes (an ``align 64`` parameter attribute
  lets LLVM use aligned vector moves, which fault on numpy's usual 16-byte alignment).
  A misaligned array is copied into an aligned temporary for the call and copied back if
  the kernel writes it.  ``empty_aligned``/``as_aligned`` make zero-copy arrays.
- A Function holds the JIT ResourceTracker, so code is never unmapped while callable.
- libgomp cannot start a parallel region in a child forked after the parent ran one (the
  child hangs forever).  Such a call raises BuildError instead: use the "spawn" or
  "forkserver" start method for worker processes.
"""
from __future__ import annotations

import ctypes
import math
import os
import tempfile
from typing import Any

import numpy as np

from ..errors import BuildError
from .meta import DEFAULT_ALIGN, FuncMeta
from .symbolic import bind_shapes
from .tarlib import KERNEL_KIND, save_library
from .timer import Evaluator
from .toolchain import create_shared

_SOURCE_FORMATS = ("ll", "asm")
# "used": this process has run an OpenMP kernel; "forked_after_use": we are a fork of one.
_GOMP = {"used": False, "forked_after_use": False}


def _after_fork_in_child() -> None:
    _GOMP["forked_after_use"] = _GOMP["used"]


os.register_at_fork(after_in_child=_after_fork_in_child)


def _enter_gomp(name: str) -> None:
    if _GOMP["forked_after_use"]:
        raise BuildError(f"function {name!r} may run a libgomp parallel region, but this "
                         "process was forked after its parent ran one; libgomp would hang. "
                         "Start worker processes with the 'spawn' or 'forkserver' method")
    _GOMP["used"] = True


# ``addressof(c_char.from_buffer(a))`` costs ~0.35 us against ~2.5 us for ``a.ctypes.data``;
# it needs a writeable, non-empty buffer, so read-only arrays take the slow path.
_from_buffer: Any = ctypes.c_char.from_buffer   # typeshed wants a Buffer; ndarrays are
_addressof = ctypes.addressof


def empty_aligned(shape, dtype="float32", align: int = DEFAULT_ALIGN) -> np.ndarray:
    """An uninitialised C-contiguous array whose data pointer is ``align``-byte aligned."""
    if not isinstance(align, int) or align < 1 or align & (align - 1):
        raise ValueError(f"empty_aligned: align {align!r} must be a positive power of two")
    dt = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    nbytes = math.prod(shape) * dt.itemsize
    raw = np.empty(nbytes + align, dtype=np.uint8)
    off = (-_addressof(_from_buffer(raw))) % align
    return raw[off:off + nbytes].view(dt).reshape(shape)


def as_aligned(arr, align: int = DEFAULT_ALIGN) -> np.ndarray:
    """``arr`` itself if C-contiguous and aligned, else an aligned C-contiguous copy."""
    arr = np.asarray(arr)
    if arr.flags.c_contiguous and arr.ctypes.data % align == 0:
        return arr
    out = empty_aligned(arr.shape, arr.dtype, align)
    out[...] = arr
    return out


class PreparedCall:
    """Raw pointers for one call, plus the aligned copies to write back afterwards.

    ``temps`` owns every aligned copy: the pointers in ``ptrs`` point into them, so they
    must live exactly as long as this object (a freed copy would be reused by numpy).
    """
    __slots__ = ("ptrs", "writeback", "temps")

    def __init__(self, ptrs, writeback, temps):
        self.ptrs = ptrs
        self.writeback = writeback
        self.temps = temps

    def finish(self) -> None:
        for original, tmp in self.writeback:
            original[...] = tmp


_KERNEL_ERRORS = {"MemoryError": MemoryError, "IndexError": IndexError}


def kernel_error(table_addr: int, code: int, name: str) -> Exception:
    """The exception for status ``code`` from the message table at ``table_addr``."""
    entries, addr = [], table_addr
    while True:
        raw = ctypes.string_at(addr)
        if not raw:
            break
        entries.append(raw.decode(errors="replace"))
        addr += len(raw) + 1
    if not 1 <= code <= len(entries):
        return BuildError(f"function {name!r} reported unknown failure code {code}")
    kind, _, message = entries[code - 1].partition(":")
    return _KERNEL_ERRORS.get(kind, RuntimeError)(message)


# Exceptions raised by Python packed functions during the current kernel call, as
# (function name, exception); filled by runtime.packed's trampoline, drained by
# ``Function.check_status`` (which re-raises the first one at the call site).
_CALLEE_ERRORS: list = []


def record_callee_error(name: str, exc: BaseException) -> None:
    """Remember that packed function ``name`` raised ``exc`` inside a kernel."""
    _CALLEE_ERRORS.append((name, exc))


def _take_callee_error(kernel: str):
    if not _CALLEE_ERRORS:
        return None
    name, exc = _CALLEE_ERRORS[0]
    _CALLEE_ERRORS.clear()
    if hasattr(exc, "add_note"):
        exc.add_note(f"raised by packed function {name!r} called from kernel {kernel!r}")
    return exc


# ctypes types of scalar (non-pointer) kernel parameters, by dtype
_SCALAR_CTYPES = {"float32": ctypes.c_float, "float64": ctypes.c_double,
                  "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
                  "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
                  "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "bool": ctypes.c_bool}


def _scalar_ctype(p):
    t = _SCALAR_CTYPES.get(p.dtype)
    if t is None:
        raise BuildError(f"param {p.name!r}: scalar parameters of dtype {p.dtype} are not "
                         f"supported; expected one of {sorted(_SCALAR_CTYPES)}")
    return t


class Function:
    """One compiled kernel: ``f(*arrays)`` checks the arrays and runs it in place.

    Scalar parameters (``te.var`` arguments) take Python numbers."""

    def __init__(self, meta: FuncMeta, addr: int, repeat_addr, keepalive,
                 uses_gomp: bool = False, status_addrs=None):
        self.meta = meta
        # (status word, message table) addresses: see codegen's ModuleContext.status_globals
        self._status = None if status_addrs is None else ctypes.c_int32.from_address(
            status_addrs[0])
        self._errors_addr: int = 0 if status_addrs is None else status_addrs[1]
        self.uses_gomp = uses_gomp
        self.name = meta.name
        self.params = meta.params
        self._keepalive = keepalive      # the JIT tracker: code lives while we do
        argtypes = [_scalar_ctype(p) if p.scalar else ctypes.c_void_p for p in meta.params] + [
            ctypes.c_int32 if d == "int32" else ctypes.c_int64 for _, d in meta.shape_vars]
        self._cfunc = ctypes.CFUNCTYPE(None, *argtypes)(addr)
        self._crepeat = None
        if repeat_addr is not None:
            proto = ctypes.CFUNCTYPE(None, *argtypes, ctypes.c_int64)
            self._crepeat = proto(repeat_addr)
        self._checks = tuple((p.name, p.shape, p.np_dtype, p.written, p.align)
                             for p in meta.params)
        self._scalars = {k: p for k, p in enumerate(meta.params) if p.scalar}

    @property
    def has_repeat(self) -> bool:
        """True when the object has a ``<name>__repeat`` wrapper (timing in native code)."""
        return self._crepeat is not None

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.name}: {p.dtype}{list(p.shape)}" for p in self.params)
        return f"<Function {self.name}({sig})>"

    def __call__(self, *arrays) -> None:
        call = self.prepare(arrays)
        if self.uses_gomp:
            _enter_gomp(self.name)
        self._cfunc(*call.ptrs)
        self.check_status()
        call.finish()

    def check_status(self) -> None:
        """Raise the failure the kernel reported in its status word (and clear it)."""
        st = self._status
        if st is not None and st.value:
            code, st.value = st.value, 0
            callee = _take_callee_error(self.name)
            if callee is not None:
                raise callee
            raise kernel_error(self._errors_addr, code, self.name)

    def prepare(self, arrays) -> PreparedCall:
        """Check ``arrays`` against the signature; raise TypeError/ValueError on mismatch."""
        checks = self._checks
        if len(arrays) != len(checks):
            names = ", ".join(c[0] for c in checks)
            raise TypeError(f"function {self.name!r} takes {len(checks)} arrays ({names}), "
                            f"got {len(arrays)}")
        values = ()
        if self.meta.shape_vars:
            shapes, values = bind_shapes(self.meta, arrays)
            checks = tuple((c[0], sh) + c[2:] for c, sh in zip(checks, shapes))
        ptrs, spans, writeback, temps = [], [], [], []
        # Hot path (every call): one flags object per array, identity test on dtype first.
        for k, ((pname, shape, dt, written, align), a) in enumerate(zip(checks, arrays)):
            if self._scalars and k in self._scalars:
                ptrs.append(self._scalar(pname, dt, a))
                continue
            if not isinstance(a, np.ndarray) and hasattr(a, "device") and hasattr(a, "__array__"):
                a = a.__array__()          # an NDArray: its own buffer, written in place
            if not isinstance(a, np.ndarray):
                raise TypeError(f"function {self.name!r} param {pname!r}: expected a "
                                f"numpy.ndarray, got {type(a).__name__}")
            flags = a.flags
            if (a.dtype is not dt and a.dtype != dt) or a.shape != shape \
                    or not flags.c_contiguous or (written and not flags.writeable):
                self._reject(pname, shape, dt, written, a)
            nbytes = a.nbytes
            if not nbytes:
                ptrs.append(a.ctypes.data)    # never dereferenced: the kernel has no work
                continue
            ptr = _addressof(_from_buffer(a)) if flags.writeable else a.ctypes.data
            spans.append((ptr, ptr + nbytes, pname))
            if ptr % align:
                tmp = empty_aligned(shape, dt, align)
                tmp[...] = a
                temps.append(tmp)
                if written:
                    writeback.append((a, tmp))
                ptr = _addressof(_from_buffer(tmp))
            ptrs.append(ptr)
        if len(spans) > 1:
            self._check_overlap(spans)
        ptrs.extend(values)
        return PreparedCall(ptrs, writeback, temps)

    def array_regions(self, call: PreparedCall, arrays) -> list:
        """(address, nbytes) of each non-empty array argument of ``call`` (prepared from
        ``arrays``), in parameter order, at the addresses the kernel reads (an aligned
        copy's where one was made): what ``time_evaluator``'s cache flush evicts.  Kept
        off ``prepare``, which every call runs."""
        out = []
        for k, (a, ptr) in enumerate(zip(arrays, call.ptrs)):
            if self._scalars and k in self._scalars:
                continue
            nbytes = np.asarray(a).nbytes     # an NDArray: its own buffer
            if nbytes:
                out.append((ptr, nbytes))
        return out

    def _scalar(self, pname, dt, a):
        """A Python number for scalar param ``pname`` (ctypes converts it)."""
        if isinstance(a, np.ndarray) and a.ndim == 0:
            a = a.item()
        if isinstance(a, np.generic):
            a = a.item()
        ok = isinstance(a, (int, float, bool)) if dt.kind == "f" else \
            isinstance(a, (int, bool)) and not (dt.kind == "u" and a < 0)
        if not ok:
            raise TypeError(f"function {self.name!r} param {pname!r}: expected a "
                            f"{dt.name} scalar (Python number), got {a!r}")
        return float(a) if dt.kind == "f" else int(a)

    def _reject(self, pname, shape, dt, written, a) -> None:
        where = f"function {self.name!r} param {pname!r}"
        if a.dtype != dt:
            raise ValueError(f"{where}: expected dtype {dt.name}, got {a.dtype.name}"
                             f"{'' if a.dtype.isnative else ' (non-native byte order)'}")
        if a.shape != shape:
            raise ValueError(f"{where}: expected shape {shape}, got {a.shape}")
        if not a.flags.c_contiguous:
            raise ValueError(f"{where}: array is not C-contiguous (strides {a.strides}); "
                             "pass np.ascontiguousarray(x)")
        raise ValueError(f"{where}: the kernel writes this parameter but the array is "
                         "read-only")

    def _check_overlap(self, spans) -> None:
        spans.sort()
        for (_s0, e0, n0), (s1, _e1, n1) in zip(spans, spans[1:]):
            if s1 < e0:
                raise ValueError(f"function {self.name!r}: params {n0!r} and {n1!r} share "
                                 "memory; kernel parameters must not alias (pass a copy)")

    def run_repeat(self, ptrs, number: int) -> None:
        """Run the kernel ``number`` times on prepared pointers, in native code if possible."""
        if self.uses_gomp:
            _enter_gomp(self.name)
        if self._crepeat is not None:
            self._crepeat(*ptrs, number)
        else:
            f = self._cfunc
            for _ in range(number):
                f(*ptrs)
        self.check_status()


class Module:
    """The functions of one loaded object; ``mod(*arrays)`` calls the entry (first) one."""

    def __init__(self, functions, obj: bytes | None, source_fn, keepalive, artifacts=None):
        if not functions:
            raise BuildError("Module: no functions to export")
        self._functions = {f.name: f for f in functions}
        self.entry_name = functions[0].name
        self._obj = obj                   # None: loaded from a shared library
        self._source_fn = source_fn       # () -> CompileOutput, or None without IR
        self._sources: Any = None
        self._keepalive = keepalive
        # Saveable forms (jit.ModuleArtifacts: object/IR/bitcode with the signatures
        # embedded), or None when the module was not loaded with its IR.
        self._artifacts = artifacts

    @property
    def type_key(self) -> str:
        """TVM's module kind: "llvm" when built here, "library" when loaded from a file."""
        return "llvm" if self._obj is not None else "library"

    @property
    def imported_modules(self) -> list:
        """TVM's device modules; a CPU-only module imports none."""
        return []

    @property
    def function_names(self) -> tuple:
        return tuple(self._functions)

    @property
    def funcs_meta(self) -> tuple:
        """The FuncMeta list this module was loaded with (to reload ``export_object()``)."""
        return tuple(f.meta for f in self._functions.values())

    def __repr__(self) -> str:
        return f"<Module entry={self.entry_name!r} functions={list(self._functions)}>"

    def __call__(self, *arrays) -> None:
        self._functions[self.entry_name](*arrays)

    def __getitem__(self, name: str) -> Function:
        return self.get_function(name)

    def __contains__(self, name) -> bool:
        return name in self._functions

    def get_function(self, name: str) -> Function:
        f = self._functions.get(name) if isinstance(name, str) else None
        if f is None:
            raise KeyError(f"module has no function {name!r}; it has {list(self._functions)}")
        return f

    def time_evaluator(self, func_name=None, dev=None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, enable_cpu_cache_flush: bool = False,
                       warmup: bool = True):
        """A callable ``(*arrays) -> ProfileResult`` timing ``func_name`` (default: entry).

        TVM's signature: ``time_evaluator(mod.entry_name, dev, number=10)``; ``dev`` (a CPU
        Device, or None) is checked and otherwise unused, since kernels run on the CPU.

        Each repeat is one native call of ``<name>__repeat(..., number)``; ``min_repeat_ms``
        grows ``number`` until one repeat lasts that long; the cache flush overwrites a
        buffer larger than the last-level cache before every repeat.  One untimed warm-up
        call precedes the repeats unless ``warmup=False``.
        """
        if dev is not None and getattr(dev, "device_type", None) != 1:
            raise TypeError(f"time_evaluator(func_name, dev, number=...): dev {dev!r} must be "
                            "a CPU device such as compiler.cpu(0) (pass number= by keyword)")
        func = self.get_function(self.entry_name if func_name is None else func_name)
        ev = Evaluator(func, number, repeat, min_repeat_ms, enable_cpu_cache_flush)
        ev.warmup = bool(warmup)   # callers that already ran the kernel skip the extra call
        return ev

    def get_source(self, fmt: str = "ll") -> str:
        """Optimized LLVM IR (``"ll"``, also TVM's default ``""``) or assembly (``"asm"``)."""
        fmt = fmt or "ll"
        if fmt not in _SOURCE_FORMATS:
            raise ValueError(f"get_source: unknown format {fmt!r}; expected one of "
                             f"{_SOURCE_FORMATS}")
        if self._source_fn is None:
            raise BuildError("get_source: this module was loaded from object code without "
                             "its IR text; pass ir_text= to load_module")
        if self._sources is None:
            self._sources = self._source_fn()
        return self._sources.optimized_ir if fmt == "ll" else self._sources.assembly

    def export_object(self) -> bytes:
        """The relocatable object code (load it again with ``load_module``)."""
        if self._obj is None:
            raise BuildError(f"export_object: module {self.entry_name!r} was loaded from a "
                             "shared library and has no relocatable object code")
        return self._obj

    def save(self, file_name, fmt: str = "") -> None:
        """TVM's ``mod.save(path)``: ``.o`` object code, ``.ll`` optimized LLVM IR, ``.bc``
        bitcode or ``.s`` assembly (``fmt`` overrides the extension).  Each embeds the
        kernel signatures, so ``load_module`` of the ``.o`` (or of a ``.so`` linked from
        it with ``create_shared``) checks its arguments like this module."""
        path = os.fspath(file_name)
        fmt = fmt or os.path.splitext(path)[1].lstrip(".")
        if fmt not in _SAVE_FORMATS:
            raise ValueError(f"save({path!r}): unknown format {fmt!r}; expected one of "
                             f"{sorted(_SAVE_FORMATS)} (by extension or fmt=)")
        if self._artifacts is None:
            raise BuildError(f"save({path!r}): module {self.entry_name!r} was loaded without "
                             "its LLVM IR (from a library, or object bytes without ir_text=)"
                             "; save the module returned by build instead")
        data = self._artifacts.save_bytes(_SAVE_FORMATS[fmt])
        _write_atomic(path, data)

    def export_library(self, file_name, fcompile=None, options=None, cc=None,
                       workspace_dir=None) -> None:
        """TVM's ``mod.export_library(path)``: a shared library linked by the system C
        compiler (``fcompile(output, objects, options=...)`` if given, else
        ``create_shared``), or for a ``.tar`` path the object code in a tar; either loads
        with ``tvm.runtime.load_module(path)``."""
        path = os.fspath(file_name)
        if path.endswith(".tar"):
            # TVM's tar of object files; loading links the object in-process (no compiler)
            if self._artifacts is None:
                raise BuildError(f"export_library({path!r}): module {self.entry_name!r} was "
                                 "loaded without its LLVM IR; export the module returned "
                                 "by build instead")
            save_library(path, KERNEL_KIND, {"objects": ["lib0.o"]},
                         {"lib0.o": self._artifacts.save_bytes("obj")})
            return
        with tempfile.TemporaryDirectory(prefix="tas-export-", dir=workspace_dir) as d:
            obj = os.path.join(d, "lib0.o")
            self.save(obj)
            if fcompile is not None:
                fcompile(path, [obj], options=options)
            else:
                create_shared(path, [obj], options=options, cc=cc)


# extension -> artifact kind (ModuleArtifacts.save_bytes)
_SAVE_FORMATS = {"o": "obj", "obj": "obj", "ll": "ll", "bc": "bc", "s": "asm", "asm": "asm"}


def _write_atomic(path: str, data: bytes) -> None:
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise BuildError(f"save: directory {d!r} of {path!r} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".save-", dir=d)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)          # mkstemp's 0600 would surprise whoever reads it next
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def enter_parallel_runtime(name: str) -> None:
    """Call before running code that may start a libgomp region (see ``_enter_gomp``)."""
    _enter_gomp(name)
