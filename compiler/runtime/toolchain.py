"""Linking objects into shared libraries with the system C compiler (TVM's
``tvm.contrib.cc.create_shared``).

Role: ``create_shared(output, objects)`` runs ``cc -shared -fPIC -o output objects...``
and adds the runtime libraries our generated code imports, found from the objects' own
undefined symbols: libgomp for parallel loops (``GOMP_*``/``omp_*``) and libm for scalar
math.  The library therefore loads with a plain ``dlopen`` in any process.

Invariants: the compiler is ``cc=`` if given, else ``$CC``, else ``cc`` on PATH; a missing
compiler or a failed link is a BuildError quoting the command and its output.  The
output appears only when the link succeeded (linked to a temporary name, then renamed).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from ..errors import BuildError
from .objfile import read_symbols

__all__ = ["create_shared", "find_cc", "runtime_link_flags"]

_GOMP_PREFIXES = ("GOMP_", "omp_")


def find_cc(cc=None) -> str:
    """The C compiler driver to link with (see the module docstring)."""
    name = cc or os.environ.get("CC") or "cc"
    path = shutil.which(name)
    if path is None:
        raise BuildError(f"create_shared: C compiler {name!r} not found on PATH; install one "
                         "(e.g. gcc) or pass cc=\"/path/to/cc\"")
    return path


def runtime_link_flags(objects, cwd=None) -> list:
    """``-l`` flags for the runtime libraries the ELF ``objects`` (paths, relative to
    ``cwd``) import."""
    needs_gomp = False
    for path in objects:
        try:
            with open(os.path.join(cwd or "", path), "rb") as fh:
                syms = read_symbols(fh.read())
        except OSError:
            continue          # the compiler driver reports unreadable inputs itself
        if syms is not None and any(s.startswith(_GOMP_PREFIXES) for s in syms.undefined):
            needs_gomp = True
    return (["-lgomp"] if needs_gomp else []) + ["-lm"]


def create_shared(output, objects, options=None, cc=None, cwd=None) -> None:
    """Link ``objects`` (paths, or one path) into the shared library ``output``."""
    output = os.fspath(output)
    objects = [os.fspath(objects)] if isinstance(objects, (str, os.PathLike)) \
        else [os.fspath(o) for o in objects]
    if not objects:
        raise BuildError(f"create_shared({output!r}): no objects to link")
    if options is not None and isinstance(options, str):
        options = [options]
    out_dir = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(out_dir):
        raise BuildError(f"create_shared: directory {out_dir!r} of {output!r} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".link-", suffix=".so", dir=out_dir)
    os.close(fd)
    cmd = [find_cc(cc), "-shared", "-fPIC", "-o", tmp, *objects, *(options or []),
           *runtime_link_flags(objects, cwd)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, check=False)
        if proc.returncode != 0:
            raise BuildError(f"create_shared: linking {output!r} failed (exit "
                             f"{proc.returncode}): {' '.join(cmd)}\n"
                             f"{(proc.stderr or proc.stdout).strip()}")
        os.replace(tmp, output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
