"""Imports run in a background thread while the tuner's process waits for a round's
builds, and finished before anything is timed.

Why: a cost model may need a slow import for its first trained round (importing the
xgboost package took 1.15 s here; ``XGBModel`` now calls xgboost's C API and needs
none, but a user's model may), on that round's critical path, while during the round
before the tuner's process had mostly waited on its build workers.  The tune loops
(``tune``, ``TaskScheduler.tune``) name what the cost model's later rounds need (its
``upcoming_modules``) when another round follows, and ``ProgramMeasurer`` imports it
meanwhile.  The thread imports the whole module, as the user's own import would.

Invariants: one import thread at a time; ``settle()`` returns only once none runs, and
the measurer calls it before every run, so no import competes with a timing; a module
already in ``sys.modules`` (imported, or being imported by another thread) is not
imported again; an import that fails is dropped here -- the next import of the module,
where it is needed, raises the error where it belongs.
"""
from __future__ import annotations

import importlib
import sys
import threading
import time

__all__ = ["settle", "start", "waited"]

_THREAD: list = []      # [the running import thread]
_WAITED = [0.0]         # seconds settle() has waited, in all


def start(modules) -> bool:
    """Import ``modules`` (names) in a background thread unless they are all imported
    or an import thread still runs; returns whether a thread started."""
    todo = tuple(m for m in modules if m not in sys.modules)
    if not todo or _THREAD:
        return False
    thread = threading.Thread(target=_import_all, args=(todo,), daemon=True,
                              name="autosched-import")
    _THREAD.append(thread)
    thread.start()
    return True


def settle() -> None:
    """Wait for the background import, if one runs (``waited`` sums the waits)."""
    if not _THREAD:
        return
    t0 = time.perf_counter()
    while _THREAD:
        _THREAD[0].join()
        _THREAD.pop()
    _WAITED[0] += time.perf_counter() - t0


def waited() -> float:
    """Seconds ``settle`` has waited for imports in this process, in all: a caller
    that times a phase ending in ``settle`` subtracts what this adds meanwhile, so the
    wait counts as the search's (which needs the import), not the phase's."""
    return _WAITED[0]


def _import_all(names) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException:   # noqa: BLE001 -- see the module docstring
            return
