"""What the tuner's process does while a core idles in the builds' tail.

Role: LocalBuilder compiles a batch in worker processes; once no job is left to hand
out and a worker idles while the last builds finish (the batch's tail: ~0.5 s of an
idle core a round, measured on matmul 256/512), it calls ``work_in_idle`` over and
over, polling its workers in between, until that returns False or the batch is done.
Two kinds of work wait for that moment:

1. the cyclic garbage collection a search round owes.  ``paused_gc`` pauses the
   collector for a block; with ``defer=True`` it stays paused afterwards and a resume
   is owed.  A search round allocates ~10^6 short-lived containers while its caches
   keep ~10^5 of them: with the collector running, its passes traverse the survivors
   many times a round (30% of a round, measured); paused, the first collection after
   the pause still traverses them once (0.1-0.15 s a round, 12% of the search), which
   the tail now pays (``resume_deferred(collect=True)``: the young and middle
   generations at once, so that none of them falls due while the cost model trains);
2. pieces of work ``offer``-ed by the search (the next round's random sample,
   ``search.prep``), each a ``step()`` callable that does a few milliseconds of work
   and says whether any is left.  The search ``withdraw``-s its work before using it
   and finishes what is left itself, so nothing depends on whether the tail came.

Invariants: a collector the caller had disabled stays disabled (nothing is owed);
nested pauses are fine; an owed resume is paid within the round that owes it (the
policy pays it once the measurement returns, whatever the builder did, and when the
round fails), so the collector is never left paused between rounds; offered work is
only ever run here in pieces, in offer order, never after it was withdrawn, and
never once its owner is gone.
"""
from __future__ import annotations

import contextlib
import gc
import inspect
import weakref

__all__ = ["paused_gc", "resume_deferred", "resume_owed", "offer", "offered", "withdraw",
           "work_in_idle"]

_OWED: list = []        # [True] while a deferred pause owes a resume
_WORK: list = []        # offered steps (weak references to them), oldest first


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
    ``collect``, also collect the young and middle generations now."""
    if not _OWED:
        return False
    _OWED.clear()
    gc.enable()
    if collect:
        gc.collect(1)
    return True


def offer(step) -> None:
    """Queue ``step`` (a callable doing one small piece of work, True while more is
    left) for the next idle moments.  A bound method is held weakly: the work of an
    object nobody keeps any more (a finished search's) is dropped, not done."""
    if step not in offered():
        _WORK.append(weakref.WeakMethod(step) if inspect.ismethod(step) else
                     (lambda: step))


def offered() -> list:
    """The queued steps still alive, oldest first."""
    return [s for s in (ref() for ref in _WORK) if s is not None]


def withdraw(step) -> None:
    """Take ``step`` off the queue (its owner finishes the work itself)."""
    _WORK[:] = [ref for ref in _WORK if ref() not in (None, step)]


def work_in_idle() -> bool:
    """One piece of the waiting work, the owed collection first; whether any is left."""
    if resume_deferred(collect=True):
        return bool(_WORK)
    while _WORK:
        step = _WORK[0]()
        if step is not None and step():
            return True
        _WORK.pop(0)
    return False
