"""Exported libraries as tar files: a JSON manifest and named members, nothing pickled.

``save_library(path, kind, manifest, files)`` writes ``manifest.json`` (``{"format": ...,
"kind": kind, ...}``) and the named files into a tar, atomically (a temporary file
renamed into place); ``read_library(path)`` reads them back and checks the format.
Which loader a kind goes to is ``export.load_module``'s business; this module has no
runtime imports, so ``Module`` can write libraries without an import cycle.
"""
from __future__ import annotations

import io
import json
import os
import tarfile
import tempfile

from ..errors import BuildError

__all__ = ["FORMAT", "KERNEL_KIND", "save_library", "read_library"]

FORMAT = "tensor-autosched-library/1"
# a kernel module exported as a tar: its object code (signatures embedded) as lib0.o
KERNEL_KIND = "kernel_objects"
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
