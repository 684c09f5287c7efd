"""Compilation target: ``"llvm"`` is the host CPU; ``"llvm -mcpu=... -num-cores=N"`` is parsed.

A Target is immutable and its ``str()`` is stable (options in a fixed order, host values
filled in), because it is written into tuning records and hashed into cache keys.
``parse_target(str(t)) == t`` holds for every Target built by ``parse_target``: a triple
other than the host's is written out as ``-mtriple=`` so it survives the round trip.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache

import llvmlite.binding as llvm

from .errors import BuildError

_KNOWN_OPTS = ("mcpu", "mattr", "num-cores", "mtriple", "keys", "opt-level")


@cache
def _init_llvm() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@cache
def host_cpu() -> tuple:
    """(cpu name, feature string, triple) of this machine, as LLVM sees it."""
    _init_llvm()
    feats = llvm.get_host_cpu_features()
    flat = feats.flatten() if hasattr(feats, "flatten") else str(feats)
    return llvm.get_host_cpu_name(), flat, llvm.get_process_triple()


@dataclass(frozen=True)
class Target:
    kind: str
    mcpu: str
    mattr: tuple
    num_cores: int
    triple: str
    opt_level: int = 3

    @staticmethod
    def from_string(text: str) -> Target:
        return parse_target(text)

    @property
    def features(self) -> str:
        """LLVM feature string: the host's for the host CPU, else the explicit -mattr."""
        cpu, feats, _ = host_cpu()
        if self.mattr:
            return ",".join(self.mattr)
        return feats if self.mcpu == cpu else ""

    @property
    def vector_bits(self) -> int:
        f = self.features
        if "+avx512f" in f or self.mcpu in ("znver4", "znver5", "skylake-avx512",
                                               "icelake-server", "sapphirerapids",
                                               "cascadelake", "cooperlake"):
            return 512
        if "+avx2" in f or "+avx" in f:
            return 256
        return 128

    def vector_lanes(self, dtype_bits: int) -> int:
        return max(1, self.vector_bits // dtype_bits)

    def __str__(self) -> str:
        parts = [self.kind, "-keys=cpu", f"-mcpu={self.mcpu}"]
        if self.mattr:
            parts.append("-mattr=" + ",".join(self.mattr))
        parts.append(f"-num-cores={self.num_cores}")
        if self.triple != host_cpu()[2]:
            # Only a foreign triple is spelled out, so host strings stay short and stable.
            parts.append(f"-mtriple={self.triple}")
        if self.opt_level != 3:
            parts.append(f"-opt-level={self.opt_level}")
        return " ".join(parts)


def parse_target(text) -> Target:
    """Parse ``"llvm [-mcpu=X] [-mattr=+a,+b] [-num-cores=N] [-mtriple=T]"``."""
    if isinstance(text, Target):
        return text
    if not isinstance(text, str) or not text.split():
        raise BuildError(f"target {text!r}: expected a string such as \"llvm -mcpu=znver4\"")
    words = text.split()
    if words[0] != "llvm":
        raise BuildError(f"target {text!r}: unknown kind {words[0]!r}, expected 'llvm'")
    opts = {}
    for w in words[1:]:
        if not w.startswith("-") or "=" not in w:
            raise BuildError(f"target {text!r}: option {w!r} must look like -name=value")
        k, _, v = w[1:].partition("=")
        if k not in _KNOWN_OPTS:
            raise BuildError(f"target {text!r}: unknown option -{k}; expected one of {_KNOWN_OPTS}")
        opts[k] = v
    cpu, _, triple = host_cpu()
    try:
        cores = int(opts.get("num-cores", _default_cores()))
        opt = int(opts.get("opt-level", 3))
    except ValueError:
        raise BuildError(f"target {text!r}: -num-cores and -opt-level take integers") from None
    if cores < 1 or not 0 <= opt <= 3:
        raise BuildError(f"target {text!r}: num-cores must be >= 1 and opt-level in 0..3")
    mattr = tuple(a for a in opts.get("mattr", "").split(",") if a)
    return Target("llvm", opts.get("mcpu", cpu), mattr, cores, opts.get("mtriple", triple), opt)


def _default_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def host_target() -> Target:
    return parse_target("llvm")
