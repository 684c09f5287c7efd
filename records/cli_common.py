"""Helpers shared by the ``records`` commands (``records.cli``, ``records.cli_curve``).

Invariants:
- logs are read lazily and non-strictly: each skipped line is reported on stderr as
  ``warning: skipped bad line: FILE:LINE: reason`` and reading goes on;
- side files are JSON objects: ``--flops-json`` maps workload keys to flop counts, a
  task table (``--tasks-json`` or ``LOG.tasks.json`` beside the log, as ``tune
  --network`` writes it) maps workload keys to ``{"name", "flops", "weight"}``; a file
  that is not such an object is a ``RecordError`` naming the file;
- the summary table is built once (``summary_table``) for the text and the HTML output.
"""
import json
import os
import sys

from records.analysis import LogHistory, error_names, summarize
from records.errors import RecordError, RecordSyntaxError
from records.io import load_records


def warn(err: RecordError) -> None:
    print(f"warning: skipped bad line: {err}", file=sys.stderr)


def read(path):
    """Non-strict lazy reading; skipped lines are reported on stderr."""
    return load_records(path, on_error=warn)


def ms(cost) -> str:
    return "-" if cost is None else f"{cost * 1e3:.4f}"


def load_json_object(path) -> dict:
    """A JSON object from ``path`` (values are checked by their users, per key)."""
    with open(path, encoding="utf-8") as f:
        try:
            table = json.load(f)
        except json.JSONDecodeError as err:
            raise RecordSyntaxError(f"invalid JSON: {err.msg} at column {err.colno}",
                                    path=path, lineno=err.lineno) from None
    if not isinstance(table, dict):
        raise RecordError(f"got a JSON {type(table).__name__}, expected an object mapping "
                          "workload keys to flop counts", path=path)
    return table


def task_table(log, tasks_json=None) -> dict:
    """``key -> {"name", "flops", "weight"}`` from ``tasks_json`` or the sidecar file
    ``LOG.tasks.json`` beside ``log``; ``{}`` when neither is there."""
    path = tasks_json or os.fspath(log) + ".tasks.json"
    if not tasks_json and not os.path.exists(path):
        return {}
    table = load_json_object(path)
    for key, entry in table.items():
        if not isinstance(entry, dict):
            raise RecordError(f"task entry of {key!r} is {entry!r}, expected an object with "
                              "name, flops and weight", path=path)
    return table


def flops_table(flops_json, tasks: dict):
    """Flop counts: ``--flops-json`` when given, else the task table's, else ``None``."""
    if flops_json:
        return load_json_object(flops_json)
    if tasks:
        return {key: entry.get("flops") for key, entry in tasks.items()}
    return None


def _weighted(tasks: dict, key: str, best) -> list:
    weight = tasks.get(key, {}).get("weight")
    return ["-" if weight is None else weight,
            "-" if weight is None or best is None else ms(weight * best)]


def summary_table(history: LogHistory, flops=None, tasks=None) -> tuple:
    """``(headers, rows, align, footer)`` of ``records summary``; ``footer`` is the
    estimated end-to-end latency line of a network log (``None`` without tasks)."""
    tasks = tasks or {}
    rows = []
    total, complete = 0.0, True
    for s in summarize(history, flops):
        errors = str(s.error_count) + (f" ({error_names(s)})" if s.errors else "")
        gf = s.best_gflops
        row = [s.workload_key, "; ".join(s.targets), s.trials, errors, ms(s.best_cost),
               "-" if s.best_trial is None else s.best_trial,
               "-" if gf is None else f"{gf:.2f}"]
        if tasks:
            row[0] = tasks.get(s.workload_key, {}).get("name", s.workload_key)
            row += _weighted(tasks, s.workload_key, s.best_cost)
            weight = tasks.get(s.workload_key, {}).get("weight")
            if weight is None or s.best_cost is None:
                complete = False
            else:
                total += weight * s.best_cost
        rows.append(row)
    headers = ["workload", "target", "trials", "errors", "best (ms)", "at trial", "GFLOPS"]
    if not tasks:
        return headers, rows, "llrlrrr", None
    complete = complete and set(tasks) <= set(history.workloads)
    estimate = f"{ms(total)} ms" if complete else "unknown (a task has no valid record)"
    footer = (f"estimated end-to-end latency (sum of weight x best): {estimate} over "
              f"{len(tasks)} tasks")
    return ["task"] + headers[1:] + ["weight", "weighted (ms)"], rows, "llrlrrrrr", footer
