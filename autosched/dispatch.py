"""ApplyHistoryBest: tuning records as the schedule provider of ``relay.build``.

    with autosched.ApplyHistoryBest("resnet18.json"):
        with PassContext(opt_level=3, config={"relay.backend.use_auto_scheduler": True}):
            lib = relay.build(mod, target="llvm", params=params)

While active, the context sits on the compiler's provider stack
(``compiler.relay.backend.dispatch``), so the compiler never imports the tuner.  For each
fused group the build asks ``query(target, workload_key, tensors)``; the answer is the
schedule of the best record for that key whose target matches, replayed onto the
group's own tensors, or None (the build then uses the default schedule and counts the
group as a fallback).

Invariants: reading a log never executes anything from it (records are data; steps are
decoded by the step registry); a record that no longer replays (the workload changed,
or a step is invalid) is skipped with a warning and the next best is tried, never an
exception; targets match by kind and CPU (``-num-cores`` and ``-keys`` may differ, as in
TVM logs), records of the exact target string first; the best ``top_k`` valid records
per key are kept, so memory stays bounded for big logs.
"""
from __future__ import annotations

import heapq
import os
import warnings

from compiler.relay.backend.dispatch import pop_provider, push_provider
from compiler.target import Target, parse_target
from records import Record, load_records

from .compute_dag import ComputeDAG
from .steps import serialize
from .task import SearchTask

__all__ = ["ApplyHistoryBest", "DispatchContext"]

_TOP_K = 4


class DispatchContext:
    """Base of schedule providers usable as context managers (TVM's DispatchContext).

    ``DispatchContext.current`` is the innermost active context (or None)."""

    current: DispatchContext | None = None

    def query(self, target, workload_key: str, tensors):
        raise NotImplementedError(f"{type(self).__name__} must implement query()")

    def __enter__(self):
        push_provider(self)
        self._outer = DispatchContext.current
        DispatchContext.current = self
        return self

    def __exit__(self, *exc) -> None:
        DispatchContext.current = self._outer
        pop_provider(self)


def _target_fields(text: str) -> tuple:
    """(kind, mcpu or None) of a target string; unknown options are ignored, as a TVM log
    may carry ``-keys`` or options this compiler does not know."""
    words = text.split()
    kind = words[0] if words else ""
    mcpu = next((w.partition("=")[2] for w in words[1:] if w.startswith("-mcpu=")), None)
    return kind, mcpu


def target_compatible(record_target: str, target: Target) -> bool:
    """Whether a record made for ``record_target`` may serve a build for ``target``."""
    kind, mcpu = _target_fields(record_target)
    return kind == target.kind and (mcpu is None or mcpu == target.mcpu)


class ApplyHistoryBest(DispatchContext):
    """The best records of one or more logs (paths) or of an iterable of Records."""

    def __init__(self, records, n_lines: int | None = None, include_compatible: bool = True):
        self.include_compatible = include_compatible
        self._best: dict = {}          # workload key -> heap of (-cost, n, Record), top k
        self._n = 0
        self.queries = self.hits = self.stale = 0
        sources = [records] if isinstance(records, (str, os.PathLike, Record)) else records
        for src in sources:
            if isinstance(src, (str, os.PathLike)):
                self._load(load_records(src), n_lines)
            elif isinstance(src, Record):
                self._add(src)
            elif isinstance(src, tuple) and len(src) == 2:   # (inp, res) pairs, as TVM
                self._add(Record(*src))
            else:
                self._load(src, n_lines)

    def _load(self, records, n_lines) -> None:
        for k, rec in enumerate(records):
            if n_lines is not None and k >= n_lines:
                break
            if not isinstance(rec, Record):
                raise TypeError(f"ApplyHistoryBest: expected log paths or Records, got "
                                f"{type(rec).__name__}")
            self._add(rec)

    def _add(self, rec: Record) -> None:
        if not rec.is_valid:
            return
        self._n += 1
        heap = self._best.setdefault(rec.workload_key, [])
        item = (-rec.mean_cost, -self._n, rec)       # earliest record wins ties
        if len(heap) < _TOP_K:
            heapq.heappush(heap, item)
        elif item > heap[0]:
            heapq.heapreplace(heap, item)

    @property
    def workload_keys(self) -> list:
        return list(self._best)

    def candidates(self, target, workload_key: str) -> list:
        """Valid records for the key that may serve ``target``, best first (records of
        the exact target string before merely compatible ones on equal cost)."""
        tgt = parse_target(target)
        text = str(tgt).split()
        recs = [r for _, _, r in sorted(self._best.get(workload_key, []), reverse=True)]
        exact = [r for r in recs if r.target.split() == text]
        if not self.include_compatible:
            return exact
        other = [r for r in recs if r.target.split() != text and target_compatible(r.target, tgt)]
        return sorted(exact + other, key=lambda r: r.mean_cost)

    def query(self, target, workload_key: str, tensors):
        """The schedule of the best replayable record for ``workload_key``, or None."""
        self.queries += 1
        recs = self.candidates(target, workload_key)
        if not recs:
            return None
        dag = ComputeDAG(list(tensors))
        task = SearchTask(workload_key=workload_key, compute_dag=dag, target=target)
        for rec in recs:
            try:
                state = serialize.state_from_record(task, rec)
                sch, _ = dag.apply_steps_from_state(state)
            except Exception as err:  # noqa: BLE001 - a stale record must fall back, never fail the build
                self.stale += 1
                warnings.warn(f"ApplyHistoryBest: a record of {workload_key} no longer applies "
                              f"({type(err).__name__}: {err}); trying the next one",
                              stacklevel=2)
                continue
            self.hits += 1
            return sch
        return None

    def __repr__(self) -> str:
        return f"ApplyHistoryBest({len(self._best)} workloads, {self._n} valid records)"
