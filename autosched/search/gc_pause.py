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
collection after a round finds few garbage cycles (xgboost's predictions leave a small
class per call, ~8,000 objects a round in all), so inside a ``tuning_scope`` a round
ends with ``gc.freeze()``: what it kept moves to the collector's permanent generation,
which collections skip, and the outermost scope's exit unfreezes it.  Every
``COLLECT_EVERY`` rounds the scope unfreezes everything and runs one full collection
(0.2-0.4 s) before freezing again, so a long tuning run holds at most that many
rounds' garbage.

Invariants: the collector's state is the caller's again when a pause ends (enabled if
it was, a caller's disabled collector stays disabled; pauses nest); only a scope that
found no permanent generation freezes (a process that froze objects itself, e.g. before
forking, keeps its own, and nothing here unfreezes it); every object frozen inside a
scope is unfrozen when the outermost scope exits, normally or by an exception, so a
cycle that became garbage during tuning is collected afterwards, and one that became
garbage in a round is collected within ``COLLECT_EVERY`` rounds; helper and worker
processes pause their own way (``measure.workers.pause_gc_until_replied``).
"""
from __future__ import annotations

import contextlib
import gc

__all__ = ["paused_gc", "tuning_scope"]

COLLECT_EVERY = 8       # rounds between the full collections of a freezing scope

_SCOPE: list = []       # [may freeze, rounds since its last collection] while one is open


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
                _freeze_round()
            gc.enable()


def _freeze_round() -> None:
    """Freeze what a round kept; every ``COLLECT_EVERY`` rounds, collect everything
    first (the collector is still paused: it runs only when asked here)."""
    _SCOPE[1] += 1
    if _SCOPE[1] >= COLLECT_EVERY:
        _SCOPE[1] = 0
        gc.unfreeze()
        gc.collect()
    gc.freeze()


@contextlib.contextmanager
def tuning_scope():
    """Tuning (``tune``, ``TaskScheduler.tune``): rounds' survivors are frozen, and
    unfrozen on exit.  Scopes nest; the outermost decides and cleans up."""
    if _SCOPE:
        yield
        return
    _SCOPE[:] = [gc.get_freeze_count() == 0, 0]
    try:
        yield
    finally:
        froze = _SCOPE[0]
        _SCOPE.clear()
        if froze:
            gc.unfreeze()
