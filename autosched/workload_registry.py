"""TVM's module ``auto_scheduler.workload_registry``: workload registration and keys, under
the module path TVM scripts import them from.

Role: a name only; ``workload`` defines them, and these are the very same functions
(one registry, whichever name registers).
"""
from __future__ import annotations

from .workload import (
    make_workload_key,
    register_workload,
    register_workload_tensors,
    workload_key_to_tensors,
)

__all__ = ["register_workload", "make_workload_key", "workload_key_to_tensors",
           "register_workload_tensors"]
