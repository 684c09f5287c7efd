"""Compilation target: ``"llvm"`` is the host CPU; ``"llvm -mcpu=... -num-cores=N"`` is parsed.

A Target is immutable and its ``str()`` is stable (options in a fixed order, host values
filled in), because it is written into tuning records and hashed into cache keys.
``parse_target(str(t)) == t`` holds for every Target built by ``parse_target``: a triple
other than the host's is written out as ``-mtriple=`` so it survives the round trip.

TVM's spellings work too: ``Target("llvm -mcpu=X")`` is ``parse_target("llvm -mcpu=X")``
(the field form ``Target(kind, mcpu, mattr, num_cores, triple[, opt_level])`` stays),
``Target(target="llvm", host="llvm")`` with ``target.host`` (not part of equality or str),
``target.kind.name`` is ``"llvm"`` (``kind`` is a str with a ``name``), and
``with Target(...):`` makes it ``Target.current()`` for the block (per thread, nested).
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import cache

import llvmlite.binding as llvm

from .errors import BuildError

# Every use of LLVM's objects in this process holds this lock: llvmlite is not thread-safe
# (the JIT, the compiler and the cache flusher all share one LLVM).
LLVM_LOCK = threading.RLock()
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


class TargetKind(str):
    """A target's kind: the string ``"llvm"``, with TVM's ``kind.name``."""
    __slots__ = ()

    @property
    def name(self) -> str:
        return str(self)


_SCOPE = threading.local()     # .stack: the Targets of the enclosing ``with`` blocks
_FIELDS = ("kind", "mcpu", "mattr", "num_cores", "triple", "opt_level")


def _scope_stack() -> list:
    stack = getattr(_SCOPE, "stack", None)
    if stack is None:
        stack = _SCOPE.stack = []
    return stack


@dataclass(frozen=True, init=False)
class Target:
    kind: TargetKind
    mcpu: str
    mattr: tuple
    num_cores: int
    triple: str
    opt_level: int = 3

    def __init__(self, kind=None, mcpu=None, mattr=(), num_cores=None, triple=None,
                 opt_level=3, host=None, *, target=None):
        if target is not None:    # TVM's keyword form Target(target="llvm", host="llvm")
            if kind is not None:
                raise TypeError(f"Target(kind={kind!r}, target={target!r}): give the target "
                                "once, positionally or as target=")
            kind = target
        if kind is None:
            raise TypeError("Target(target, host=None): the target is required, e.g. "
                            "Target(\"llvm\")")
        # Not a dataclass field: equality, hashing and str() (record and cache keys) ignore
        # the host, which on a CPU-only compiler is always a CPU target.
        object.__setattr__(self, "_host", None if host is None else parse_target(host))
        if mcpu is None:      # TVM's Target("llvm -mcpu=..."), or a copy of a Target
            if mattr != () or num_cores is not None or triple is not None or opt_level != 3:
                raise TypeError("Target(text): give the options inside the string, e.g. "
                                "Target(\"llvm -mcpu=znver4 -num-cores=4\")")
            t = parse_target(kind)
            values = tuple(getattr(t, f) for f in _FIELDS)
        else:
            if num_cores is None or triple is None:
                raise TypeError("Target(kind, mcpu, mattr, num_cores, triple[, opt_level]): "
                                "num_cores and triple are required")
            values = (TargetKind(kind), mcpu, tuple(mattr), num_cores, triple, opt_level)
        for name, value in zip(_FIELDS, values):
            object.__setattr__(self, name, value)

    @property
    def host(self) -> Target | None:
        """The host Target given as ``host=`` (TVM's ``target.host``), else None."""
        return getattr(self, "_host", None)

    @staticmethod
    def from_string(text: str) -> Target:
        return parse_target(text)

    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        """The Target of the innermost enclosing ``with Target(...)`` block (TVM's)."""
        stack = _scope_stack()
        if stack:
            return stack[-1]
        if not allow_none:
            raise BuildError("Target.current(allow_none=False): no target is in scope; "
                             "use `with Target(\"llvm\"):`")
        return None

    def __enter__(self) -> Target:
        _scope_stack().append(self)
        return self

    def __exit__(self, *exc) -> None:
        stack = _scope_stack()
        if stack and stack[-1] is self:
            stack.pop()

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


def parse_target_lenient(text) -> tuple:
    """``(Target, ignored)`` of a target string written elsewhere, e.g. in a TVM tuning
    log: the ``-name=value`` options this compiler does not model (TVM's
    ``-link-params=0``, ``-libs=...``, ``-model=...``) are left out and returned as
    ``ignored`` instead of raising; everything else is checked as ``parse_target`` does
    (an unknown kind or a bad value still raises BuildError)."""
    if isinstance(text, Target):
        return text, ()
    if not isinstance(text, str) or not text.split() or text.split()[0] != "llvm":
        return parse_target(text), ()       # raises, naming the whole string
    words = text.split()
    kept = [words[0]]
    ignored: list = []
    for w in words[1:]:
        name = w[1:].partition("=")[0] if w.startswith("-") and "=" in w else None
        (kept if name is None or name in _KNOWN_OPTS else ignored).append(w)
    return parse_target(" ".join(kept)), tuple(ignored)


def _default_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def host_target() -> Target:
    return parse_target("llvm")
