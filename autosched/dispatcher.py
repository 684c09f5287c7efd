"""TVM's module ``auto_scheduler.dispatcher``: the dispatch contexts that give a build its
tuned schedules, under the module path TVM scripts import them from.

Role: a name only; ``dispatch`` and ``dispatch_sample`` define them, and these are the
very same classes.
"""
from __future__ import annotations

from .dispatch import ApplyHistoryBest, DispatchContext
from .dispatch_sample import ApplyHistoryBestOrSample

__all__ = ["DispatchContext", "ApplyHistoryBest", "ApplyHistoryBestOrSample"]
