"""Read the symbol tables of an ELF64 object or shared library, without loading it.

Role: before handing an object to the JIT, learn which functions it defines (is there a
``<name>__repeat`` timing wrapper?) and which external symbols it needs, so a missing
function or an unresolvable library symbol becomes a precise BuildError instead of the
JIT's vague "Failed to materialize symbols".  ``read_symbol_data`` reads the contents of
data symbols (the kernel metadata a saved module embeds) from ``.o`` and ``.so`` files.

Invariant: this never raises on bad bytes; anything that is not a well-formed little-endian
ELF64 object or library yields None, and the caller lets the JIT linker (or dlopen) judge it.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_SHT_SYMTAB = 2
_SHT_NOBITS = 8
_SHT_DYNSYM = 11
_ET_NAMES = {1: "relocatable", 2: "executable", 3: "shared"}
_STB_LOCAL = 0
_SHN_UNDEF = 0


@dataclass(frozen=True)
class ObjectSymbols:
    defined: frozenset     # global/weak symbols the object provides
    undefined: frozenset   # global/weak symbols it needs from elsewhere


def read_symbols(obj: bytes):
    """ObjectSymbols of an ELF64 LE object or shared library, or None when ``obj`` is not
    one."""
    parsed = _parse_or_none(obj)
    if parsed is None:
        return None
    defined = {e.name for e in parsed.symbols if e.shndx != _SHN_UNDEF}
    undefined = {e.name for e in parsed.symbols if e.shndx == _SHN_UNDEF}
    return ObjectSymbols(frozenset(defined), frozenset(undefined - defined))


def elf_type(obj: bytes) -> str | None:
    """"relocatable" (.o), "shared" (.so), "executable", "other", or None if not ELF64 LE."""
    parsed = _parse_or_none(obj)
    return None if parsed is None else _ET_NAMES.get(parsed.e_type, "other")


def read_symbol_data(obj: bytes, prefix: str) -> dict | None:
    """{name: bytes} of the defined global data symbols whose name starts with ``prefix``
    (their initial contents in the file, in address order), or None when ``obj`` is not
    ELF64 LE.

    Works for objects (symbol values are offsets into their section) and shared
    libraries (virtual addresses, mapped back through the section's ``sh_addr``).
    """
    parsed = _parse_or_none(obj)
    if parsed is None:
        return None
    out = {}
    # Address order: in a library linked from several objects, that is the link order.
    for e in sorted(parsed.symbols, key=lambda e: (e.shndx, e.value)):
        if e.name in out or not e.name.startswith(prefix) or e.shndx in (_SHN_UNDEF,) or \
                e.shndx >= len(parsed.sections):
            continue
        sh = parsed.sections[e.shndx]
        if sh[1] == _SHT_NOBITS:
            continue
        start = sh[4] + e.value - sh[3]
        if not 0 <= start <= start + e.size <= len(obj):
            continue
        out[e.name] = bytes(obj[start:start + e.size])
    return out


@dataclass(frozen=True)
class _Sym:
    name: str
    shndx: int
    value: int
    size: int


@dataclass(frozen=True)
class _Parsed:
    e_type: int
    sections: list     # raw section header tuples (_SHDR fields)
    symbols: list      # of _Sym: global and weak symbols of .symtab and .dynsym


def _parse_or_none(obj):
    try:
        return _read(memoryview(obj))
    except (struct.error, IndexError, ValueError, UnicodeDecodeError):
        return None


def _read(buf) -> _Parsed | None:
    if len(buf) < _EHDR.size or bytes(buf[:4]) != b"\x7fELF" or buf[4] != 2 or buf[5] != 1:
        return None   # not ELF, not 64-bit, or not little-endian
    hdr = _EHDR.unpack_from(buf, 0)
    e_type, shoff, shentsize, shnum = hdr[1], hdr[6], hdr[11], hdr[12]
    if shentsize != _SHDR.size or shoff + shnum * shentsize > len(buf):
        return None
    sections = [_SHDR.unpack_from(buf, shoff + i * shentsize) for i in range(shnum)]
    symbols: list = []
    for sh in sections:
        if sh[1] not in (_SHT_SYMTAB, _SHT_DYNSYM):
            continue
        off, size, link, entsize = sh[4], sh[5], sh[6], sh[9]
        if entsize != _SYM.size or off + size > len(buf) or link >= shnum:
            return None
        str_off, str_size = sections[link][4], sections[link][5]
        if str_off + str_size > len(buf):
            return None
        strtab = bytes(buf[str_off:str_off + str_size])
        for k in range(size // entsize):
            name_off, info, _other, shndx, value, sym_size = _SYM.unpack_from(
                buf, off + k * entsize)
            if info >> 4 == _STB_LOCAL or name_off >= len(strtab):
                continue
            end = strtab.find(b"\0", name_off)
            name = strtab[name_off:end if end >= 0 else len(strtab)].decode()
            if name:
                symbols.append(_Sym(name, shndx, value, sym_size))
    return _Parsed(e_type, sections, symbols)
