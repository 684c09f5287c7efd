"""The search: sketch rules, init rules (sampling), mutation rules and SketchPolicy's
evolutionary search.  This package re-exports the policy."""
from .policy import SearchParams, SketchPolicy

__all__ = ["SearchParams", "SketchPolicy"]
