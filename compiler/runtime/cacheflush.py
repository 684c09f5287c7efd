"""CPU cache flushing for ``time_evaluator(..., enable_cpu_cache_flush=True)``.

Role: before each timed repeat, evict a kernel's arguments from the caches the way TVM's
``cache_flush_cpu_non_first_arg`` does: every cache line of every array argument but the
first is flushed with ``clflush``.  The first argument is left alone because in a network it
is the previous operator's output, still in cache when this one runs.

Why not write a buffer larger than the last-level cache: its cost grows with the cache, not
with the kernel.  A VM can report a huge L3 (480 MiB was seen), and then every repeat of a
microsecond kernel paid ~0.2 s of flushing, which the runner's wall-time cutoff counted.
Flushing the arguments costs time in proportion to their bytes.

Invariants:
- The flusher is a tiny native function JIT-compiled once per process (re-created after a
  fork) by its own MCJIT engine, which owns its own target machine; LLVM is touched only
  under ``LLVM_LOCK``.  A ``fence seq_cst`` (mfence) orders the flushes before the timing.
- Hosts without ``clflush`` (not x86) fall back to ``flush_cpu_cache``: writing a buffer
  1.5x the size of the last-level cache, the old eviction.
"""
from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np

from ..target import LLVM_LOCK, _init_llvm

_LINE = 64                       # bytes per clflush; x86 lines are 64 bytes
_FLUSH_IR = f"""
declare void @llvm.x86.sse2.clflush(ptr)

define void @flush_lines(ptr %p, i64 %n) {{
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %off = phi i64 [0, %entry], [%next, %loop]
  %q = getelementptr i8, ptr %p, i64 %off
  call void @llvm.x86.sse2.clflush(ptr %q)
  %next = add i64 %off, {_LINE}
  %more = icmp ult i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  fence seq_cst
  ret void
}}
"""
_FLUSHER: dict = {"pid": None, "func": None, "engine": None}
_BUF: dict = {"buf": None}
_BUF_LOCK = threading.Lock()


def last_level_cache_bytes() -> int:
    """Size of the largest CPU cache per sysfs (32 MiB when it cannot be read)."""
    best = 0
    for d in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (d / "size").read_text().strip().upper()
        except OSError:
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * mult)
    return best or 32 << 20


def flush_cpu_cache() -> None:
    """Evict the caches by writing a buffer 1.5x the last-level cache (kept per process)."""
    with _BUF_LOCK:
        buf = _BUF["buf"]
        if buf is None:
            buf = np.zeros(last_level_cache_bytes() * 3 // 2, dtype=np.uint8)
            _BUF["buf"] = buf
        np.add(buf, 1, out=buf)     # read + write every line: dirty data displaces ours


def _is_x86() -> bool:
    _init_llvm()
    arch = llvm.get_process_triple().split("-", 1)[0]
    return arch in ("x86_64", "i386", "i486", "i586", "i686")


def _native_flusher():
    """The process's ``flush_lines(ptr, nbytes)`` as a ctypes function, or None off x86."""
    if _FLUSHER["pid"] == os.getpid():
        return _FLUSHER["func"]
    with LLVM_LOCK:
        if _FLUSHER["pid"] != os.getpid():
            func = engine = None
            if _is_x86():
                mod = llvm.parse_assembly(_FLUSH_IR)
                mod.verify()
                tm = llvm.Target.from_default_triple().create_target_machine(opt=2)
                engine = llvm.create_mcjit_compiler(mod, tm)
                engine.finalize_object()
                proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)
                func = proto(engine.get_function_address("flush_lines"))
            # The engine is kept alive with the function: it owns the code's memory.
            _FLUSHER.update(pid=os.getpid(), func=func, engine=engine)
    return _FLUSHER["func"]


def flush_arguments(regions) -> None:
    """Evict ``regions`` ((address, nbytes) pairs) from every cache level.

    Without a native flusher the whole cache is evicted instead (``flush_cpu_cache``).
    """
    func = _native_flusher()
    if func is None:
        flush_cpu_cache()
        return
    for addr, nbytes in regions:
        func(addr, nbytes)
