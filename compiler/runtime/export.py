"""Loading exported modules: ELF files, and tar libraries by their kind.

``load_module(path)`` of an ELF file (a kernel ``.so`` or ``.o`` written by
``Module.save``/``export_library``) goes to ``sharedlib.load_kernel_file``; of a tar
library (``tarlib``: a JSON manifest and named files), to the loader registered for its
kind (``register_loader``; the graph executor factory registers
"graph_executor_factory"), or for a kernel module exported as ``.tar``
(``tarlib.KERNEL_KIND``) to the object code linked in this process.
``load_module(bytes, funcs_meta)`` loads raw object code.  Nothing is unpickled:
manifests are JSON and arrays load with ``allow_pickle=False``.
"""
from __future__ import annotations

import os

from ..errors import BuildError
from . import jit
from .libmeta import read_embedded_meta
from .sharedlib import is_elf_file, load_kernel_file
from .tarlib import FORMAT, KERNEL_KIND, read_library, save_library

__all__ = ["save_library", "read_library", "register_loader", "load_module", "FORMAT"]

_LOADERS: dict = {}


def register_loader(kind: str, fn) -> None:
    """``fn(manifest, files) -> module`` loads exported libraries of ``kind``."""
    _LOADERS[kind] = fn


def load_module(obj_or_path, funcs_meta=None, **kwargs):
    """TVM's ``tvm.runtime.load_module(path)``; with object bytes and ``funcs_meta``, link
    raw object code (``jit.load_module``)."""
    if isinstance(obj_or_path, (bytes, bytearray, memoryview)):
        if funcs_meta is None:
            raise TypeError("load_module(obj_bytes, funcs_meta): funcs_meta is required")
        return jit.load_module(bytes(obj_or_path), funcs_meta, **kwargs)
    if funcs_meta is not None:
        raise TypeError(f"load_module(obj, funcs_meta): obj must be object-code bytes, got "
                        f"{type(obj_or_path).__name__}")
    if not isinstance(obj_or_path, (str, os.PathLike)):
        raise TypeError(f"load_module: expected a path or object bytes, got "
                        f"{type(obj_or_path).__name__}")
    if not os.path.isfile(obj_or_path):
        raise BuildError(f"load_module: {os.fspath(obj_or_path)!r} does not exist or is not "
                         "a file")
    if is_elf_file(obj_or_path):       # a .so/.o from Module.save/export_library
        return load_kernel_file(obj_or_path)
    manifest, files = read_library(obj_or_path)
    if manifest.get("kind") == KERNEL_KIND:
        data = files.get("lib0.o")
        if data is None:
            raise BuildError(f"load_module: {os.fspath(obj_or_path)} has no lib0.o")
        return jit.load_module(data, read_embedded_meta(data, os.fspath(obj_or_path)))
    loader = _LOADERS.get(manifest.get("kind"))
    if loader is None:
        raise BuildError(f"load_module: no loader for library kind {manifest.get('kind')!r} "
                         f"(known: {sorted(_LOADERS)}); import the package that defines it")
    return loader(manifest, files)
