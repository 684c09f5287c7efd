"""Task scheduler callbacks (TVM's ``auto_scheduler.task_scheduler`` callbacks).

Role: observe a ``TaskScheduler`` before and after each round of a task: print the
progress table, log the estimated latency.  Callbacks only read the scheduler's public
status (``tasks``, ``best_costs``, ``task_trials``, ``task_weights``, ``flop_cts``,
``dead_tasks``, ``ct``, ``tic``, ``estimated_latency``, ``tune_option``); they never change
it.  This module sits below ``task_scheduler`` (which uses PrintTableInfo by default).
"""
from __future__ import annotations

import math
import os
import time

from records import FAILURE_COST

__all__ = ["TaskSchedulerCallback", "PrintTableInfo", "LogEstimatedLatency", "format_table"]

# a task's best cost until it has a valid measurement (TVM's 1e10)
UNTUNED = FAILURE_COST


class TaskSchedulerCallback:
    """Called by the TaskScheduler before and after each round of a task."""

    def pre_tune(self, task_scheduler, task_id: int) -> None:
        """Before the round of task ``task_id``; does nothing by default."""

    def post_tune(self, task_scheduler, task_id: int) -> None:
        """After the round of task ``task_id``; does nothing by default."""


def _task_name(task, width: int = 40) -> str:
    name = str(task.desc or task.workload_key)
    return name if len(name) <= width else name[:width - 3] + "..."


def format_table(ts, last_id: int) -> str:
    """The progress table PrintTableInfo prints."""
    head = (f"|  ID  | {'Task':40s} | Latency (ms) | Speed (GFLOPS) | Default (ms) | "
            "Trials | Weight |")
    rule = "-" * len(head)
    lines = [rule, head, rule]
    for i, task in enumerate(ts.tasks):
        best = ts.best_costs[i]
        ok = best < UNTUNED / 10
        lat = f"{best * 1e3:.3f}" if ok else "-"
        speed = f"{ts.flop_cts[i] / best / 1e9:.2f}" if ok else "-"
        dead = "*" if i in ts.dead_tasks else " "
        d = ts.default_costs[i]
        default = f"{d * 1e3:.3f}" if math.isfinite(d) else "-"
        lines.append(f"| {i:4d}{dead}| {_task_name(task):40s} | {lat:>12s} | {speed:>14s} | "
                     f"{default:>12s} | {ts.task_trials[i]:6d} | {ts.task_weights[i]:6g} |")
    lines.append(rule)
    est = ts.estimated_latency
    total = f"{est * 1e3:.3f}" if math.isfinite(est) else "-"
    lines.append(f"Estimated total latency: {total} ms\tTrials: {ts.ct}\t"
                 f"Used time: {time.time() - ts.tic:.0f} s\tLast ID: {last_id}"
                 + ("\t(* = done)" if ts.dead_tasks else ""))
    return "\n".join(lines)


class PrintTableInfo(TaskSchedulerCallback):
    """Print the table of tasks after each round when ``verbose >= 1``.  After the round
    (TVM prints before it) so the last table printed shows the final status."""

    def post_tune(self, task_scheduler, task_id: int) -> None:
        opts = task_scheduler.tune_option
        if opts is not None and opts.verbose >= 1:
            print(format_table(task_scheduler, task_id), flush=True)


class LogEstimatedLatency(TaskSchedulerCallback):
    """Append ``ElapsedTime(s)\\t..\\tEstimatedLatency(ms)\\t..\\tTrials\\t..`` to
    ``log_file`` after each round.  Like TVM the file restarts with each callback object,
    but on its first write (not when created), so making one never deletes a file."""

    def __init__(self, log_file):
        if not isinstance(log_file, (str, os.PathLike)):
            raise TypeError(f"LogEstimatedLatency: log_file {log_file!r} must be a str or a "
                            "path")
        self.log_file = os.fspath(log_file)
        self._started = False

    def post_tune(self, task_scheduler, task_id: int) -> None:
        est = task_scheduler.estimated_latency
        total = f"{est * 1e3:.3f}" if math.isfinite(est) else "N/A"
        mode = "a" if self._started else "w"
        self._started = True
        with open(self.log_file, mode) as f:
            f.write(f"ElapsedTime(s)\t{time.time() - task_scheduler.tic:.0f}\t"
                    f"EstimatedLatency(ms)\t{total}\tTrials\t{task_scheduler.ct}\n")
