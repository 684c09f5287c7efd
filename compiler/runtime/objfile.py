"""Read the symbol table of an ELF64 object, without loading it.

Role: before handing an object to the JIT, learn which functions it defines (is there a
``<name>__repeat`` timing wrapper?) and which external symbols it needs, so a missing
function or an unresolvable library symbol becomes a precise BuildError instead of the
JIT's vague "Failed to materialize symbols".

Invariant: this never raises on bad bytes; anything that is not a well-formed little-endian
ELF64 relocatable object yields None, and the caller lets the JIT linker judge it.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_SHT_SYMTAB = 2
_STB_LOCAL = 0
_SHN_UNDEF = 0


@dataclass(frozen=True)
class ObjectSymbols:
    defined: frozenset     # global/weak symbols the object provides
    undefined: frozenset   # global/weak symbols it needs from elsewhere


def read_symbols(obj: bytes):
    """ObjectSymbols of an ELF64 LE object, or None when ``obj`` is not one."""
    try:
        return _read(memoryview(obj))
    except (struct.error, IndexError, ValueError, UnicodeDecodeError):
        return None


def _read(buf) -> ObjectSymbols | None:
    if len(buf) < _EHDR.size or bytes(buf[:4]) != b"\x7fELF" or buf[4] != 2 or buf[5] != 1:
        return None   # not ELF, not 64-bit, or not little-endian
    hdr = _EHDR.unpack_from(buf, 0)
    shoff, shentsize, shnum = hdr[6], hdr[11], hdr[12]
    if shentsize != _SHDR.size or shoff + shnum * shentsize > len(buf):
        return None
    sections = [_SHDR.unpack_from(buf, shoff + i * shentsize) for i in range(shnum)]
    defined: set = set()
    undefined: set = set()
    for sh in sections:
        if sh[1] != _SHT_SYMTAB:
            continue
        off, size, link, entsize = sh[4], sh[5], sh[6], sh[9]
        if entsize != _SYM.size or off + size > len(buf) or link >= shnum:
            return None
        str_off, str_size = sections[link][4], sections[link][5]
        if str_off + str_size > len(buf):
            return None
        strtab = bytes(buf[str_off:str_off + str_size])
        for k in range(size // entsize):
            name_off, info, _other, shndx, _value, _size = _SYM.unpack_from(buf, off + k * entsize)
            if info >> 4 == _STB_LOCAL or name_off >= len(strtab):
                continue
            end = strtab.find(b"\0", name_off)
            name = strtab[name_off:end if end >= 0 else len(strtab)].decode()
            if name:
                (undefined if shndx == _SHN_UNDEF else defined).add(name)
    return ObjectSymbols(frozenset(defined), frozenset(undefined))
