"""TVM's ``auto_scheduler.measure_record`` API: logs read and written as
``(MeasureInput, MeasureResult)`` pairs.

- ``RecordReader(filename).read_lines(max_lines, skip_lines)`` and iteration,
  ``load_records(filename)`` and ``save_records(filename, inputs, results)``, as TVM's.
  A pair read from a log holds a ``LoggedTask`` (a SearchTask whose ComputeDAG is
  rebuilt from the workload registry on first use) and a ``LoggedMeasureInput`` whose
  State is replayed on first use: like TVM's reader, reading never needs the workload
  (logs of any model can be read, filtered and copied), and what needs it raises the
  workload's WorkloadError then.  ``recover_measure_input`` gives a complete
  MeasureInput, as TVM's ``measure.recover_measure_input``.
- ``load_best_record(filename, workload_key, target)``: the best record of a workload,
  its State replayed.
- ``distill_record_file(in_file, out_file)`` and ``python3 -m autosched.measure_record
  --mode distill -i LOG [-o OUT]`` (TVM's tip for large logs): the best record of each
  workload and target, merged with ``out_file``'s when it exists, written atomically.

Invariants: the records layer parses (no pickle, bad lines warned about and skipped,
``#`` comment lines skipped silently); the records of one reader that name the same
task share one LoggedTask; targets are read with ``record_target`` (TVM's options this
compiler does not model are ignored, with a warning) and match as everywhere in
autosched (kind and CPU: ``records.selection``, "compatible"); ``save_records`` writes
a logged pair's steps and seed exactly as read, without replaying them.
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import warnings

from compiler.errors import CompilerError
from records import MeasureInputRecord, Record, best_records, target_matches
from records import RecordReader as _Lines
from records import save_records as _save

from ..compute_dag import ComputeDAG
from ..errors import AutoSchedError, InvalidStepError
from ..layout_rewrite import as_option
from ..measure.measurer import MeasureInput, MeasureResult
from ..record_target import record_target
from ..steps import serialize
from ..task import HardwareParams, SearchTask
from ..workload import workload_key_to_tensors

__all__ = ["RecordReader", "load_records", "save_records", "load_best_record",
           "LoggedTask", "LoggedMeasureInput", "recover_measure_input", "as_record"]


def _hardware_params(rec_input: MeasureInputRecord) -> HardwareParams | None:
    try:
        return HardwareParams(*rec_input.hardware_params)
    except (TypeError, ValueError):
        return None       # an odd list (another TVM version): the target's defaults


class LoggedTask(SearchTask):
    """The task of a log record (TVM's reader gives the same): workload key, target,
    hardware parameters and layout-rewrite option as recorded; ``compute_dag`` is
    rebuilt from the workload registry on first use, so only what needs the program
    (replaying a state, tuning, ``apply_best``) requires the workload to be registered."""

    def __init__(self, rec_input: MeasureInputRecord):
        # SearchTask.__init__ builds the DAG eagerly: not called on purpose
        self.workload_key = rec_input.workload_key
        self.target = record_target(rec_input.target)
        self.target_host = rec_input.target_host
        self.hardware_params = _hardware_params(rec_input) or \
            HardwareParams.for_target(self.target)
        self.layout_rewrite_option = as_option(rec_input.layout_rewrite_option)
        self.task_input_names = tuple(rec_input.task_input_names)
        self.desc = ""
        self._dag: ComputeDAG | None = None

    @property
    def compute_dag(self) -> ComputeDAG:
        """The workload's ComputeDAG (WorkloadError when it is not registered here)."""
        if self._dag is None:
            self._dag = ComputeDAG(workload_key_to_tensors(self.workload_key))
        return self._dag


class LoggedMeasureInput:
    """A MeasureInput read from a log: ``task`` (a LoggedTask), ``record`` (the parsed
    line) and ``state``, replayed from the record's steps on first use (WorkloadError
    for an unregistered workload, InvalidStepError when the steps no longer apply)."""

    __slots__ = ("task", "record", "_state")

    def __init__(self, task: LoggedTask, record: Record):
        self.task, self.record, self._state = task, record, None

    @property
    def state(self):
        if self._state is None:
            self._state = serialize.state_from_record(self.task, self.record)
        return self._state

    def __repr__(self):
        return (f"MeasureInput({self.task.workload_key}, target={self.record.target}, "
                f"{len(self.record.input.steps)} steps)")


class RecordReader:
    """TVM's ``RecordReader``: the (MeasureInput, MeasureResult) pairs of a log."""

    def __init__(self, filename="auto_scheduler_tuning.json"):
        self.filename = os.fspath(filename)
        self._tasks: dict = {}

    def read_lines(self, max_lines=None, skip_lines: int = 0) -> tuple:
        """``(inputs, results)``: the records after the first ``skip_lines``, at most
        ``max_lines`` of them (None or 0: all)."""
        if skip_lines < 0 or (max_lines is not None and max_lines < 0):
            raise ValueError(f"RecordReader.read_lines: max_lines={max_lines!r} and "
                             f"skip_lines={skip_lines!r} must not be negative")
        inputs: list = []
        results: list = []
        for k, (inp, res) in enumerate(self):
            if k < skip_lines:
                continue
            inputs.append(inp)
            results.append(res)
            if max_lines and len(inputs) >= max_lines:
                break
        return inputs, results

    def __iter__(self):
        for rec in _Lines(self.filename):
            pair = self._pair(rec)
            if pair is not None:
                yield pair

    def _pair(self, rec: Record):
        """The pair of one record; None (with a warning) for a target this compiler
        cannot read, such as another device's."""
        i = rec.input
        key = (i.workload_key, i.target, i.target_host, tuple(i.hardware_params),
               i.layout_rewrite_option, tuple(i.task_input_names))
        task = self._tasks.get(key)
        if task is None:
            try:
                task = self._tasks[key] = LoggedTask(i)
            except CompilerError as err:
                warnings.warn(f"{self.filename}: skipping the records of target "
                              f"{i.target!r}: {err}", stacklevel=3)
                task = self._tasks[key] = err
        if isinstance(task, CompilerError):
            return None
        return LoggedMeasureInput(task, rec), MeasureResult.from_record(rec.result)


def load_records(filename):
    """TVM's ``load_records``: an iterator of the log's (MeasureInput, MeasureResult)."""
    return iter(RecordReader(filename))


def as_record(inp, res) -> Record:
    """The Record of an (input, result) pair: a logged input keeps its recorded steps and
    seed, a MeasureInput is encoded from its state."""
    if isinstance(inp, LoggedMeasureInput):
        return Record(inp.record.input, serialize.encode_result(res))
    return serialize.encode_record(inp, res)


def save_records(filename, inputs, results) -> None:
    """TVM's ``save_records``: append one record per (input, result) pair to
    ``filename``.  A pair read from a log is written with its recorded steps and seed."""
    inputs, results = list(inputs), list(results)
    if len(inputs) != len(results):
        raise ValueError(f"save_records: {len(inputs)} inputs but {len(results)} results; "
                         "expected one result per input")
    _save(os.fspath(filename), [as_record(inp, res) for inp, res in zip(inputs, results)])


def recover_measure_input(inp, rebuild_state: bool = False):
    """TVM's ``measure.recover_measure_input`` for a pair read from a log: its task's
    ComputeDAG is rebuilt now (WorkloadError for an unregistered workload); with
    ``rebuild_state`` the State is replayed now too (InvalidStepError when the steps no
    longer apply) and a complete ``MeasureInput`` is returned, ready to be measured
    again; without it the logged input comes back, its State replayed on first use.  A
    complete MeasureInput is returned as it is."""
    if isinstance(inp, MeasureInput):
        return inp
    if not isinstance(inp, LoggedMeasureInput):
        raise TypeError(f"recover_measure_input: expected a MeasureInput, got "
                        f"{type(inp).__name__}")
    inp.task.compute_dag      # noqa: B018 - built now: a missing workload raises here
    return MeasureInput(inp.task, inp.state) if rebuild_state else inp


def load_best_record(log_file, workload_key: str, target=None):
    """``(MeasureInput(task, state), MeasureResult)`` of the cheapest valid record of
    ``workload_key`` in ``log_file`` (for ``target``, when given), or ``(None, None)``.
    A cheaper record whose steps no longer replay is skipped with a warning; an unknown
    workload raises its WorkloadError."""
    log_file = os.fspath(log_file)
    wanted = None if target is None else str(target)
    valid = sorted((r for r in _Lines(log_file)
                    if r.is_valid and r.workload_key == workload_key
                    and (wanted is None or target_matches(r.target, wanted, "compatible"))),
                   key=lambda r: r.mean_cost)     # stable: the earliest of equal costs
    tasks: dict = {}
    for rec in valid:
        key = (rec.target, tuple(rec.input.hardware_params))
        if key not in tasks:     # raises WorkloadError for an unknown workload
            try:
                tgt = record_target(rec.target)
            except CompilerError as err:
                warnings.warn(f"load_best_record: skipping a record of {workload_key} in "
                              f"{log_file}: {err}", stacklevel=2)
                continue
            tasks[key] = SearchTask(workload_key=workload_key, target=tgt,
                                    hardware_params=_hardware_params(rec.input))
        task = tasks[key]
        try:
            state = serialize.state_from_record(task, rec)
        except (InvalidStepError, RecursionError) as err:
            warnings.warn(f"load_best_record: a record of {workload_key} in {log_file} no "
                          f"longer applies ({type(err).__name__}: {err}); trying the next "
                          "best", stacklevel=2)
            continue
        return MeasureInput(task, state), MeasureResult.from_record(rec.result)
    if valid:
        raise AutoSchedError(f"load_best_record: none of the {len(valid)} valid records of "
                             f"workload {workload_key} in {log_file} replays on its task")
    return None, None


def distill_record_file(in_file, out_file) -> int:
    """Write the best valid record of each (workload, target) of ``in_file`` -- and of
    ``out_file`` when it already exists, as TVM's -- to ``out_file``, replacing it
    atomically; returns how many were written.  Records are copied as read (nothing is
    replayed, so logs of any model can be distilled)."""
    in_file, out_file = os.fspath(in_file), os.fspath(out_file)
    if not os.path.isfile(in_file):
        raise AutoSchedError(f"distill_record_file: input log {in_file!r} does not exist")
    sources = [_Lines(in_file)]
    if os.path.isfile(out_file):
        sources.append(_Lines(out_file))
    best = best_records(itertools.chain(*sources))
    os.makedirs(os.path.dirname(os.path.abspath(out_file)), exist_ok=True)
    return _save(out_file, best, append=False)


def main(argv=None) -> int:
    """TVM's ``python3 -m tvm.auto_scheduler.measure_record --mode distill -i LOG``."""
    ap = argparse.ArgumentParser(prog="python3 -m autosched.measure_record",
                                 description="distill a tuning log to its best records")
    ap.add_argument("--mode", choices=["distill"], default="distill")
    ap.add_argument("-i", "--input", required=True, help="input log")
    ap.add_argument("-o", "--output", default=None, help="output log (INPUT.best.json)")
    args = ap.parse_args(argv)
    out = args.output or args.input + ".best.json"
    try:
        n = distill_record_file(args.input, out)
    except (AutoSchedError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"extracted {n} best records from {args.input} to {out}")
    return 0
