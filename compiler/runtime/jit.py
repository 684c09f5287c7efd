"""LLVM IR text -> object code -> functions loaded into this process.

Role: ``compile_ir`` parses, verifies, optimizes (new pass builder) and emits a
position-independent object, so it can run in a worker process and the bytes can be
shipped back; ``load_module`` links such an object into the process-wide LLJIT engine and
wraps it in a ``Module``; ``ModuleArtifacts`` recompiles a module's IR with its
signatures embedded (libmeta) when ``Module.save``/``export_library`` write files.

Invariants:
- LLVM is only touched under ``_LOCK``: llvmlite's objects are not thread-safe, and one
  Python process shares one LLVM.  Each compile parses into a fresh LLVMContext that is
  disposed afterwards, so thousands of tuning compiles do not grow the global context.
- ``module.verify()`` runs before any optimization: this LLVM has assertions on, and
  unverified IR can abort the process instead of raising.  It runs after optimization
  too: a module LLVM's own optimizer broke is optimized again with fewer loop passes
  (``_FALLBACK_TUNINGS``), or BuildError is raised; it never reaches codegen.
- One LLJIT per process (re-created after fork).  Every loaded object becomes a uniquely
  named JIT library whose ResourceTracker is owned by the Module: the code stays mapped
  exactly as long as a Module (or a Function taken from it) is alive.
- External symbols resolve against the process, into which libgomp and libm are loaded
  permanently once (and the packed-function trampoline registered).  Objects needing a
  symbol nobody provides are rejected before linking.

Known leaks (in llvmlite/LLVM, not fixable from Python): each optimization run leaks
~75 KB (llvmlite's PassBuilder never frees its PassInstrumentationCallbacks, and reusing a
PassBuilder would call dangling instrumentation callbacks), each loaded object ~9 KB (a
JITDylib cannot be removed).  ``process_stats()`` counts both, so long-lived worker
processes can be recycled after a few thousand compiles.
"""
from __future__ import annotations

import ctypes.util
import itertools
import os
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

import llvmlite.binding as llvm

from ..errors import BuildError
from ..target import LLVM_LOCK, Target, _init_llvm, host_cpu, parse_target
from .cache import DEFAULT_CACHE, ObjectCache, resolve_cache
from .libmeta import ir_with_meta
from .meta import normalize_funcs_meta, resolve_alignment
from .module import Function, Module
from .objfile import read_symbols
from .packed import TRAMPOLINE_SYMBOL, install_trampoline, trampoline_address

_LOCK = LLVM_LOCK          # shared with the cache flusher (runtime.cacheflush)
_LIB_IDS = itertools.count()
_STATS = {"compiles": 0, "loads": 0}
# Symbols the JIT linker itself provides; they are never looked up in the process.
_LINKER_SYMBOLS = frozenset({"_GLOBAL_OFFSET_TABLE_", "__dso_handle"})


@dataclass(frozen=True)
class CompileOutput:
    """Everything one compilation produces (``get_source`` needs the two texts)."""
    object: bytes
    optimized_ir: str
    assembly: str


def process_stats() -> dict:
    """{"compiles": optimization runs, "loads": linked objects} in this process so far."""
    with _LOCK:
        return dict(_STATS)


def _target_of(target) -> Target:
    if isinstance(target, Target):
        return target
    if isinstance(target, str):
        return parse_target(target)
    raise TypeError(f"target {target!r}: expected a Target or a string such as 'llvm'")


def _opt_of(opt_level, target: Target) -> int:
    if opt_level is None:
        return target.opt_level
    if not isinstance(opt_level, int) or isinstance(opt_level, bool) or not 0 <= opt_level <= 3:
        raise ValueError(f"opt_level {opt_level!r}: expected an int in 0..3 or None")
    return opt_level


@cache
def runtime_libraries() -> dict:
    """Load libgomp and libm into the process once; returns {name: path or None}.

    Also registers the packed-function trampoline (``tir.call_packed``'s callee)."""
    install_trampoline()
    found = {}
    for name in ("gomp", "m"):
        path = ctypes.util.find_library(name)
        if path is not None:
            try:
                llvm.load_library_permanently(path)
            except RuntimeError:
                path = None
        found[name] = path
    return found


@lru_cache(maxsize=32)
def _target_machine(triple: str, cpu: str, features: str, opt: int):
    # Cached: creating one costs ~1-5 ms, and it is only ever used under _LOCK.
    try:
        tgt = llvm.Target.from_triple(triple)
    except RuntimeError as e:
        raise BuildError(f"target triple {triple!r} is not supported by this LLVM: {e}") from None
    return tgt.create_target_machine(cpu=cpu, features=features, opt=opt, reloc="pic",
                                     codemodel="default")


def compile_ir(ir_text: str, target="llvm", opt_level=None, cache=DEFAULT_CACHE) -> bytes:
    """Object code (bytes) for ``ir_text``; looked up in / stored to ``cache`` first.

    ``target`` is a Target or target string; ``opt_level`` None means the target's;
    ``cache`` is an ObjectCache, None (no caching) or DEFAULT_CACHE (the process default).
    Raises BuildError with LLVM's message when the IR does not parse or verify.
    """
    target = _target_of(target)
    opt = _opt_of(opt_level, target)
    _check_ir(ir_text)
    store: ObjectCache | None = resolve_cache(cache)
    if store is None:
        return _compile(ir_text, target, opt, want_source=False).object
    key = store.key(ir_text, target, opt)
    obj = store.get(key)
    if obj is None:
        obj = _compile(ir_text, target, opt, want_source=False).object
        store.put(key, obj)
    return obj


def cached_object(ir_text: str, target="llvm", opt_level=None, cache=DEFAULT_CACHE):
    """The cached object for ``ir_text`` if ``compile_ir`` would not need LLVM, else None
    (lets a caller send only the misses to worker processes)."""
    target = _target_of(target)
    store: ObjectCache | None = resolve_cache(cache)
    if store is None:
        return None
    return store.get(store.key(ir_text, target, _opt_of(opt_level, target)))


def compile_ir_full(ir_text: str, target="llvm", opt_level=None) -> CompileOutput:
    """Like ``compile_ir`` (never cached) but also returns optimized IR and assembly."""
    target = _target_of(target)
    opt = _opt_of(opt_level, target)
    _check_ir(ir_text)
    return _compile(ir_text, target, opt, want_source=True)


def _check_ir(ir_text) -> None:
    if not isinstance(ir_text, str):
        raise TypeError(f"ir_text: expected LLVM IR as a str, got {type(ir_text).__name__}")


# Pipelines tried in turn when LLVM's optimizer returns a module that fails its own
# verifier.  Seen with LLVM 22.1 (fuzz seed 2047, case 9247: a sparse_dense with a
# transposed copy loop): the loop vectorizer and the unroller together left a
# shufflevector before the loads it reads, and instruction selection then aborted the
# whole process on an assertion.  Each later entry turns off more of the loop passes;
# our codegen writes vector IR itself, so these only lose LLVM's own extra vectorizing.
_FALLBACK_TUNINGS: tuple[dict, ...] = (
    {}, {"loop_vectorization": False},
    {"loop_vectorization": False, "loop_unrolling": False, "loop_interleaving": False,
     "slp_vectorization": False})


def _parse(ir_text: str, ctx, target: Target, tm):
    try:
        mod = llvm.parse_assembly(ir_text, context=ctx)
    except RuntimeError as e:
        raise BuildError(f"LLVM IR does not parse: {e}") from None
    try:
        mod.verify()
    except RuntimeError as e:
        mod.close()
        raise BuildError(f"LLVM IR fails verification: {e}") from None
    mod.triple = target.triple
    mod.data_layout = str(tm.target_data)
    return mod


def _optimized(ir_text: str, ctx, target: Target, tm, opt: int):
    """The parsed and optimized module, verified after optimization too (see
    ``_FALLBACK_TUNINGS``): invalid IR must never reach codegen."""
    last = ""
    for tuning in _FALLBACK_TUNINGS:
        mod = _parse(ir_text, ctx, target, tm)
        try:
            # A fresh PassBuilder per run: llvmlite registers per-run instrumentation
            # callbacks into it that dangle once the run returns.
            pto = llvm.create_pipeline_tuning_options(speed_level=opt)
            for name, value in tuning.items():
                setattr(pto, name, value)
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
            _STATS["compiles"] += 1
            mod.verify()
            return mod
        except RuntimeError as e:
            last = str(e).strip().splitlines()[0] if str(e).strip() else "?"
            mod.close()
        except BaseException:
            mod.close()      # before the caller closes its context
            raise
    raise BuildError(f"LLVM's optimizer (level {opt}) turned valid IR into invalid IR "
                     f"with every pipeline tried ({last}); compile at opt_level=0, or "
                     "change the schedule")


def _compile(ir_text: str, target: Target, opt: int, want_source: bool) -> CompileOutput:
    _init_llvm()
    with _LOCK:
        tm = _target_machine(target.triple, target.mcpu, target.features, opt)
        ctx = llvm.create_context()
        mod = None
        try:
            mod = _optimized(ir_text, ctx, target, tm, opt)
            obj = tm.emit_object(mod)
            ll = str(mod) if want_source else ""
            asm = tm.emit_assembly(mod) if want_source else ""
            return CompileOutput(bytes(obj), ll, asm)
        finally:
            if mod is not None:
                mod.close()    # before its context: a module must not outlive it
            ctx.close()


class _Engine:
    """The process's LLJIT; a forked child gets a fresh one (pid check)."""

    def __init__(self):
        self.pid = None
        self.lljit = None

    def get(self):
        if self.pid != os.getpid():
            _init_llvm()
            runtime_libraries()
            # The parent's engine (inherited memory) is deliberately leaked, not disposed:
            # its code may still be referenced by inherited Module objects.
            self.lljit = llvm.create_lljit_compiler()
            self.pid = os.getpid()
        return self.lljit


_ENGINE = _Engine()


def load_module(obj: bytes, funcs_meta, ir_text: str | None = None, target=None,
                opt_level=None) -> Module:
    """Link object code into this process and return a callable Module.

    ``funcs_meta`` lists each function as ``(name, [(param, shape, dtype), ...])`` or
    FuncMeta; the first is the entry called by ``mod(...)``.  ``ir_text`` (the unoptimized
    IR the object came from) and ``target``/``opt_level`` let ``get_source`` recompute the
    optimized IR and assembly on demand; it also tells which pointer alignment the code
    assumes (its ``align N`` attributes), so only arrays violating that get copied.
    """
    if not isinstance(obj, (bytes, bytearray, memoryview)):
        raise TypeError(f"load_module: obj must be object-code bytes, got {type(obj).__name__}")
    obj = bytes(obj)
    target = _target_of(target) if target is not None else None
    if target is not None:
        _check_runnable(target)
    if ir_text is not None:
        _check_ir(ir_text)
    metas = resolve_alignment(normalize_funcs_meta(funcs_meta), ir_text)
    syms = read_symbols(obj)
    names = [m.name for m in metas]
    repeat = {n: syms is None or f"{n}__repeat" in syms.defined for n in names}
    status = {n: syms is not None and f"{n}__status" in syms.defined
              and f"{n}__errors" in syms.defined for n in names}
    if syms is not None:
        _check_symbols(syms, names)
    exports = names + [f"{n}__repeat" for n in names if repeat[n]]
    exports += [f"{n}{sfx}" for n in names if status[n] for sfx in ("__status", "__errors")]
    tracker = _link(obj, exports)
    # Conservatively per object: any function may reach the outlined parallel regions.
    gomp = syms is not None and any(s.startswith("GOMP_") for s in syms.undefined)
    funcs = [Function(m, tracker[m.name], tracker[f"{m.name}__repeat"] if repeat[m.name]
                      else None, tracker, gomp,
                      (tracker[f"{m.name}__status"], tracker[f"{m.name}__errors"])
                      if status[m.name] else None) for m in metas]
    source = artifacts = None
    if ir_text is not None:
        src_target = target or parse_target("llvm")

        def source():
            return compile_ir_full(ir_text, src_target, opt_level)
        artifacts = ModuleArtifacts(ir_text, metas, src_target, opt_level)
    return Module(funcs, obj, source, tracker, artifacts)


class ModuleArtifacts:
    """The files a Module built from IR can be saved as (``Module.save``): its IR with
    the signature metadata appended (libmeta), compiled like the module itself."""

    def __init__(self, ir_text: str, metas, target: Target, opt_level):
        # Only references: the IR with metadata is assembled when a file is written.
        self.ir_text, self.metas = ir_text, metas
        self.target, self.opt_level = target, opt_level

    def save_bytes(self, kind: str) -> bytes:
        """``kind``: "obj" (object code), "ll" (optimized IR), "asm", or "bc" (bitcode)."""
        ir_text = ir_with_meta(self.ir_text, self.metas)
        if kind == "obj":
            return compile_ir(ir_text, self.target, self.opt_level)
        out = compile_ir_full(ir_text, self.target, self.opt_level)
        if kind == "ll":
            return out.optimized_ir.encode()
        if kind == "asm":
            return out.assembly.encode()
        if kind != "bc":
            raise ValueError(f"ModuleArtifacts.save_bytes: unknown kind {kind!r}")
        with _LOCK:
            ctx = llvm.create_context()
            mod = llvm.parse_assembly(out.optimized_ir, context=ctx)
            try:
                return bytes(mod.as_bitcode())
            finally:
                mod.close()
                ctx.close()


def _check_symbols(syms, names) -> None:
    missing = [n for n in names if n not in syms.defined]
    if missing:
        raise BuildError(f"object does not define function(s) {missing} listed in funcs_meta; "
                         f"it defines {sorted(syms.defined)}")
    runtime_libraries()
    unresolved = sorted(s for s in syms.undefined - _LINKER_SYMBOLS
                        if not llvm.address_of_symbol(s))
    if unresolved:
        hint = ""
        if any(s.startswith(("GOMP_", "omp_")) for s in unresolved):
            hint = " (parallel loops need libgomp, which was not found on this machine)"
        raise BuildError(f"object needs symbol(s) {unresolved} that no loaded library "
                         f"provides{hint}")


def link_object(obj: bytes, exports) -> Any:
    """Link object code into this process's JIT and return its resource tracker:
    ``tracker[name]`` is the address of exported symbol ``name``.  The code stays mapped
    while the tracker is alive (``load_module`` wraps this for PrimFunc objects; use
    this directly for hand-written IR)."""
    if not isinstance(obj, (bytes, bytearray, memoryview)):
        raise TypeError(f"link_object: obj must be object-code bytes, got {type(obj).__name__}")
    return _link(bytes(obj), list(exports))


def link_objects(objs, exports) -> Any:
    """Link several objects into one JIT library (their symbols resolve each other:
    a graph driver calling its kernels) and return its resource tracker."""
    objs = [bytes(o) for o in objs]
    with _LOCK:
        lljit = _ENGINE.get()
        builder = llvm.JITLibraryBuilder()
        for o in objs:
            builder.add_object_img(o)
        builder.add_current_process().import_symbol(TRAMPOLINE_SYMBOL, trampoline_address())
        for name in exports:
            builder.export_symbol(name)
        _STATS["loads"] += 1
        try:
            return builder.link(lljit, f"tas_module_{next(_LIB_IDS)}")
        except RuntimeError as e:
            raise BuildError(f"linking {len(objs)} objects failed: {e}") from None


def _link(obj: bytes, exports):
    with _LOCK:
        lljit = _ENGINE.get()
        builder = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
        builder.import_symbol(TRAMPOLINE_SYMBOL, trampoline_address())
        for name in exports:
            builder.export_symbol(name)
        _STATS["loads"] += 1
        try:
            return builder.link(lljit, f"tas_module_{next(_LIB_IDS)}")
        except RuntimeError as e:
            raise BuildError(f"loading object code ({len(obj)} bytes) failed: {e}") from None


def _check_runnable(target: Target) -> None:
    check_runnable(target)


def check_runnable(target: Target, without=()) -> None:
    """Raise BuildError if this CPU cannot run code for ``target`` (it would die with
    SIGILL, not raise).  ``without`` lists host features to treat as missing (a way to
    test how a farm of different machines routes work)."""
    cpu, feats, triple = host_cpu()
    if target.triple.split("-")[0] != triple.split("-")[0]:
        raise BuildError(f"target {target}: triple {target.triple!r} cannot run on this "
                         f"host ({triple!r})")
    host = set(feats.split(",")) - {f if f.startswith("+") else "+" + f for f in without}
    lacking = [f for f in target.mattr if f.startswith("+") and f not in host]
    if lacking:
        raise BuildError(f"target {target}: host CPU {cpu!r} lacks features {lacking}")
    host_bits = 512 if "+avx512f" in host else 256 if "+avx2" in host else 128
    if target.vector_bits > host_bits:
        raise BuildError(f"target {target}: {target.vector_bits}-bit vectors, but host CPU "
                         f"{cpu!r} has {host_bits}-bit vectors")
