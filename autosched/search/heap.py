"""glibc's heap around search rounds: freed memory stays in the process while tuning.

Why: featurizing a search round's states makes numpy temporaries of a few MB per
batch, hundreds of times a round.  glibc serves blocks that large with ``mmap`` and
gives them back with ``munmap`` (or trims the heap's top once 128 KiB are free), so
every batch faults its pages in again.  On these VMs a page the guest gave back may
also have been reclaimed by the host, which makes the next fault dearer.  Measured in
one process, alternating with and without the scope (10 runs each), featurizing a fresh
generation of about 1,000 states took a median of 242 against 270 ms on conv2d (best
runs 139 and 222), 102 against 127 ms on matmul 256 and 172 against 207 on depthwise,
with 40% of the page faults; whole search rounds, in fresh processes paired against the
tree before (4 ABBA pairs, the same picks), took 0.92x as long on conv2d, 0.97x on
matmul 256 and 512 and 1.03x on depthwise.  Builds gained nothing (a matmul 512
candidate's compile took 72.5 against 72.6 ms of CPU), so the build workers keep
glibc's defaults.

``retained_heap()`` raises the mmap threshold to its maximum (32 MiB) and the trim
threshold to ``TRIM_BYTES``, so freed blocks are reused, not returned; on the
outermost scope's exit it restores glibc's default values and trims the heap, giving
the round's peak back to the system.  Helper processes evolving islands are the
tuner's own and keep the setting for life (``retain_in_this_process``).

Invariants: a no-op where the C library has no ``mallopt`` (musl, macOS) or when
``SearchParams(retain_heap=False)``; scopes nest and only the outermost restores.
After a scope, the thresholds are glibc's default values but static (glibc's dynamic
mmap threshold, which rises as large blocks are freed, stays off) -- the documented
price of setting them.
"""
from __future__ import annotations

import contextlib
import ctypes

__all__ = ["retained_heap", "retains_heap", "retain_in_this_process",
           "heap_settings_supported"]

# mallopt's parameter numbers (malloc.h)
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
MMAP_BYTES = 32 << 20       # glibc's largest accepted mmap threshold on 64-bit
TRIM_BYTES = 512 << 20      # free memory kept at the heap's top before trimming
TOP_PAD_BYTES = 16 << 20    # extra asked of the system per growth (touched when used)
DEFAULT_BYTES = 128 << 10   # glibc's defaults of all three

_DEPTH = [0]
_RETAINED_FOR_LIFE = [False]


def _libc():
    # the process's own symbols, which hold the C library's: find_library would run
    # ldconfig in a subprocess at import time
    try:
        lib = ctypes.CDLL(None)
    except OSError:
        return None
    if not hasattr(lib, "mallopt") or not hasattr(lib, "malloc_trim"):
        return None
    lib.mallopt.argtypes, lib.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    lib.malloc_trim.argtypes, lib.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lib


_LIBC = _libc()


def heap_settings_supported() -> bool:
    """Whether this process's C library takes glibc's heap settings."""
    return _LIBC is not None


def _set(mmap_bytes: int, trim_bytes: int, pad_bytes: int) -> bool:
    """All three settings; False if the library refused any."""
    assert _LIBC is not None
    ok = _LIBC.mallopt(M_MMAP_THRESHOLD, mmap_bytes) == 1
    ok = (_LIBC.mallopt(M_TRIM_THRESHOLD, trim_bytes) == 1) and ok
    return (_LIBC.mallopt(M_TOP_PAD, pad_bytes) == 1) and ok


def retain_in_this_process() -> bool:
    """Keep freed memory for the rest of this process's life (a helper's); idempotent.
    Returns whether the settings apply."""
    if _LIBC is None:
        return False
    if not _RETAINED_FOR_LIFE[0]:
        _RETAINED_FOR_LIFE[0] = _set(MMAP_BYTES, TRIM_BYTES, TOP_PAD_BYTES)
    return _RETAINED_FOR_LIFE[0]


def retains_heap(policies) -> bool:
    """Whether tuning with ``policies`` keeps freed memory (``SearchParams.retain_heap``
    of each; a policy without SearchParams, e.g. a user's own, does)."""
    return all(getattr(getattr(p, "params", None), "retain_heap", True) for p in policies)


@contextlib.contextmanager
def retained_heap(enabled: bool = True):
    """While tuning: freed memory stays in this process's heap; the outermost scope
    restores glibc's default values and trims the heap on exit (also on an error or
    Ctrl-C).  ``enabled=False`` or a C library without ``mallopt``: nothing changes."""
    if not enabled or _LIBC is None or _RETAINED_FOR_LIFE[0]:
        yield
        return
    if _DEPTH[0] == 0:
        _set(MMAP_BYTES, TRIM_BYTES, TOP_PAD_BYTES)
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        if _DEPTH[0] == 0:
            _set(DEFAULT_BYTES, DEFAULT_BYTES, DEFAULT_BYTES)
            _LIBC.malloc_trim(0)
