"""Offline analysis of tuning logs: summaries, distillation, tuning curves, comparison.

Every function takes either a log path (read with ``load_records``: bad lines are
skipped with a warning) or an iterable of ``Record``.

Invariants:
- workloads (and (workload, target) pairs) are reported in order of first appearance;
- trial numbers are 1-based and count the records of *one workload* in log order,
  failed ones included (a trial is a measurement, successful or not);
- "best" is ``records.selection.best_of``: lowest mean cost among ``error_no == 0``, the
  earliest on ties; a workload with no valid record has ``None`` as best;
- flop counts come from the caller (a mapping or a callable of the workload key):
  ``records`` cannot compute them, that needs the compute DAG.
"""
import os
from collections.abc import Mapping
from dataclasses import dataclass

from records.errors import RecordError
from records.io import load_records
from records.record import ErrorNo, Record
from records.selection import is_better
from records.validate import is_number


def _as_records(source):
    """A path (str or PathLike) becomes a lazy reader; anything else is iterated as is."""
    if isinstance(source, (str, os.PathLike)):
        return load_records(source)
    return source


def flops_of(flops, workload_key: str) -> "float | None":
    """Flop count of ``workload_key`` from a mapping, a callable or ``None``.

    A missing entry or a callable returning ``None`` gives ``None``; anything but a
    positive finite number is a ``RecordError``.
    """
    if flops is None:
        return None
    value = flops.get(workload_key) if isinstance(flops, Mapping) else flops(workload_key)
    if value is None:
        return None
    if not is_number(value) or value <= 0:
        raise RecordError(f"flop count of workload {workload_key!r}: got {value!r}, "
                          "expected a positive finite number")
    return float(value)


def gflops(flops: "float | None", cost: "float | None") -> "float | None":
    """Throughput in GFLOP/s, or ``None`` when either input is unknown."""
    if flops is None or cost is None or cost <= 0:
        return None
    return flops / cost / 1e9


@dataclass(frozen=True)
class WorkloadSummary:
    """Tuning statistics of one workload key.

    ``errors`` is a tuple of ``(ErrorNo, count)`` for the codes that occurred, by code.
    ``best_trial`` is the 1-based trial number where ``best_cost`` was first reached.
    """
    workload_key: str
    targets: tuple
    trials: int
    errors: tuple
    best_cost: "float | None"
    best_trial: "int | None"
    flops: "float | None" = None

    @property
    def error_count(self) -> int:
        return sum(count for _, count in self.errors)

    @property
    def valid_count(self) -> int:
        return self.trials - self.error_count

    @property
    def best_gflops(self) -> "float | None":
        return gflops(self.flops, self.best_cost)


class _Tally:
    """Running statistics of one workload while a log is scanned."""

    def __init__(self):
        self.targets = []
        self.trials = 0
        self.errors = {}
        self.best = None
        self.best_trial = None

    def add(self, record: Record) -> None:
        self.trials += 1
        if record.target not in self.targets:
            self.targets.append(record.target)
        if not record.is_valid:
            code = record.result.error
            self.errors[code] = self.errors.get(code, 0) + 1
        elif is_better(record, self.best):
            self.best, self.best_trial = record, self.trials


def summarize(source, flops=None) -> list:
    """One ``WorkloadSummary`` per workload key, in order of first appearance."""
    tallies: dict = {}
    for record in _as_records(source):
        tallies.setdefault(record.workload_key, _Tally()).add(record)
    out = []
    for key, t in tallies.items():
        out.append(WorkloadSummary(
            workload_key=key, targets=tuple(t.targets), trials=t.trials,
            errors=tuple(sorted(t.errors.items())),
            best_cost=None if t.best is None else t.best.mean_cost,
            best_trial=t.best_trial, flops=flops_of(flops, key)))
    return out


def best_records(source) -> list:
    """Distill a log: the best record of each (workload_key, target) pair.

    Pairs are in order of first appearance; pairs without a valid record are left out.
    """
    best: dict = {}
    for record in _as_records(source):
        pair = (record.workload_key, record.target)
        current = best.setdefault(pair, None)
        if is_better(record, current):
            best[pair] = record
    return [record for record in best.values() if record is not None]


def curve(source, workload_key: str) -> list:
    """``[(trial, best_so_far_cost)]`` of one workload, one entry per trial.

    ``best_so_far_cost`` is the best mean cost in seconds among trials up to this one,
    ``None`` while no trial has succeeded yet.
    """
    points, best, trial = [], None, 0
    for record in _as_records(source):
        if record.workload_key != workload_key:
            continue
        trial += 1
        if is_better(record, best):
            best = record
        points.append((trial, None if best is None else best.mean_cost))
    return points


@dataclass(frozen=True)
class Comparison:
    """Best costs of one workload in two logs; ``speedup = best_a / best_b``
    (above 1: log B found a faster schedule)."""
    workload_key: str
    trials_a: int
    trials_b: int
    best_a: "float | None"
    best_b: "float | None"

    @property
    def speedup(self) -> "float | None":
        if self.best_a is None or self.best_b is None:
            return None
        return self.best_a / self.best_b


def compare(log_a, log_b) -> list:
    """Per-workload comparison of two logs: workloads of A first, then those only in B."""
    a = {s.workload_key: s for s in summarize(log_a)}
    b = {s.workload_key: s for s in summarize(log_b)}
    keys = list(a) + [key for key in b if key not in a]
    out = []
    for key in keys:
        sa, sb = a.get(key), b.get(key)
        out.append(Comparison(
            workload_key=key,
            trials_a=0 if sa is None else sa.trials, trials_b=0 if sb is None else sb.trials,
            best_a=None if sa is None else sa.best_cost,
            best_b=None if sb is None else sb.best_cost))
    return out


def error_names(summary: WorkloadSummary) -> str:
    """``"COMPILE_HOST:1 RUN_TIMEOUT:2"``-style text of a summary's errors (by code)."""
    return " ".join(f"{ErrorNo(code).name}:{count}" for code, count in summary.errors)


__all__ = ["WorkloadSummary", "Comparison", "summarize", "best_records", "curve",
           "compare", "flops_of", "gflops", "error_names"]
