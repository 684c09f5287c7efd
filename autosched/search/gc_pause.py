"""Python's cyclic garbage collector around search rounds: paused during a round, and
while tuning, the round's survivors set aside instead of scanned.

Why: a search round allocates ~10^6 short-lived containers (states, iterators, atom
tuples), so with the collector running it made its full passes over every tracked
object of the process -- the feature and replay caches, the te ops -- many times a
round (30% of a round, measured here).  ``paused_gc`` pauses it; reference counting
still frees the round's garbage.  Resuming then cost one collection of everything the
round kept (40,000-150,000 objects: 60-80 ms on matmul 256, about 5% of a round, on
the round's critical path), and the later collections of the older generations
scanned the same objects again (0.2 s each, 0.3-0.5 s over a 200-trial tune).  A full
collection after a round finds no garbage cycles, so inside a ``tuning_scope`` a round
ends with ``gc.freeze()``: what it kept moves to the collector's permanent generation,
which collections skip, and the outermost scope's exit unfreezes it.

Invariants: the collector's state is the caller's again when a pause ends (enabled if
it was, a caller's disabled collector stays disabled; pauses nest); only a scope that
found no permanent generation freezes (a process that froze objects itself, e.g. before
forking, keeps its own, and nothing here unfreezes it); every object frozen inside a
scope is unfrozen when the outermost scope exits, normally or by an exception, so a
cycle that became garbage during tuning is collected afterwards; helper and worker
processes pause their own way (``measure.workers.pause_gc_until_replied``).
"""
from __future__ import annotations

import contextlib
import gc

__all__ = ["paused_gc", "tuning_scope"]

_SCOPE: list = []       # [whether the outermost open scope may freeze] while one is open


@contextlib.contextmanager
def paused_gc():
    """Run a search round with the cyclic collector paused; inside a freezing
    ``tuning_scope``, the objects the round kept are frozen when it resumes."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if _SCOPE and _SCOPE[0]:
                gc.freeze()
            gc.enable()


@contextlib.contextmanager
def tuning_scope():
    """Tuning (``tune``, ``TaskScheduler.tune``): rounds' survivors are frozen, and
    unfrozen on exit.  Scopes nest; the outermost decides and cleans up."""
    if _SCOPE:
        yield
        return
    _SCOPE.append(gc.get_freeze_count() == 0)
    try:
        yield
    finally:
        froze = _SCOPE.pop()
        if froze:
            gc.unfreeze()
