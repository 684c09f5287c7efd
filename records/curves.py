"""Tuning curves: best-so-far latency or GFLOPS against trials, ready to plot.

A ``Series`` is one line of a plot, a step function given by its improvement points.
Series are built from a ``LogHistory`` (``records.analysis.scan``: one streaming pass
per log), one per task of a log (``task_series``) or one per log (``network_series``).

Invariants:
- ``points`` are ``(trial, seconds)`` with strictly increasing trials and strictly
  decreasing seconds; a value holds from its trial until the next point, and the line
  ends at ``trials`` (the last trial, failed ones included); a series with no valid
  record has no points;
- the size of a series is the number of improvements, never the number of records;
- ``flops`` is set when throughput is known: GFLOPS = ``flops / seconds / 1e9``. For a
  whole log (a network) the value is the estimated latency ``sum(weight x best)`` over
  its tasks and ``flops`` is ``sum(weight x flops)``; the line starts at the first trial
  where every task has a valid record (before that there is no estimate);
- task tables map workload keys to ``{"name", "flops", "weight"}`` (``LOG.tasks.json``,
  written by ``tune --network``); a missing weight is 1, a bad one a ``RecordError``.
"""
from dataclasses import dataclass

from records.analysis import LogHistory, flops_of
from records.errors import RecordError, short_repr
from records.validate import is_number

METRICS = ("gflops", "latency")
# Longer workload keys are cut in legends (the summary table shows them whole).
_MAX_LABEL_CHARS = 48


@dataclass(frozen=True)
class Series:
    """One curve: ``label``, improvement ``points``, last ``trials``, optional ``flops``."""
    label: str
    points: tuple
    trials: int
    flops: "float | None" = None

    @property
    def best(self) -> "float | None":
        """The final best cost in seconds (``None``: no valid record)."""
        return self.points[-1][1] if self.points else None

    def values(self, metric: str) -> tuple:
        """``(trial, value)`` points in the unit of ``metric``: milliseconds for
        ``"latency"``, GFLOP/s for ``"gflops"`` (which needs ``flops``)."""
        if metric == "latency":
            return tuple((trial, cost * 1e3) for trial, cost in self.points)
        if metric == "gflops":
            if self.flops is None:
                raise RecordError(f"curve {self.label!r} has no flop count, expected one "
                                  "for GFLOPS (give --flops-json or a task table)")
            return tuple((trial, self.flops / cost / 1e9) for trial, cost in self.points)
        raise RecordError(f"curve metric {metric!r} is unknown, expected one of "
                          + ", ".join(METRICS))

    def steps(self, metric: str) -> list:
        """The polyline of the step function: corners at each improvement, extended
        flat to the last trial."""
        out: list = []
        for trial, value in self.values(metric):
            if out:
                out.append((trial, out[-1][1]))
            out.append((trial, value))
        if out and out[-1][0] < self.trials:
            out.append((self.trials, out[-1][1]))
        return out


def short_label(text: str) -> str:
    """``text`` cut to a legend-friendly length."""
    if len(text) <= _MAX_LABEL_CHARS:
        return text
    return text[:_MAX_LABEL_CHARS - 3] + "..."


def _entry(tasks, key: str) -> dict:
    entry = (tasks or {}).get(key, {})
    return entry if isinstance(entry, dict) else {}


def task_weight(tasks, key: str) -> "int | float":
    """The weight of ``key`` in a task table: 1 when absent, else a number > 0."""
    weight = _entry(tasks, key).get("weight", 1)
    if not is_number(weight) or weight <= 0:
        raise RecordError(f"weight of task {short_repr(key)} in the task table: got "
                          f"{weight!r}, expected a number > 0")
    return weight


def task_name(tasks, key: str) -> str:
    """The task's name from the table, else the workload key itself."""
    name = _entry(tasks, key).get("name")
    return name if isinstance(name, str) and name else key


def task_series(history: LogHistory, *, tasks=None, flops=None, prefix: str = "",
                workload: "str | None" = None) -> list:
    """One ``Series`` per workload of the log (only ``workload`` when given), in order of
    first appearance; trials count that workload's records."""
    out = []
    for key, entry in history.workloads.items():
        if workload is not None and key != workload:
            continue
        points = tuple((trial, cost) for trial, _, cost in entry.improvements)
        out.append(Series(prefix + task_name(tasks, key), points,
                          entry.trials, flops_of(flops, key)))
    return out


def network_series(history: LogHistory, label: str, *, tasks=None, flops=None) -> Series:
    """One ``Series`` for the whole log: the estimated latency ``sum(weight x best)``
    over its tasks (those of ``tasks`` when given, else every workload in the log)
    against the log's trials (records in log order)."""
    keys = list(tasks) if tasks else list(history.workloads)
    weights = {key: task_weight(tasks, key) for key in keys}
    events = sorted((log_trial, key, cost) for key in keys
                    for _, log_trial, cost in _improvements(history, key))
    best: dict = {}
    points = []
    for log_trial, key, cost in events:
        best[key] = cost
        if len(best) == len(keys):
            points.append((log_trial, sum(weights[k] * best[k] for k in keys)))
    per_task = [flops_of(flops, key) for key in keys]
    total_flops = None
    if keys and all(f is not None for f in per_task):
        total_flops = sum(weights[key] * (f or 0.0) for key, f in zip(keys, per_task))
    return Series(label, tuple(points), history.records, total_flops)


def _improvements(history: LogHistory, key: str) -> list:
    entry = history.workloads.get(key)
    return [] if entry is None else entry.improvements


def pick_metric(series: list, wanted: "str | None") -> str:
    """``wanted`` when given (checked), else GFLOPS when every series has flops, else
    latency."""
    if wanted is not None:
        if wanted not in METRICS:
            raise RecordError(f"curve metric {wanted!r} is unknown, expected one of "
                              + ", ".join(METRICS))
        return wanted
    return "gflops" if series and all(s.flops is not None for s in series) else "latency"


def axis_label(metric: str) -> str:
    return "best-so-far GFLOPS" if metric == "gflops" else "best-so-far latency (ms)"


def use_log_scale(series: list, metric: str) -> bool:
    """Latencies spanning more than 20x (small and large tasks together) read better on
    a logarithmic axis; GFLOPS stay linear."""
    values = [v for s in series for _, v in s.values(metric)]
    return metric == "latency" and bool(values) and max(values) > 20 * min(values)
