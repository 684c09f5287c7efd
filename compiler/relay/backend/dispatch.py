"""Schedule providers: how a tuner's records reach ``relay.build`` without the compiler
importing the tuner, and the workload key that names a fused group.

A provider is any object with ``query(target, workload_key, tensors) -> Schedule | None``
(``autosched.ApplyHistoryBest`` is one: it pushes itself here in ``__enter__``).  While
lowering a fused group, the build asks the active providers innermost first; the first
schedule returned is used, else the strategy's default schedule.  As in TVM, providers
are consulted only when the PassContext sets ``relay.backend.use_auto_scheduler``.

``workload_key(inputs, outputs)`` is ``json.dumps([sha256(canonical text)[:16], *shapes])``:
the canonical text of the group's TE DAG (every op in post-order: placeholders with
shape and dtype, computes with their bodies printed by the TIR printer) is identical in
every process and run, so a key computed when tasks are extracted matches the key
computed when the model is built from the log days later.
"""
from __future__ import annotations

import hashlib
import json
import threading
from contextlib import contextmanager

from ...te.tensor import ComputeOp, PlaceholderOp, post_order_ops

__all__ = ["push_provider", "pop_provider", "schedule_provider", "current_providers",
           "canonical_dag_text", "dag_digest", "workload_key"]

_LOCAL = threading.local()


def _stack() -> list:
    s = getattr(_LOCAL, "stack", None)
    if s is None:
        s = _LOCAL.stack = []
    return s


def push_provider(provider) -> None:
    if not callable(getattr(provider, "query", None)):
        raise TypeError(f"schedule provider {provider!r} has no query(target, workload_key, "
                        "tensors) method")
    _stack().append(provider)


def pop_provider(provider) -> None:
    s = _stack()
    if not s or s[-1] is not provider:
        raise RuntimeError("schedule providers must be exited in reverse order of entry")
    s.pop()


@contextmanager
def schedule_provider(provider):
    push_provider(provider)
    try:
        yield provider
    finally:
        pop_provider(provider)


def current_providers() -> list:
    """Active providers, innermost first."""
    return list(reversed(_stack()))


def canonical_dag_text(outputs) -> str:
    lines = []
    for op in post_order_ops(outputs):
        if isinstance(op, PlaceholderOp):
            shape = [int(s.value) for s in op.shape]
            lines.append(f"{op.name} = PLACEHOLDER {shape} {op.dtype}")
        elif isinstance(op, ComputeOp):
            axes = ", ".join(iv.var.name for iv in op.axis)
            for k, body in enumerate(op.body):
                lines.append(f"{op.name}.{k}({axes}) = {body}")
        else:
            lines.append(f"{op.name} = {type(op).__name__}")
    return "\n".join(lines)


def dag_digest(outputs) -> str:
    """The digest part of a workload key: a hash of the canonical text."""
    return hashlib.sha256(canonical_dag_text(outputs).encode()).hexdigest()[:16]


def workload_key(inputs, outputs) -> str:
    digest = dag_digest(outputs)
    shapes = [[int(s.value) for s in t.shape] for t in list(inputs) + list(outputs)]
    return json.dumps([digest, *shapes])
