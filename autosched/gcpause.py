"""When the tuner's process runs Python's cyclic garbage collector.

Role: ``paused_gc`` pauses the collector for a block (a search round);
``paused_gc(defer=True)`` leaves it paused after the block and owes a resume, which
``resume_deferred`` pays.  ``LocalBuilder`` pays it as soon as one of its workers has
nothing left to build while another still compiles (the batch's tail, where a core
idles), and ``SketchPolicy`` pays it after measuring at the latest.

Why: a search round allocates ~10^6 short-lived containers (states, iterators, atom
tuples) while its caches keep ~10^5 of them; with the collector running, its passes
traverse the survivors many times a round (30% of a round, measured).  Paused, the
round's garbage is still freed by reference counting, but the first collection after
the pause traverses every survivor once more: 0.1-0.15 s a round on matmul 256 and
512, measured, 12% of the search.  Run at the end of the search, it delayed the
builds; run in the builds' tail, it takes a core that was idle.

Invariants: a collector the caller had disabled stays disabled (nothing is owed);
nested pauses are fine; an owed resume is paid within the round that owes it (the
policy pays it once the measurement returns, whatever the builder did, and when the
round fails), so the collector is never left paused between rounds.  The builder's
resume also collects the young and middle generations at once (``collect_in_idle``),
which the first allocations would otherwise start, and which left a collection of
the middle one due while the cost model trained (0.1 s, measured); the full
collection keeps its own schedule.
"""
from __future__ import annotations

import contextlib
import gc

__all__ = ["collect_in_idle", "paused_gc", "resume_deferred", "resume_owed"]

_OWED: list = []        # [True] while a deferred pause owes a resume


@contextlib.contextmanager
def paused_gc(defer: bool = False):
    """Run a block with the cyclic collector paused; with ``defer``, keep it paused
    afterwards until ``resume_deferred`` (see the module docstring)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if defer:
                _OWED[:] = [True]
            else:
                gc.enable()


def resume_owed() -> bool:
    """Whether a deferred pause still owes a resume."""
    return bool(_OWED)


def resume_deferred(collect: bool = False) -> bool:
    """Re-enable the collector if a deferred pause owes it; whether it did.  With
    ``collect``, also collect the young and middle generations now (the pause's
    survivors and what they promote), so that no collection of them falls due later
    (e.g. while the cost model trains)."""
    if not _OWED:
        return False
    _OWED.clear()
    gc.enable()
    if collect:
        gc.collect(1)
    return True


def collect_in_idle() -> None:
    """``resume_deferred(collect=True)``: for a moment when a core idles (LocalBuilder's
    tail)."""
    resume_deferred(collect=True)
