"""Replay check of a log: do its records' steps still apply to their workloads?

    python3 -m autosched.validate LOG [--network resnet-18 | --network model.onnx]

``records validate`` checks what the standard library can (syntax, fields, step codes);
this checks what only the tuner can: every valid record is replayed onto its task's
initial state, and records that no longer apply (the workload changed, a step is out of
range) are listed with their line numbers.  Workload keys of registered functions
(built-ins, ``module:function`` workloads imported beforehand) are recreated from the
key; the DAG-hash keys of a model's fused groups need the model (``--network``).
Exit codes: 0 every record replays, 1 some do not (or their workload is unknown), 2 the
log or the network cannot be read.
"""
from __future__ import annotations

import argparse
import sys

from compiler.errors import CompilerError
from records import RecordReader

from . import catalog  # noqa: F401  (registers the built-in workloads)
from .errors import AutoSchedError, WorkloadError
from .network import load_network
from .record_target import record_target
from .relay_integration import extract_tasks
from .steps import serialize
from .task import SearchTask

__all__ = ["validate_log", "main"]


def validate_log(log: str, tasks=()) -> list:
    """``[(line number, message)]`` for the records of ``log`` that do not replay."""
    known = {t.workload_key: t for t in tasks}
    problems = []
    for lineno, rec in RecordReader(log, on_error=lambda err: None).numbered():
        task = known.get(rec.workload_key)
        if task is None:
            try:
                task = known[rec.workload_key] = SearchTask(
                    workload_key=rec.workload_key, target=record_target(rec.target))
            except (WorkloadError, AutoSchedError, ValueError, CompilerError) as err:
                known[rec.workload_key] = err
                task = err
        if isinstance(task, Exception):
            problems.append((lineno, f"workload {rec.workload_key} is unknown here: {task}"))
            continue
        try:
            serialize.state_from_record(task, rec)
        except Exception as err:  # noqa: BLE001 - any failure to replay is the finding
            problems.append((lineno, f"steps do not replay on {rec.workload_key}: "
                                     f"{type(err).__name__}: {err}"))
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m autosched.validate",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("log")
    p.add_argument("--network", default=None,
                   help="zoo name or .onnx file whose fused groups the log tuned")
    ns = p.parse_args(argv)
    try:
        tasks = []
        if ns.network:
            net = load_network(ns.network)
            tasks = extract_tasks(net.mod, net.params)[0]
        problems = validate_log(ns.log, tasks)
    except (OSError, AutoSchedError) as err:
        print(f"validate: error: {err}", file=sys.stderr)
        return 2
    for lineno, msg in problems:
        print(f"{ns.log}:{lineno}: {msg}")
    print(f"{len(problems)} record(s) do not replay" if problems else "every record replays")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
