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
exception; when the log has a task table with the default schedules' costs
(``LOG.tasks.json``), records slower than the default are not used, so a build with the
log is never slower than one without it; targets match by kind and CPU (``-num-cores``
and ``-keys`` may differ, as in TVM logs), records of the exact target string first;
the best ``top_k`` valid records per key are kept, so memory stays bounded for big logs.
"""
from __future__ import annotations

import heapq
import json
import logging
import math
import os
import warnings

from compiler.relay.backend.dispatch import pop_provider, push_provider
from compiler.target import parse_target
from records import Record, load_records, target_matches

from .compute_dag import ComputeDAG
from .layout_rewrite import LayoutRewriteOption, replay_rewritten
from .steps import serialize
from .steps.registry import check_state
from .task import SearchTask

__all__ = ["ApplyHistoryBest", "DispatchContext"]

_TOP_K = 4
_log = logging.getLogger("autosched")


def _replay(dag, state, const_inputs) -> tuple:
    """(schedule, args, transforms): rewritten for pre-transformed weights when every
    weight the rewrite touches is a constant input, else as written."""
    if const_inputs:
        check_state(state)
        sch, args, transforms = replay_rewritten(
            dag, state.transform_steps, LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED)
        if all(const_inputs[t.arg_index] for t in transforms):
            return sch, args, transforms
    sch, args = dag.apply_steps_from_state(state)
    return sch, args, []


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


def read_default_costs(path: str) -> dict:
    """``{workload key: default schedule seconds}`` from a network log's task table
    (``LOG.tasks.json``, written by ``tune --network``); {} when absent or unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            table = json.load(f)
    except (OSError, ValueError):
        return {}
    out = {}
    if isinstance(table, dict):
        for key, entry in table.items():
            cost = entry.get("default_cost") if isinstance(entry, dict) else None
            if isinstance(cost, (int, float)) and math.isfinite(cost) and cost > 0:
                out[key] = float(cost)
    return out


class ApplyHistoryBest(DispatchContext):
    """The best records of one or more logs (paths) or of an iterable of Records."""

    def __init__(self, records, n_lines: int | None = None, include_compatible: bool = True,
                 default_floor: bool = True):
        self.include_compatible = include_compatible
        self._best: dict = {}          # workload key -> heap of (-cost, n, Record), top k
        self._n = 0
        self.queries = self.hits = self.stale = self.default_faster = 0
        # workload key -> seconds of the default schedule, from LOG.tasks.json
        self.default_costs: dict = {}
        sources = [records] if isinstance(records, (str, os.PathLike, Record)) else records
        for src in sources:
            if isinstance(src, (str, os.PathLike)):
                if default_floor:
                    self.default_costs.update(read_default_costs(os.fspath(src) + ".tasks.json"))
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
        other = [r for r in recs if r.target.split() != text
                 and target_matches(r.target, str(tgt), "compatible")]
        return sorted(exact + other, key=lambda r: r.mean_cost)

    def _beats_default(self, workload_key: str, recs: list) -> list:
        """The records faster than the default schedule (all of them when its cost is
        unknown): a build with the log must never be slower than one without it."""
        floor = self.default_costs.get(workload_key)
        if floor is None or not recs:
            return recs
        kept = [r for r in recs if r.mean_cost < floor]
        if not kept:
            self.default_faster += 1
        return kept

    def query(self, target, workload_key: str, tensors):
        """The schedule of the best replayable record for ``workload_key``, or None."""
        got = self._replay_best(target, workload_key, tensors, (), False)
        return None if got is None else got[0]

    def query_layout_rewrite(self, target, workload_key: str, tensors, const_inputs):
        """(schedule, argument tensors, layout transforms) of the best record, or None.

        Weights that are constants of the graph (``const_inputs``) are read in the layout
        the tuned kernel walks (REWRITE_FOR_PRE_TRANSFORMED, as it was measured); relay
        transforms their data once at build time.  When a layout-free weight is not a
        constant, or the record was measured without layout rewrite (its
        ``layout_rewrite_option`` is 0, as in logs written before it existed), the kernel
        keeps the original layout."""
        return self._replay_best(target, workload_key, tensors, tuple(const_inputs), True)

    def _replay_best(self, target, workload_key, tensors, const_inputs, rewrite):
        self.queries += 1
        recs = self._beats_default(workload_key, self.candidates(target, workload_key))
        if not recs:
            return None
        dag = ComputeDAG(list(tensors))
        task = SearchTask(workload_key=workload_key, compute_dag=dag, target=target)
        for rec in recs:
            try:
                state = serialize.state_from_record(task, rec)
                # build as it was measured: a record tuned without layout rewrite (an
                # older log) keeps the weights' layout
                measured_rewritten = int(getattr(rec.input, "layout_rewrite_option", 0)) != 0
                got = _replay(dag, state,
                              const_inputs if rewrite and measured_rewritten else ())
            except Exception as err:  # noqa: BLE001 - a stale record must fall back, never fail the build
                self.stale += 1
                warnings.warn(f"ApplyHistoryBest: a record of {workload_key} no longer applies "
                              f"({type(err).__name__}: {err}); trying the next one",
                              stacklevel=2)
                continue
            self.hits += 1
            return got
        return None

    def __exit__(self, *exc) -> None:
        super().__exit__(*exc)
        if self.default_faster:
            # relay.build counts these among its fallbacks; say why they fell back
            _log.info("ApplyHistoryBest: %d groups used a record; %d kept their default "
                      "schedule because it is faster than every record (LOG.tasks.json)",
                      self.hits, self.default_faster)

    def __repr__(self) -> str:
        return f"ApplyHistoryBest({len(self._best)} workloads, {self._n} valid records)"
