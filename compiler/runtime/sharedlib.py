"""Loading saved kernels by path: ``.so`` libraries (dlopen) and ``.o`` objects (JIT).

Role: ``load_kernel_file(path)`` is what ``tvm.runtime.load_module(path)`` does for a file
written by ``Module.save``/``export_library`` or linked with ``create_shared`` from
such an object.  Signatures come from the metadata embedded in the file (libmeta), so
the loaded Module checks its arguments like a freshly built one.

Invariants:
- Nothing is executed before the file is known to be ours: the ELF symbol tables are
  read first, and a file that is not ELF, or has no (valid) metadata, or does not define
  the functions its metadata lists, is a BuildError naming the file and the problem.
- libgomp and libm are loaded process-wide first (``runtime_libraries``), so a library
  linked without ``-lgomp`` still resolves its OpenMP symbols at dlopen time.
- dlopen caches libraries by path: loading a rewritten file at the same path would hand
  back the old code.  Each load therefore maps a private copy (unlinked right after
  dlopen; the mapping stays valid), so every load sees the file as it is now.
- The Module owns the ctypes library handle: the code stays mapped while the Module or
  one of its Functions is alive.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import tempfile

from ..errors import BuildError
from . import jit
from .libmeta import read_embedded_meta
from .module import Function, Module
from .objfile import elf_type, read_symbols

__all__ = ["load_kernel_file", "is_elf_file"]

_ELF_MAGIC = b"\x7fELF"
_GOMP_PREFIXES = ("GOMP_", "omp_")


def is_elf_file(path) -> bool:
    """True when ``path`` starts with the ELF magic (False if it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == _ELF_MAGIC
    except OSError:
        return False


def load_kernel_file(path) -> Module:
    """A callable Module from a ``.so`` or ``.o`` file this compiler wrote."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise BuildError(f"load_module: cannot read {path!r}: {e.strerror}") from None
    kind = elf_type(data)
    if kind is None:
        raise BuildError(f"load_module: {path!r} is not a well-formed ELF64 file "
                         "(corrupt or truncated?)")
    metas = read_embedded_meta(data, path)
    if kind == "relocatable":
        return jit.load_module(data, metas)
    if kind != "shared":
        raise BuildError(f"load_module: {path!r} is an ELF {kind} file; expected a shared "
                         "library (.so) or an object file (.o)")
    return _load_shared(path, data, metas)


def _load_shared(path: str, data: bytes, metas) -> Module:
    syms = read_symbols(data)
    assert syms is not None          # elf_type parsed the same bytes
    missing = [m.name for m in metas if m.name not in syms.defined]
    if missing:
        raise BuildError(f"load_module: {path!r} lists function(s) {missing} in its metadata "
                         "but does not define them")
    jit.runtime_libraries()
    lib = _dlopen_private(path)
    gomp = any(s.startswith(_GOMP_PREFIXES) for s in syms.undefined)
    funcs = []
    for m in metas:
        def addr(suffix, name=m.name):
            sym = name + suffix
            return _symbol_address(lib, sym) if sym in syms.defined else None
        status, errors = addr("__status"), addr("__errors")
        funcs.append(Function(m, addr(""), addr("__repeat"), lib, gomp,
                              (status, errors) if status and errors else None))
    return Module(funcs, None, None, lib)


def _dlopen_private(path: str):
    fd, tmp = tempfile.mkstemp(prefix="tas-lib-", suffix=".so")
    os.close(fd)
    try:
        shutil.copyfile(path, tmp)
        try:
            return ctypes.CDLL(tmp, mode=ctypes.RTLD_LOCAL)
        except OSError as e:
            raise BuildError(f"load_module: dlopen of {path!r} failed: "
                             f"{str(e).replace(tmp, path)}") from None
    finally:
        os.unlink(tmp)


def _symbol_address(lib, name: str) -> int:
    try:
        ptr = ctypes.cast(lib[name], ctypes.c_void_p).value
    except AttributeError:
        ptr = None
    if not ptr:
        raise BuildError(f"load_module: symbol {name!r} is listed but dlsym cannot find it")
    return ptr
