"""Offline analysis of tuning logs: summaries, distillation, tuning curves, comparison.

Every function takes either a log path (read with ``load_records``: bad lines are
skipped with a warning) or an iterable of ``Record``.

Invariants:
- every analysis reads its source once, as a stream (``scan`` keeps per workload only
  counts, the best record and the best-so-far improvements; ``best_records`` keeps
  ``top`` records per pair): memory grows with the number of workloads and of
  improvements, never with the number of records;
- workloads (and (workload, target) pairs) are reported in order of first appearance;
- trial numbers are 1-based and count the records of *one workload* in log order,
  failed ones included (a trial is a measurement, successful or not);
- "best" is ``records.selection.best_of``: lowest mean cost among ``error_no == 0``, the
  earliest on ties; a workload with no valid record has ``None`` as best;
- flop counts come from the caller (a mapping or a callable of the workload key):
  ``records`` cannot compute them, that needs the compute DAG.
"""
import heapq
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from records.errors import RecordError
from records.io import load_records
from records.record import ErrorNo, Record
from records.selection import is_better
from records.validate import is_int, is_number


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


class WorkloadHistory:
    """What one pass over a log keeps of one workload: counts, the best record, and the
    trials where the best-so-far cost improved (``improvements``).

    ``improvements`` holds ``(trial, log_trial, cost)``: the workload's 1-based trial,
    the record's 1-based position among all records of the log, and the new best mean
    cost in seconds. It grows only when the best improves (a few dozen times in a real
    log), so the memory of a pass does not grow with the number of records.
    """

    def __init__(self):
        self.targets: list = []
        self.trials = 0
        self.errors: dict = {}
        self.best: Record | None = None
        self.best_trial: int | None = None
        self.improvements: list = []

    def add(self, record: Record, log_trial: int) -> None:
        self.trials += 1
        if record.target not in self.targets:
            self.targets.append(record.target)
        if not record.is_valid:
            code = record.result.error
            self.errors[code] = self.errors.get(code, 0) + 1
        elif is_better(record, self.best):
            self.best, self.best_trial = record, self.trials
            self.improvements.append((self.trials, log_trial, record.mean_cost))

    @property
    def best_cost(self) -> "float | None":
        return None if self.best is None else self.best.mean_cost

    def trials_to_reach(self, cost: "float | None") -> "int | None":
        """The first trial whose best-so-far cost is <= ``cost`` (``None``: never)."""
        if cost is None:
            return None
        return next((trial for trial, _, best in self.improvements if best <= cost), None)


@dataclass
class LogHistory:
    """One pass over a log: ``records`` counted, and per workload key (in order of first
    appearance) its ``WorkloadHistory``."""
    records: int = 0
    workloads: dict = field(default_factory=dict)


def scan(source) -> LogHistory:
    """Read a log (or iterate records) once and keep what every analysis needs."""
    history = LogHistory()
    for record in _as_records(source):
        history.records += 1
        entry = history.workloads.get(record.workload_key)
        if entry is None:
            entry = history.workloads[record.workload_key] = WorkloadHistory()
        entry.add(record, history.records)
    return history


def summarize(source, flops=None) -> list:
    """One ``WorkloadSummary`` per workload key, in order of first appearance.

    ``source`` may also be a ``LogHistory`` already scanned."""
    history = source if isinstance(source, LogHistory) else scan(source)
    out = []
    for key, t in history.workloads.items():
        out.append(WorkloadSummary(
            workload_key=key, targets=tuple(t.targets), trials=t.trials,
            errors=tuple(sorted(t.errors.items())), best_cost=t.best_cost,
            best_trial=t.best_trial, flops=flops_of(flops, key)))
    return out


def best_records(source, top: int = 1) -> list:
    """Distill a log: the ``top`` best records of each (workload_key, target) pair.

    Pairs are in order of first appearance, each pair's records from best to worst
    (earliest first on ties); pairs without a valid record are left out. Memory holds
    ``top`` records per pair, whatever the length of the log.
    """
    if not is_int(top) or top < 1:
        raise RecordError(f"number of best records per workload (top): got {top!r}, "
                          "expected an integer >= 1")
    heaps: dict = {}
    for position, record in enumerate(_as_records(source)):
        heap = heaps.setdefault((record.workload_key, record.target), [])
        if not record.is_valid:
            continue
        # a max-heap on (cost, position) keeps the ``top`` cheapest, earliest on ties
        item = (-record.mean_cost, -position, record)
        if len(heap) < top:
            heapq.heappush(heap, item)
        elif item > heap[0]:
            heapq.heapreplace(heap, item)
    out: list = []
    for heap in heaps.values():
        out.extend(item[2] for item in sorted(heap, reverse=True))
    return out


def iter_curve(source, workload_key: str):
    """Yield ``(trial, best_so_far_cost)`` of one workload, one pair per trial, lazily.

    ``best_so_far_cost`` is the best mean cost in seconds among trials up to this one,
    ``None`` while no trial has succeeded yet.
    """
    best, trial = None, 0
    for record in _as_records(source):
        if record.workload_key != workload_key:
            continue
        trial += 1
        if is_better(record, best):
            best = record
        yield trial, None if best is None else best.mean_cost


def curve(source, workload_key: str) -> list:
    """``list(iter_curve(source, workload_key))``."""
    return list(iter_curve(source, workload_key))


@dataclass(frozen=True)
class Comparison:
    """Best costs of one workload in two logs; ``speedup = best_a / best_b``
    (above 1: log B found a faster schedule). ``a_reaches_b`` is the first trial of A
    whose best-so-far is at least as fast as B's best (``None``: never, or no best to
    reach), and ``b_reaches_a`` the same for B."""
    workload_key: str
    trials_a: int
    trials_b: int
    best_a: "float | None"
    best_b: "float | None"
    a_reaches_b: "int | None" = None
    b_reaches_a: "int | None" = None

    @property
    def speedup(self) -> "float | None":
        if self.best_a is None or self.best_b is None:
            return None
        return self.best_a / self.best_b


def compare(log_a, log_b) -> list:
    """Per-workload comparison of two logs: workloads of A first, then those only in B.

    Each log is read once (``scan``); either may also be a ``LogHistory``."""
    a = log_a if isinstance(log_a, LogHistory) else scan(log_a)
    b = log_b if isinstance(log_b, LogHistory) else scan(log_b)
    keys = list(a.workloads) + [key for key in b.workloads if key not in a.workloads]
    empty = WorkloadHistory()
    out = []
    for key in keys:
        ha, hb = a.workloads.get(key, empty), b.workloads.get(key, empty)
        out.append(Comparison(
            workload_key=key, trials_a=ha.trials, trials_b=hb.trials,
            best_a=ha.best_cost, best_b=hb.best_cost,
            a_reaches_b=ha.trials_to_reach(hb.best_cost),
            b_reaches_a=hb.trials_to_reach(ha.best_cost)))
    return out


def geometric_mean(values) -> "float | None":
    """Geometric mean of positive numbers, ``None`` for none."""
    values = list(values)
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def error_names(summary: WorkloadSummary) -> str:
    """``"COMPILE_HOST:1 RUN_TIMEOUT:2"``-style text of a summary's errors (by code)."""
    return " ".join(f"{ErrorNo(code).name}:{count}" for code, count in summary.errors)


__all__ = ["WorkloadSummary", "WorkloadHistory", "LogHistory", "Comparison", "scan",
           "summarize", "best_records", "curve", "iter_curve", "compare", "geometric_mean",
           "flops_of", "gflops", "error_names"]
