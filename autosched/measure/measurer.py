"""Measurement data, callbacks and the ProgramMeasurer (TVM's ``auto_scheduler.measure``).

Role: the vocabulary shared by the search and the measurement machinery.
``MeasureInput(task, state)`` is what to measure; ``BuildResult`` is what a builder made
of it (object code or an error); ``MeasureResult`` is what a runner timed.
``ProgramMeasurer`` drives a builder and a runner over batches of inputs, keeps the best
cost/state per workload and calls the measure callbacks (``RecordToFile`` appends every
measurement to a log).  ``LocalBuilder`` lives in ``autosched.measure.builder`` and
``LocalRunner`` in ``autosched.measure.runner``; both import this module, never the reverse.

Invariants:
- costs are seconds; a failed measurement has ``error_no != 0`` and costs
  ``[FAILURE_COST]`` (1e10, TVM's MAX_FLOAT), so sorting by mean cost ranks it last;
- error codes are ``MeasureErrorNo`` (= ``records.ErrorNo``, TVM's values 0..8);
- results come back in the order of the inputs, one per input, whatever failed;
- ``RecordToFile`` writes one whole, flushed line per measurement (``records.RecordWriter``):
  with a runner that times candidates one at a time (``one_at_a_time``, as LocalRunner)
  callbacks run after each candidate, else after each batch; so a kill -9 loses at most
  the candidate being timed (or the batch being measured) and never tears a line;
- ``serialize.encode_record`` is looked up at call time (tests may replace it);
- with ``confirm_top_k`` a candidate that enters its task's best ``confirm_top_k`` is
  run a second time from the same build, both runs are logged, and the slower of the two
  is the candidate's result (``confirmations`` holds the other).  A task's best
  ``confirm_top_k`` start, in each ``measure`` object, from what its policy measured
  before (``settled_best`` of its states' figures), so a second ``tune`` call or a
  resumed run confirms only candidates that beat them;
- the modules in ``import_while_building`` (set by the tune loops) are imported in the
  background during a batch's builds, and every run waits for that import to end
  (``background.py``): nothing is imported while a candidate is timed.
"""
from __future__ import annotations

import collections
import math
import os
import time
from dataclasses import dataclass
from typing import Any

from records import FAILURE_COST, ErrorNo, RecordWriter

from ..checks import check_number
from ..ranking import settled_best
from ..steps import serialize
from . import background

# TVM's MeasureErrorNo: NO_ERROR 0, INSTANTIATION_ERROR 1, COMPILE_HOST 2, COMPILE_DEVICE 3,
# RUNTIME_DEVICE 4, WRONG_ANSWER 5, BUILD_TIMEOUT 6, RUN_TIMEOUT 7, UNKNOWN_ERROR 8.
MeasureErrorNo = ErrorNo
MAX_ERROR_MSG_CHARS = 4000


def _error_no(value, what: str) -> int:
    return int(check_number(value, f"{what} error_no", 0, integer=True,
                            high=len(MeasureErrorNo) - 1))


def _seconds(value, what: str) -> float:
    return float(check_number(value, what, 0, unit="seconds"))


def clip_message(msg: str) -> str:
    """An error message short enough to keep in memory for thousands of candidates."""
    msg = str(msg)
    if len(msg) <= MAX_ERROR_MSG_CHARS:
        return msg
    half = MAX_ERROR_MSG_CHARS // 2
    return f"{msg[:half]}\n... [{len(msg) - 2 * half} characters cut] ...\n{msg[-half:]}"


# In the error message of a candidate that a builder or runner stopped on purpose because
# it was far slower than the others (see LocalBuilder/LocalRunner ``cutoff``).
CUTOFF_MARK = "(cut off)"


def was_cut_off(result) -> bool:
    """Whether a Build/MeasureResult is a timeout imposed by a cut-off."""
    return result.error_no in (MeasureErrorNo.BUILD_TIMEOUT, MeasureErrorNo.RUN_TIMEOUT) \
        and CUTOFF_MARK in result.error_msg


@dataclass(frozen=True, eq=False)
class MeasureInput:
    """A candidate to measure: the SearchTask and a State of its ComputeDAG."""
    task: Any        # a SearchTask (typed loosely: measure sits below task in the layers)
    state: Any       # a State of the task's ComputeDAG


@dataclass(frozen=True)
class BuildResult:
    """A builder's output: object code and its FuncMeta tuple, or an error.

    ``time_cost`` is the seconds spent building (the timeout for a build timeout).
    """
    obj: bytes | None
    metas: tuple | None
    error_no: int
    error_msg: str
    time_cost: float

    def __post_init__(self):
        _error_no(self.error_no, "BuildResult")
        _seconds(self.time_cost, "BuildResult time_cost")
        if self.error_no == MeasureErrorNo.NO_ERROR and (
                not isinstance(self.obj, bytes) or not self.metas):
            raise ValueError("BuildResult without error needs object bytes and metas, got "
                             f"obj={type(self.obj).__name__}, metas={self.metas!r}")
        object.__setattr__(self, "error_no", int(self.error_no))
        object.__setattr__(self, "error_msg", clip_message(self.error_msg))

    @classmethod
    def failed(cls, error_no: int, error_msg: str, time_cost: float = 0.0) -> BuildResult:
        return cls(None, None, error_no, error_msg, time_cost)


@dataclass(frozen=True)
class MeasureResult:
    """A runner's output: per-repeat costs in seconds, error code and message, the
    wall-clock seconds the whole measurement took (build + run) and a Unix timestamp."""
    costs: list
    error_no: int
    error_msg: str
    all_cost: float
    timestamp: float

    def __post_init__(self):
        err = _error_no(self.error_no, "MeasureResult")
        costs = [_seconds(c, "MeasureResult cost") for c in self.costs]
        if err == MeasureErrorNo.NO_ERROR and costs and min(costs) <= 0:
            # a timer that read 0 s measured nothing; the log refuses such a record
            err = MeasureErrorNo.RUNTIME_DEVICE
            object.__setattr__(self, "error_msg", f"timer returned {min(costs)} s: nothing "
                               f"was measured ({self.error_msg})")
        if err != MeasureErrorNo.NO_ERROR:
            costs = [FAILURE_COST]
        elif not costs:
            raise ValueError("MeasureResult without error needs at least one cost")
        object.__setattr__(self, "costs", costs)
        object.__setattr__(self, "error_no", err)
        object.__setattr__(self, "error_msg", clip_message(self.error_msg))
        object.__setattr__(self, "all_cost", _seconds(self.all_cost, "MeasureResult all_cost"))
        object.__setattr__(self, "timestamp", _seconds(self.timestamp, "MeasureResult timestamp"))

    @classmethod
    def failed(cls, error_no: int, error_msg: str, all_cost: float = 0.0,
               timestamp: float | None = None) -> MeasureResult:
        return cls([FAILURE_COST], error_no, error_msg, all_cost,
                   time.time() if timestamp is None else timestamp)

    @classmethod
    def from_record(cls, r) -> MeasureResult:
        """The MeasureResult of a log record's result part (a MeasureResultRecord)."""
        return cls(list(r.costs), r.error_no, "", r.all_cost, r.timestamp)

    @property
    def is_valid(self) -> bool:
        return self.error_no == MeasureErrorNo.NO_ERROR

    @property
    def mean_cost(self) -> float:
        """Mean cost in seconds; FAILURE_COST for a failed measurement."""
        return sum(self.costs) / len(self.costs) if self.is_valid else FAILURE_COST


class TuningStopped(RuntimeError):
    """Measurement cannot go on; tuning ends cleanly with what is already logged."""


class TooManyErrors(TuningStopped):
    """``max_continuous_error`` measurements failed in a row: something is broken (the
    target, the runner, the machine), and tuning on would only fill the log with errors."""


class LogWriteError(TuningStopped):
    """A measure callback could not write (a full disk, a log made read-only)."""


class ProgramBuilder:
    """Base class of builders: ``build(inputs, verbose) -> [BuildResult]``."""
    n_parallel = 1

    def build(self, inputs, verbose: int = 0) -> list:
        raise NotImplementedError(f"{type(self).__name__} must implement build()")


class ProgramRunner:
    """Base class of runners: ``run(inputs, build_results, verbose) -> [MeasureResult]``.

    ``start()`` is a hint that ``run`` will be called soon (e.g. spawn workers now)."""

    def start(self) -> None:
        return None

    def run(self, inputs, build_results, verbose: int = 0) -> list:
        raise NotImplementedError(f"{type(self).__name__} must implement run()")


class MeasureCallback:
    """Called by ProgramMeasurer after each measured batch."""

    def callback(self, policy, inputs, results) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement callback()")


class RecordToFile(MeasureCallback):
    """Append every measurement of a batch to the log ``filename`` (one line each)."""

    def __init__(self, filename):
        if not isinstance(filename, (str, os.PathLike)):
            raise TypeError(f"RecordToFile: filename {filename!r} must be a str or a path")
        self.filename = os.fspath(filename)
        # fail now, not after an hour of tuning
        directory = os.path.dirname(os.path.abspath(self.filename))
        if os.path.isdir(self.filename):
            raise IsADirectoryError(f"RecordToFile: log {self.filename!r} is a directory; "
                                    "expected a file path such as tuning.json")
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"RecordToFile: the directory of log {self.filename!r} "
                                    "does not exist")
        if not os.access(directory, os.W_OK) or (os.path.exists(self.filename)
                                                 and not os.access(self.filename, os.W_OK)):
            raise PermissionError(f"RecordToFile: log {self.filename!r} is not writable")

    def __repr__(self) -> str:
        return f"RecordToFile({self.filename!r})"

    def callback(self, policy, inputs, results) -> None:
        if len(inputs) != len(results):
            raise ValueError(f"RecordToFile: {len(inputs)} inputs but {len(results)} results")
        # Encode the whole batch first: an encoding error then writes nothing half-way.
        lines = [serialize.encode_record(inp, res) for inp, res in zip(inputs, results)]
        with RecordWriter(self.filename) as writer:
            writer.write_many(lines)


def _check_batch_size(batch_size, builder) -> int:
    if batch_size is None:
        return max(1, int(getattr(builder, "n_parallel", 1))) * 8
    return check_number(batch_size, "ProgramMeasurer batch_size", 1, integer=True)


class ProgramMeasurer:
    """Build and run candidates in batches; track the best per workload; call callbacks.

    Statistics: ``ct`` measured candidates, ``error_ct`` failed ones, ``best_cost`` /
    ``best_state`` / ``best_ct`` per workload key.  Overhead accounting: seconds spent in
    the builder, the runner and the callbacks during the last ``measure`` call
    (``last_build_seconds``, ``last_run_seconds``, ``last_callback_seconds``) and in total
    (``total_build_seconds``, ...).  ``batch_size`` (default 8 x builder.n_parallel; TVM
    uses 2x) bounds how many candidates are built before they are run and logged: compile
    times vary 100x between candidates, and a batch takes as long as its busiest builder,
    so small batches leave builders idle (measured: 2x wall time per candidate).

    ``confirm_top_k`` (not in TVM; 0 = off): after each batch, a candidate whose cost
    would put it among the ``confirm_top_k`` best of its task is run once more from the
    same build and costs the slower of its two figures (both are logged; the faster is
    kept in ``confirmations`` for the last ``measure`` call, ``confirmed_ct`` counts
    them).  Why: a candidate's figure is the median of 3 calls, and 4% of such figures
    of a 1.5 ms conv here are over 10% below their median (0.3% over 20%); the best few
    of 200 single figures are mostly those.  Re-timed beside the default schedule, the
    four best logged conv2d states of two runs (158-182 GFLOPS logged) ran 0.84-1.03x
    the default, while states ranked 7th-17th ran up to 1.12x: the end-of-tuning
    re-timing of the best four (``TuningOptions.retime_top_k``) only compared lucky
    figures.
    """

    def __init__(self, builder, runner, callbacks=None, verbose: int = 1,
                 batch_size: int | None = None, max_continuous_error: int = 150,
                 confirm_top_k: int = 0):
        if not hasattr(builder, "build") or not hasattr(runner, "run"):
            raise TypeError(f"ProgramMeasurer: builder {builder!r} needs build() and runner "
                            f"{runner!r} needs run()")
        callbacks = list(callbacks or ())
        for cb in callbacks:
            if not isinstance(cb, MeasureCallback) and not callable(cb):
                raise TypeError(f"ProgramMeasurer: callback {cb!r} is neither a "
                                "MeasureCallback nor callable(policy, inputs, results)")
        self.builder = builder
        self.runner = runner
        self.callbacks = callbacks
        self.verbose = int(verbose)
        self.batch_size = _check_batch_size(batch_size, builder)
        self.max_continuous_error = check_number(
            max_continuous_error, "ProgramMeasurer max_continuous_error", 1, integer=True)
        self.confirm_top_k = check_number(confirm_top_k, "ProgramMeasurer confirm_top_k", 0,
                                          integer=True)
        # what the next rounds' search will import: imported while this round builds
        self.import_while_building: tuple = ()
        self.reset()

    def reset(self) -> None:
        """Forget the statistics and the best candidates."""
        self.ct = 0
        self.error_ct = 0
        self.continuous_errors: list = []     # the failed results since the last success
        self._cb_seconds = 0.0
        self.best_cost: dict = {}
        self.best_state: dict = {}
        self.best_ct: dict = {}
        self.last_build_seconds = self.last_run_seconds = self.last_callback_seconds = 0.0
        self.total_build_seconds = self.total_run_seconds = 0.0
        self.total_callback_seconds = 0.0
        self._top: dict = {}            # workload key -> the k lowest settled costs, sorted
        self.confirmations: list = []   # (input, faster result) of the last measure call
        self.confirmed_ct = 0

    def measure(self, task, policy, inputs) -> list:
        """Measure ``inputs`` (MeasureInputs of ``task``); results in the same order."""
        inputs = list(inputs)
        for inp in inputs:
            if not isinstance(inp, MeasureInput):
                raise TypeError(f"ProgramMeasurer.measure: expected MeasureInput items, got "
                                f"{type(inp).__name__}")
        self.last_build_seconds = self.last_run_seconds = self.last_callback_seconds = 0.0
        self.confirmations = []
        start = time.perf_counter()
        if isinstance(self.runner, ProgramRunner):
            self.runner.start()           # e.g. spawn the run worker while building
        results = []
        for lo in range(0, len(inputs), self.batch_size):
            results.extend(self._measure_batch(policy, inputs[lo:lo + self.batch_size]))
        if self.verbose >= 1 and inputs:
            self._print_summary(task, len(inputs), time.perf_counter() - start)
        return results

    def _measure_batch(self, policy, batch) -> list:
        t0 = time.perf_counter()
        background.start(self.import_while_building)
        build_results = self.builder.build(batch, self.verbose)
        t1 = time.perf_counter()
        # an import that outlasts the builds is waited for outside both build and run
        # time: it is the search's (its next round needs it)
        background.settle()
        if len(build_results) != len(batch):
            raise RuntimeError(f"measurement returned {len(build_results)} build results for "
                               f"{len(batch)} inputs")
        if getattr(self.runner, "one_at_a_time", False):
            # a runner that times candidates one by one: log each as soon as it is timed,
            # so a kill loses at most the candidate being timed
            results, run_s, cb_s = [], 0.0, 0.0
            for inp, br in zip(batch, build_results):
                r0 = time.perf_counter()
                results += self._run(policy, [inp], [br])
                run_s += time.perf_counter() - r0 - self._cb_seconds
                cb_s += self._cb_seconds
        else:
            r0 = time.perf_counter()
            results = self._run(policy, batch, build_results)
            run_s, cb_s = time.perf_counter() - r0 - self._cb_seconds, self._cb_seconds
        if self.confirm_top_k:
            c_run, c_cb = self._confirm(policy, batch, build_results, results)
            run_s, cb_s = run_s + c_run, cb_s + c_cb
        if len(self.continuous_errors) >= self.max_continuous_error:
            raise TooManyErrors(self._error_report())      # the batch is logged already
        self.last_build_seconds += t1 - t0
        self.last_run_seconds += run_s
        self.last_callback_seconds += cb_s
        self.total_build_seconds += t1 - t0
        self.total_run_seconds += run_s
        self.total_callback_seconds += cb_s
        return results

    def _confirm(self, policy, batch, build_results, results) -> tuple:
        """Run once more, in batch order, each candidate that enters its task's best
        ``confirm_top_k``; its result becomes the slower of its two runs (a failed second
        run fails it).  Returns (run seconds, callback seconds) of these runs."""
        run_s = cb_s = 0.0
        for i, (inp, br, res) in enumerate(zip(batch, build_results, results)):
            key = inp.task.workload_key
            top = self._top.get(key)
            if top is None:
                top = self._top[key] = self._measured_before(policy)
            if not res.is_valid or (len(top) >= self.confirm_top_k and
                                    res.mean_cost >= top[-1]):
                continue
            r0 = time.perf_counter()
            again = self._run(policy, [inp], [br])[0]
            run_s += time.perf_counter() - r0 - self._cb_seconds
            cb_s += self._cb_seconds
            self.confirmed_ct += 1
            slow, fast = (again, res) if not again.is_valid or \
                again.mean_cost >= res.mean_cost else (res, again)
            results[i] = slow
            if slow.is_valid:
                self.confirmations.append((inp, fast))
                top.append(slow.mean_cost)
                top.sort()
                del top[self.confirm_top_k:]
        return run_s, cb_s

    def _measured_before(self, policy) -> list:
        """The ``confirm_top_k`` best costs of the states ``policy`` measured before
        this measurer met its task (earlier ``tune`` calls, a preloaded log), each by
        all its figures: its results and its confirmation and re-timing figures."""
        figures: dict = {}
        for cost, st in getattr(policy, "measured", ()):
            figures.setdefault(str(st), []).append(cost)
        for key, extra in getattr(policy, "retimed_figures", {}).items():
            if key in figures:
                figures[key] = figures[key] + list(extra)
        return settled_best(figures.values(), self.confirm_top_k)

    def build(self, inputs) -> list:
        """Build candidates without running them (``run_built`` runs them, as often as
        needed); the build time is accounted as ``measure``'s."""
        t0 = time.perf_counter()
        results = self.builder.build(list(inputs), self.verbose)
        self.last_build_seconds = time.perf_counter() - t0
        self.total_build_seconds += self.last_build_seconds
        return results

    def run_built(self, policy, inputs, build_results) -> list:
        """Run already built candidates (e.g. the same objects once per re-timing round)
        and log them like ``measure``; results in the same order."""
        r0 = time.perf_counter()
        results = self._run(policy, list(inputs), list(build_results))
        run_s = time.perf_counter() - r0 - self._cb_seconds
        self.last_run_seconds = run_s
        self.total_run_seconds += run_s
        self.total_callback_seconds += self._cb_seconds
        return results

    def _run(self, policy, inputs, build_results) -> list:
        """Run, account and call the callbacks; ``_cb_seconds`` is the callbacks' share."""
        background.settle()         # no import competes with the timing
        results = self.runner.run(inputs, build_results, self.verbose)
        if len(results) != len(inputs):
            raise RuntimeError(f"measurement returned {len(results)} results for "
                               f"{len(inputs)} inputs")
        for inp, res in zip(inputs, results):
            self._account(inp, res)
        c0 = time.perf_counter()
        for cb in self.callbacks:
            try:
                if isinstance(cb, MeasureCallback):
                    cb.callback(policy, inputs, results)
                else:
                    cb(policy, inputs, results)
            except OSError as err:
                raise LogWriteError(f"{cb!r} could not write: {type(err).__name__}: {err}; "
                                    "the log keeps every measurement written before") from err
        self._cb_seconds = time.perf_counter() - c0
        return results

    def _account(self, inp: MeasureInput, res: MeasureResult) -> None:
        self.ct += 1
        key = inp.task.workload_key
        if not res.is_valid:
            self.error_ct += 1
            if not was_cut_off(res):          # cut-offs are slow, not failing
                self.continuous_errors.append(res)
            if self.verbose >= 2:
                print(f"No: {self.ct}\tError: {MeasureErrorNo(res.error_no).name}\t"
                      f"{res.error_msg.splitlines()[0] if res.error_msg else ''}", flush=True)
            return
        self.continuous_errors = []
        cost = res.mean_cost
        if cost < self.best_cost.get(key, math.inf):
            self.best_cost[key] = cost
            self.best_state[key] = inp.state
            self.best_ct[key] = self.ct
        if self.verbose >= 2:
            flop = _flop_ct(inp.task)
            print(f"No: {self.ct}\tGFLOPS: {flop / cost / 1e9:.2f} / "
                  f"{flop / self.best_cost[key] / 1e9:.2f}\tcost: {cost * 1e3:.4f} ms",
                  flush=True)

    def _error_report(self) -> str:
        errs = self.continuous_errors
        kinds = collections.Counter(MeasureErrorNo(r.error_no).name for r in errs)
        last = errs[-1].error_msg.strip().splitlines()
        return (f"{len(errs)} measurements failed in a row (max_continuous_error="
                f"{self.max_continuous_error}): "
                + ", ".join(f"{k} x{n}" for k, n in kinds.most_common())
                + f"; the last one: {last[0] if last else '(no message)'}")

    def _print_summary(self, task, count: int, seconds: float) -> None:
        key = task.workload_key
        best = self.best_cost.get(key)
        best_txt = "none valid yet" if best is None else (
            f"{best * 1e3:.4f} ms ({_flop_ct(task) / best / 1e9:.2f} GFLOPS)")
        print(f"Measured {count} candidates in {seconds:.2f} s (build "
              f"{self.last_build_seconds:.2f} s, run {self.last_run_seconds:.2f} s); "
              f"total {self.ct}, errors {self.error_ct}; best {best_txt}", flush=True)


def _flop_ct(task) -> float:
    return float(task.compute_dag.flop_ct)
