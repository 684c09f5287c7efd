"""Kernel signatures embedded in saved object code and shared libraries.

Role: a saved ``.o`` (and any ``.so`` linked from it) must say which functions it exports
and their parameters, so ``load_module(path)`` can check call arguments without the
Python objects that built it.  The FuncMeta tuple is written as JSON into a read-only
global ``__tas_meta_<entry>`` (a NUL-terminated byte string) appended to the module's
LLVM IR before it is compiled; ``read_embedded_meta`` finds every such symbol in an ELF
file (several objects linked into one library each bring theirs) and decodes them.

Invariants:
- JSON only, never pickle: a foreign or tampered file can at worst fail to decode, which
  is a BuildError naming the file and what is wrong.
- The encoding walks the dataclass fields of FuncMeta and ParamMeta, so fields added to
  them later are written and read back without changes here (lists come back as tuples;
  values must be JSON types).  ``format`` versions the layout as a whole.
"""
from __future__ import annotations

import dataclasses
import json

from ..errors import BuildError
from .meta import FuncMeta, ParamMeta, normalize_funcs_meta
from .objfile import read_symbol_data

__all__ = ["META_FORMAT", "META_PREFIX", "meta_symbol", "encode_meta", "decode_meta",
           "ir_with_meta", "read_embedded_meta"]

META_FORMAT = "tensor-autosched-kernels/1"
META_PREFIX = "__tas_meta_"


def meta_symbol(entry_name: str) -> str:
    """The global holding the metadata of the module whose entry is ``entry_name``."""
    return META_PREFIX + entry_name


def _plain(value):
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _tuples(value):
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def _encode_dc(obj) -> dict:
    return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


def encode_meta(metas) -> str:
    """JSON text of a FuncMeta tuple (compact, stable key order)."""
    funcs = []
    for fm in metas:
        d = _encode_dc(fm)
        d["params"] = [_encode_dc(p) for p in fm.params]
        funcs.append(d)
    return json.dumps({"format": META_FORMAT, "functions": funcs}, sort_keys=True,
                      separators=(",", ":"))


def _decode_dc(cls, d, where: str):
    if not isinstance(d, dict):
        raise BuildError(f"{where}: expected a JSON object, got {type(d).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise BuildError(f"{where}: unknown field(s) {unknown}; this build knows "
                         f"{sorted(names)} (written by a newer version?)")
    try:
        return cls(**{k: _tuples(v) for k, v in d.items()})
    except TypeError as e:
        raise BuildError(f"{where}: {e}") from None


def decode_meta(text, source: str) -> tuple:
    """The validated FuncMeta tuple of ``encode_meta``'s JSON; BuildError naming
    ``source`` (a file, a symbol) when it is not that."""
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise BuildError(f"{source}: kernel metadata is not valid JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != META_FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise BuildError(f"{source}: kernel metadata has format {found!r}; this build "
                         f"reads {META_FORMAT!r}")
    funcs = doc.get("functions")
    if not isinstance(funcs, list) or not funcs:
        raise BuildError(f"{source}: kernel metadata lists no functions")
    out = []
    for k, fd in enumerate(funcs):
        where = f"{source}: function #{k}"
        if not isinstance(fd, dict) or not isinstance(fd.get("params"), list):
            raise BuildError(f"{where}: expected an object with a 'params' list")
        params = tuple(_decode_dc(ParamMeta, p, f"{where} param #{i}")
                       for i, p in enumerate(fd["params"]))
        out.append(_decode_dc(FuncMeta, dict(fd, params=[]), where))
        out[-1] = dataclasses.replace(out[-1], params=params)
    try:
        return normalize_funcs_meta(out)
    except (TypeError, ValueError) as e:
        raise BuildError(f"{source}: kernel metadata is inconsistent: {e}") from None


def _llvm_bytes(data: bytes) -> str:
    return "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:02X}"
                   for b in data)


def ir_with_meta(ir_text: str, metas) -> str:
    """``ir_text`` plus the metadata global of ``metas`` (named after the first, entry,
    function), ready to compile into a self-describing object."""
    data = encode_meta(metas).encode() + b"\0"
    sym = meta_symbol(metas[0].name)
    if f"@{sym} " in ir_text:
        raise BuildError(f"ir_with_meta: the IR already defines @{sym}")
    return (f"{ir_text.rstrip()}\n\n@{sym} = constant [{len(data)} x i8] "
            f"c\"{_llvm_bytes(data)}\", align 1\n")


def read_embedded_meta(data: bytes, source: str) -> tuple:
    """The FuncMeta tuple of every metadata global in ELF ``data`` (an object or shared
    library), in address order (a library's first linked object gives its entry);
    BuildError if there is none."""
    found = read_symbol_data(data, META_PREFIX)
    if found is None:
        raise BuildError(f"{source}: not an ELF64 object or shared library")
    if not found:
        raise BuildError(f"{source}: holds no kernel metadata (no {META_PREFIX}* symbol); "
                         "it was not saved by Module.save/export_library of this compiler")
    metas: list = []
    for sym, raw in found.items():
        metas.extend(decode_meta(raw.rstrip(b"\0").decode(errors="replace"),
                                 f"{source} ({sym})"))
    try:
        return normalize_funcs_meta(metas)
    except ValueError as e:
        raise BuildError(f"{source}: {e}") from None
