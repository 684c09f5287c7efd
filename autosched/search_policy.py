"""TVM's module ``auto_scheduler.search_policy``: the search policies and their callbacks,
under the module path TVM scripts import them from.

Role: a name only; the ``search`` package defines them, and these are the very same
classes.
"""
from __future__ import annotations

from .search.callbacks import PreloadCustomSketchRule, PreloadMeasuredStates, SearchCallback
from .search.policy import EmptyPolicy, SketchPolicy

__all__ = ["SketchPolicy", "EmptyPolicy", "SearchCallback", "PreloadMeasuredStates",
           "PreloadCustomSketchRule"]
