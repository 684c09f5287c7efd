"""Exported libraries: object code and metadata in one tar file, loaded without compiling.

``load_module(path)`` of an ELF file (a kernel ``.so`` or ``.o`` written by
``Module.save``/``export_library``) goes to ``sharedlib.load_kernel_file``.
``save_library(path, kind, manifest, files)`` writes ``manifest.json`` (``{"format": ...,
"kind": kind, ...}``) and the named files (object code, JSON, ``.npz`` arrays) into a tar,
atomically (a temporary file renamed into place).  ``load_module(path)`` reads it back
and hands it to the loader registered for its kind (``register_loader``; the graph
executor factory registers "graph_executor_factory").  ``load_module(bytes,
funcs_meta)`` keeps loading raw object code as before.  Nothing is unpickled:
manifests are JSON and arrays load with ``allow_pickle=False``.
"""
from __future__ import annotations

import io
import json
import os
import tarfile
import tempfile

from ..errors import BuildError
from . import jit
from .sharedlib import is_elf_file, load_kernel_file

__all__ = ["save_library", "read_library", "register_loader", "load_module", "FORMAT"]

FORMAT = "tensor-autosched-library/1"
_LOADERS: dict = {}


def register_loader(kind: str, fn) -> None:
    """``fn(manifest, files) -> module`` loads exported libraries of ``kind``."""
    _LOADERS[kind] = fn


def save_library(path, kind: str, manifest: dict, files: dict) -> None:
    path = os.fspath(path)
    doc = dict(manifest, format=FORMAT, kind=kind)
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise BuildError(f"export_library: directory {d!r} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".export-", dir=d)
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w") as tar:
            _add(tar, "manifest.json", json.dumps(doc, indent=1).encode())
            for name, data in files.items():
                _add(tar, name, data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _add(tar, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def read_library(path) -> tuple:
    """``(manifest, {name: bytes})`` of an exported library (BuildError if not one)."""
    path = os.fspath(path)
    try:
        if not tarfile.is_tarfile(path):
            raise tarfile.ReadError("it is not a tar archive")
        with tarfile.open(path, mode="r") as tar:
            files = {}
            for m in tar.getmembers():
                if not m.isfile() or m.name.startswith("/") or ".." in m.name.split("/"):
                    raise BuildError(f"load_module: {path} has an unexpected member {m.name!r}")
                member = tar.extractfile(m)
                if member is None:
                    raise BuildError(f"load_module: {path}: member {m.name!r} is unreadable")
                files[m.name] = member.read()
    except (tarfile.TarError, OSError) as e:
        raise BuildError(f"load_module: {path} is not an exported library (tar), nor a "
                         f"shared library or object file (ELF): {str(e).splitlines()[0]}") from None
    try:
        manifest = json.loads(files.pop("manifest.json"))
    except (KeyError, ValueError) as e:
        raise BuildError(f"load_module: {path} has no valid manifest.json ({e})") from None
    if manifest.get("format") != FORMAT:
        raise BuildError(f"load_module: {path} has format {manifest.get('format')!r}; this "
                         f"build reads {FORMAT!r}")
    return manifest, files


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
    loader = _LOADERS.get(manifest.get("kind"))
    if loader is None:
        raise BuildError(f"load_module: no loader for library kind {manifest.get('kind')!r} "
                         f"(known: {sorted(_LOADERS)}); import the package that defines it")
    return loader(manifest, files)
