"""LocalRunner: time built candidates in one isolated, persistent worker process.

Role: for each successful BuildResult, the worker loads the object (``load_module``),
prepares deterministic random inputs and zeroed outputs, and runs
``Module.time_evaluator``; the parent turns the outcome into a ``MeasureResult``.
Optionally (``check_correctness``) each candidate's outputs are compared with those of
the task's reference kernel (by default the un-transformed ``init_state`` schedule).

Invariants:
- ONE worker, candidates one at a time: kernels are multi-threaded and must not compete
  with each other (or with the builders, which are idle while the runner runs);
- the worker comes from the fork server, never forked from the tuner: see
  ``autosched.measure.workers``;
- a kernel that kills the worker (segfault) is RUNTIME_DEVICE (4); one that outlives
  ``timeout`` (+ ``cooldown_interval``) is RUN_TIMEOUT (7); in both cases the worker is
  killed if needed and restarted, and the next candidate runs in the fresh worker;
- Python exceptions while running are RUNTIME_DEVICE (4), failures to load the object
  COMPILE_DEVICE (3, as TVM), mismatching outputs WRONG_ANSWER (5); build failures pass
  through with their own code and message; failed results cost ``[FAILURE_COST]``;
- inputs depend only on (seed, parameter index, shape, dtype): every candidate and the
  reference see the same numbers; ``all_cost`` = build time + run wall time;
- a cost (one per repeat) is the median of the repeat's individually timed calls, at
  least ``number`` and with ``min_repeat_ms`` enough to last that long (``repeats.py``,
  which also says when a figure is a short loop of calls; TVM: the mean of one loop of
  calls): on a shared 2-core machine a call now and then
  waits a whole time slice for its second thread (a 1.5 ms conv measured 5-8 ms), and a
  mean lets that one call rank a good candidate below worse ones;
- the first candidate after the worker sat idle (``_WARM_AFTER_IDLE_S``: the builders
  compiled meanwhile) is measured twice and keeps the second figure, when the first is a
  valid one under ``_WARM_MAX_COST`` (``warmups`` counts them);
- cut-off (``RunCutoff``) only ever uses the best mean cost this runner has measured
  for the same task: before the first valid measurement of a task only ``timeout`` and
  ``slow_call_seconds`` apply, so no workload is cut short on a guess.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import shutil
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass

import numpy as np

import compiler
from compiler.runtime import empty_aligned, load_module

from ..checks import check_fields
from ..errors import AutoSchedError
from ..layout_rewrite import LayoutRewriteOption
from ..task_inputs import files_for, load_into
from .measurer import CUTOFF_MARK, BuildResult, MeasureErrorNo, MeasureResult, ProgramRunner
from .repeats import plan_samples, repeat_costs, timed_repeats
from .workers import DEFAULT_STARTUP_TIMEOUT, WorkerPool, check_seconds

_ARRAY_ALIGN = 64
_REFERENCE_CACHE_SIZE = 4
# Loading the object, zeroing outputs and IPC around a job (measured: a few ms); an
# cut-off timeout adds it so that only the kernel call itself is cut.
_JOB_MARGIN_SECONDS = 0.05
# A worker that sat idle this long (the builders compiled meanwhile) measures its next
# candidate slow: a 53 us kernel's first measurement after a build phase was over 10%
# slower than its usual figure in 54% of phases (up to 2.2x), against none without
# builds in between, although each measurement has its own warm-up call.  So that
# candidate is measured twice and the first figure discarded; then 4% were
# (scripts/bench_first_measurement.py).  A 1.1 ms conv showed no such effect, and only
# kernels under _WARM_MAX_COST get the extra measurement, which bounds its cost.
_WARM_AFTER_IDLE_S = 0.1
_WARM_MAX_COST = 0.01
# Worker-side caches: the last argument set, and reference outputs by task key.
_ARGS: dict = {"key": None, "arrays": None}
_REFERENCES: collections.OrderedDict = collections.OrderedDict()


class WrongAnswerError(AutoSchedError):
    """A candidate's outputs differ from the reference kernel's."""


@dataclass(frozen=True)
class RunConfig:
    """What the worker needs to time one candidate (sent with every job)."""
    number: int = 3
    repeat: int = 1
    min_repeat_ms: float = 0.0
    cooldown_interval: float = 0.0
    enable_cpu_cache_flush: bool = False
    seed: int = 0
    rtol: float = 1e-3
    atol: float = 1e-5
    # A candidate whose first (warm-up) call already takes this long is reported with
    # that one call: slow candidates are far from the best, and timing them `number`
    # more times would dominate the tuning wall time on large workloads.
    slow_call_seconds: float = 0.1
    # a cost is the mean of its ``number`` calls (what consecutive calls deliver, as
    # TVM's loop of ``number`` calls), not their median: re-timing's confirmation rounds
    # use it (tuning.retime_states)
    call_mean: bool = False

    def __post_init__(self):
        check_fields(self, ("number", "repeat"), 1, integer=True)
        check_fields(self, ("min_repeat_ms", "cooldown_interval", "rtol", "atol",
                            "slow_call_seconds"), 0)
        check_fields(self, ("seed",), 0, integer=True)


@contextlib.contextmanager
def more_calls(runner, number: int, mean: bool = False):
    """While active, ``runner`` (a LocalRunner or DaskRunner: any runner with a RunConfig
    ``config``) times at least ``number`` calls per measurement, and with ``mean`` a cost
    is their mean (``RunConfig.call_mean``); other runners are left as they are.
    Re-timing uses it: on this machine the median of 3 calls of a 1 ms conv varies by
    4-11% from one measurement to the next, the median of 10 by 1-4%."""
    config = getattr(runner, "config", None)
    if not isinstance(config, RunConfig) or (config.number >= number and
                                             config.call_mean == mean):
        yield
        return
    runner.config = dataclasses.replace(config, number=max(number, config.number),
                                        call_mean=mean)
    try:
        yield
    finally:
        runner.config = config


@dataclass(frozen=True)
class RunCutoff:
    """When LocalRunner stops timing a candidate that cannot be the best, relative to
    ``best``, the lowest mean cost it has measured so far for the candidate's task.

    - A candidate whose warm-up call takes ``max(single_shot_floor, single_shot_ratio *
      best)`` seconds or more is reported with that one call (as ``slow_call_seconds``,
      which still applies on its own).  The floor keeps short kernels, whose first call is
      dominated by cold caches, on the normal path.
    - A call still running after ``max(kill_floor, kill_ratio * best)`` seconds is
      stopped: the worker is killed and restarted, and the candidate is RUN_TIMEOUT (7).
      Random search on a large workload meets kernels 100x slower than the best; timing
      them to the end would take most of the tuning time.
    """
    single_shot_ratio: float = 2.0
    single_shot_floor: float = 0.005
    kill_ratio: float = 10.0
    kill_floor: float = 0.1

    def __post_init__(self):
        check_fields(self, ("single_shot_ratio", "kill_ratio"), 1)
        check_fields(self, ("single_shot_floor", "kill_floor"), 0)

    def single_shot_seconds(self, best: float) -> float:
        return max(self.single_shot_floor, self.single_shot_ratio * best)

    def kill_seconds(self, best: float) -> float:
        return max(self.kill_floor, self.kill_ratio * best)


def _random_array(shape, dtype: np.dtype, rng: np.random.Generator, out: np.ndarray) -> None:
    if dtype == np.bool_:
        out[...] = rng.random(shape) < 0.5
    elif np.issubdtype(dtype, np.floating):
        out[...] = rng.random(shape, dtype=np.float32 if dtype.itemsize <= 4 else np.float64)
    elif np.issubdtype(dtype, np.integer):
        out[...] = rng.integers(0, 8, size=shape)
    else:
        raise TypeError(f"no random input generator for dtype {dtype}")


def _arguments(meta, seed: int, fixed=()) -> list:
    """Arrays for ``meta``'s params: cached random inputs (``fixed``: the task inputs'
    files by name, loaded instead), freshly zeroed outputs."""
    key = (seed, tuple((p.shape, p.dtype, p.written) for p in meta.params), fixed)
    if _ARGS["key"] != key:
        arrays = []
        for index, p in enumerate(meta.params):
            arr = empty_aligned(p.shape, p.np_dtype, _ARRAY_ALIGN)
            if not p.written:
                _random_array(p.shape, p.np_dtype, np.random.default_rng([seed, index]), arr)
            arrays.append(arr)
        if fixed:
            load_into(meta, arrays, fixed)
        _ARGS["key"], _ARGS["arrays"] = key, arrays
    for p, arr in zip(meta.params, _ARGS["arrays"]):
        if p.written:
            arr.fill(0)
    return _ARGS["arrays"]


def _reference_job(ref_key: str, obj: bytes, metas, seed: int, fixed=()) -> None:
    """In the worker: run the reference kernel once and keep its outputs under ref_key."""
    mod = load_module(obj, metas)
    func = mod.get_function(mod.entry_name)
    arrays = _arguments(func.meta, seed, fixed)
    func(*arrays)
    _REFERENCES[ref_key] = [a.copy() if p.written else None
                            for p, a in zip(func.meta.params, arrays)]
    while len(_REFERENCES) > _REFERENCE_CACHE_SIZE:
        _REFERENCES.popitem(last=False)


def _check_outputs(meta, arrays, reference, config: RunConfig) -> None:
    if reference is None:
        raise WrongAnswerError("the reference outputs are not loaded in the run worker")
    if len(reference) != len(arrays):
        raise WrongAnswerError(f"the candidate has {len(arrays)} params, the reference "
                               f"{len(reference)}")
    for p, out, ref in zip(meta.params, arrays, reference):
        if ref is None:
            continue
        if out.shape != ref.shape or not np.allclose(out, ref, rtol=config.rtol,
                                                     atol=config.atol, equal_nan=True):
            diff = np.abs(out.astype(np.float64) - ref.astype(np.float64)) \
                if out.shape == ref.shape else None
            where = "" if diff is None else (
                f": max abs difference {np.nanmax(diff):.3g} at index "
                f"{np.unravel_index(np.nanargmax(diff), diff.shape)}")
            _ARGS["key"] = None       # a wild store may have hit the cached inputs
            raise WrongAnswerError(f"output {p.name!r} differs from the reference (rtol "
                                   f"{config.rtol}, atol {config.atol}){where}")


def _run_job(obj: bytes, metas, config: RunConfig, ref_key, single_shot: float, fixed=()):
    """In the worker: ``(costs, error_no, error_msg)`` for one built candidate; a first
    call of ``single_shot`` seconds or more is the measurement; ``fixed``: the task
    inputs' files by name."""
    if config.cooldown_interval > 0:
        time.sleep(config.cooldown_interval)
    try:
        mod = load_module(obj, metas)
    except Exception as e:
        return [], int(MeasureErrorNo.COMPILE_DEVICE), f"loading the object failed: " \
            f"{type(e).__name__}: {e}"
    try:
        func = mod.get_function(mod.entry_name)
        arrays = _arguments(func.meta, config.seed, fixed)
        t0 = time.perf_counter()
        func(*arrays)
        first = time.perf_counter() - t0
        if first >= single_shot and ref_key is None:
            return [first], int(MeasureErrorNo.NO_ERROR), ""
        # each call timed on its own (a repeat is the median of its calls), so one call
        # whose parallel region lost a core for a time slice does not decide the rank;
        # the first call above was the warm-up, and it sizes the repeats (repeats.py)
        per, m = plan_samples(config.number, config.min_repeat_ms, first)

        def time_samples(k: int, calls: int) -> list:
            timer = mod.time_evaluator(number=calls, repeat=k, warmup=False,
                                       enable_cpu_cache_flush=config.enable_cpu_cache_flush)
            return list(timer(*arrays).results)
        groups = timed_repeats(time_samples(per * config.repeat, m), per, m, config.repeat,
                               config.min_repeat_ms, time_samples)
        if ref_key is not None:
            _check_outputs(func.meta, arrays, _REFERENCES.get(ref_key), config)
    except WrongAnswerError as e:
        return [], int(MeasureErrorNo.WRONG_ANSWER), str(e)
    except Exception as e:
        return [], int(MeasureErrorNo.RUNTIME_DEVICE), \
            f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
    return repeat_costs(groups, config.call_mean), int(MeasureErrorNo.NO_ERROR), ""


def run_limits(cfg: RunConfig, cutoff, timeout: float, best):
    """``(single-shot seconds, job timeout, whether the timeout is a cut-off)`` for a
    candidate of a task whose best mean cost so far is ``best`` (None: no valid one yet).

    An cut-off timeout leaves room for a candidate below the single-shot threshold
    to be timed in full, so it only ever cuts calls longer than the kill threshold.
    """
    timeout = timeout + cfg.cooldown_interval
    if best is None or cutoff is None:
        return cfg.slow_call_seconds, timeout, False
    single_shot = min(cfg.slow_call_seconds, cutoff.single_shot_seconds(best))
    # a repeat tops up to min_repeat_ms and overshoots it by less than one more window
    full = single_shot * (1 + cfg.number * cfg.repeat) \
        + cfg.repeat * 2 * cfg.min_repeat_ms / 1000
    limit = _JOB_MARGIN_SECONDS + max(cutoff.kill_seconds(best), full) \
        + cfg.cooldown_interval
    if limit >= timeout:
        return single_shot, timeout, False
    return single_shot, limit, True


def default_reference_func(task):
    """``(obj, metas)`` of the task's un-transformed schedule (``compute_dag.init_state``,
    a method or an attribute)."""
    dag = task.compute_dag
    init = dag.init_state
    sch, args = dag.apply_steps_from_state(init() if callable(init) else init)
    func = compiler.lower(sch, args, name="reference")
    obj, metas, _ir = compiler.build_object(func, task.target)
    return obj, metas


def _check_comparable(task) -> None:
    """The reference reads the weights in their own layout; a candidate built for
    pre-transformed weights reads other data, so its outputs cannot be compared."""
    if int(getattr(task, "layout_rewrite_option", 0)) == int(
            LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED):
        raise AutoSchedError(
            f"check_correctness on {task.workload_key}: the task is measured with "
            "layout_rewrite_option=REWRITE_FOR_PRE_TRANSFORMED (weights in a rewritten "
            "layout), so outputs cannot be compared with the reference; create the "
            "SearchTask with layout_rewrite_option=LayoutRewriteOption.INSERT_TRANSFORM_STAGE "
            "or NO_REWRITE")


def _task_key(task) -> str:
    return f"{task.workload_key}|{task.target}"


class LocalRunner(ProgramRunner):
    """Time candidates in one worker process (see the module doc).

    ``number``/``repeat``/``min_repeat_ms``/``enable_cpu_cache_flush`` go to
    ``time_evaluator``; ``cooldown_interval`` seconds are slept before each candidate;
    ``timeout`` bounds one candidate (load + warm-up + timing); a candidate whose first
    call takes ``slow_call_seconds`` or more is reported with that single call;
    ``cutoff`` (an RunCutoff, or None to time every candidate fully) cuts short
    candidates much slower than the best measured so far for their task.  With
    ``check_correctness``, ``reference_func(task) -> (obj, metas)`` (module-level or not:
    it runs in this process) builds each task's reference once; its outputs are compared
    with ``rtol``/``atol``.  ``last_seconds``/``total_seconds`` time the ``run`` calls.
    """

    # candidates are timed one by one anyway: the measurer may log each as it completes
    one_at_a_time = True

    def __init__(self, timeout: float = 10, number: int = 3, repeat: int = 1,
                 min_repeat_ms: float = 0, cooldown_interval: float = 0.0,
                 enable_cpu_cache_flush: bool = False, check_correctness: bool = False,
                 reference_func=None, rtol: float = 1e-3, atol: float = 1e-5, seed: int = 0,
                 reference_timeout: float = 120.0, max_runs_per_worker: int = 1000,
                 startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
                 slow_call_seconds: float = 0.1, cutoff: RunCutoff | None = RunCutoff()):
        self.timeout = check_seconds(timeout, "LocalRunner timeout")
        self.reference_timeout = check_seconds(reference_timeout, "LocalRunner reference_timeout")
        self.config = RunConfig(number, repeat, min_repeat_ms, cooldown_interval,
                                bool(enable_cpu_cache_flush), seed, rtol, atol,
                                slow_call_seconds)
        if cutoff is not None and not isinstance(cutoff, RunCutoff):
            raise TypeError(f"LocalRunner cutoff {cutoff!r}: expected an RunCutoff "
                            "or None")
        self.cutoff = cutoff
        self._best: dict = {}            # task key -> lowest valid mean cost measured here
        self.check_correctness = bool(check_correctness)
        self.reference_func = default_reference_func if reference_func is None \
            else reference_func
        if not callable(self.reference_func):
            raise TypeError(f"LocalRunner reference_func {reference_func!r} is not callable")
        self.pool = WorkerPool(1, "autosched-runner", max_runs_per_worker, startup_timeout)
        self._ref_objs: dict = {}        # ref key -> (obj, metas) or None when unusable
        self._ref_loaded: set = set()    # ref keys whose outputs the current worker holds
        self._ref_starts = 0             # pool.starts when _ref_loaded was valid
        self.last_seconds = self.total_seconds = 0.0
        self._inputs_dir: str | None = None     # task inputs' files (task_inputs.py)
        self._input_files: dict = {}
        self._last_job_end: float | None = None  # when the worker last finished a job
        self.warmups = 0                 # measurements discarded as warm-ups

    def start(self) -> None:
        """Start the worker now (non-blocking), e.g. while the builders compile."""
        self.pool.start()

    def run(self, inputs, build_results, verbose: int = 0) -> list:
        """One MeasureResult per (input, build result), in order."""
        t0 = time.perf_counter()
        inputs, build_results = list(inputs), list(build_results)
        if len(inputs) != len(build_results):
            raise ValueError(f"LocalRunner.run: {len(inputs)} inputs but "
                             f"{len(build_results)} build results")
        results = []
        for inp, br in zip(inputs, build_results):
            if not isinstance(br, BuildResult):
                raise TypeError(f"LocalRunner.run: expected BuildResult items, got "
                                f"{type(br).__name__}")
            results.append(self._run_one(inp, br))
            if verbose >= 1:
                print("*" if results[-1].is_valid else "E", end="", flush=True)
        if verbose >= 1 and results:
            print(flush=True)
        self.last_seconds = time.perf_counter() - t0
        self.total_seconds += self.last_seconds
        return results

    def _run_one(self, inp, br: BuildResult) -> MeasureResult:
        if br.error_no != MeasureErrorNo.NO_ERROR:
            return MeasureResult.failed(br.error_no, br.error_msg, br.time_cost)
        ref_key = None
        if self.check_correctness:
            _check_comparable(inp.task)
            ref_key = self._reference(inp.task)
        task_key = _task_key(inp.task)
        best = self._best.get(task_key)
        single_shot, timeout, early = self._limits(best)
        job = (br.obj, br.metas, self.config, ref_key, single_shot, self._fixed(inp.task))
        outcome = self._measure(job, timeout)
        all_cost = br.time_cost + outcome.seconds
        if outcome.status == "ok":
            costs, error_no, error_msg = outcome.value
            if error_no != MeasureErrorNo.NO_ERROR:
                return MeasureResult.failed(error_no, error_msg, all_cost)
            mean = sum(costs) / len(costs)
            self._best[task_key] = mean if best is None else min(best, mean)
            return MeasureResult(costs, error_no, "", all_cost, time.time())
        if outcome.status == "timeout" and early:
            return MeasureResult.failed(
                MeasureErrorNo.RUN_TIMEOUT, f"stopped after {outcome.seconds:.3g} s "
                f"{CUTOFF_MARK}: slower than {getattr(self.cutoff, 'kill_ratio', 0):g}x the best "
                f"mean cost measured for this task so far ({best:.3g} s); the run worker "
                "was restarted", all_cost)
        if outcome.status == "timeout":
            return MeasureResult.failed(MeasureErrorNo.RUN_TIMEOUT, "run did not finish "
                                        f"within the timeout of {timeout} s (the kernel may "
                                        "hang); the run worker was restarted", all_cost)
        if outcome.status == "died":
            return MeasureResult.failed(MeasureErrorNo.RUNTIME_DEVICE, f"run {outcome.value} "
                                        "while running this candidate (the kernel crashed); "
                                        "the run worker was restarted", all_cost)
        return MeasureResult.failed(MeasureErrorNo.RUNTIME_DEVICE, str(outcome.value),
                                    all_cost)

    def _measure(self, job, timeout: float):
        """The worker's outcome of ``job``; after an idle spell (``_WARM_AFTER_IDLE_S``),
        of its second run when the first was a valid measurement under ``_WARM_MAX_COST``
        (``seconds`` counts both)."""
        start = time.perf_counter()
        idle = self._last_job_end is None or start - self._last_job_end > _WARM_AFTER_IDLE_S
        outcome = self.pool.map(_run_job, [job], timeout)[0]
        if idle and outcome.status == "ok" and outcome.value[1] == MeasureErrorNo.NO_ERROR \
                and sum(outcome.value[0]) / len(outcome.value[0]) < _WARM_MAX_COST:
            self.warmups += 1
            again = self.pool.map(_run_job, [job], timeout)[0]
            outcome = dataclasses.replace(again, seconds=outcome.seconds + again.seconds)
        self._last_job_end = time.perf_counter()
        return outcome

    def _limits(self, best):
        return run_limits(self.config, self.cutoff, self.timeout, best)

    def _reference(self, task):
        """The key under which the worker holds ``task``'s reference outputs, or None."""
        key = _task_key(task)
        if self.pool.starts != self._ref_starts:
            self._ref_loaded.clear()
        if key in self._ref_loaded:
            return key
        if key not in self._ref_objs:
            try:
                self._ref_objs[key] = self.reference_func(task)
            except Exception as e:
                self._ref_objs[key] = None
                warnings.warn(f"check_correctness: building the reference for {key} failed "
                              f"({type(e).__name__}: {e}); its outputs are not checked",
                              stacklevel=2)
        if self._ref_objs[key] is None:
            return None
        obj, metas = self._ref_objs[key]
        outcome = self.pool.map(_reference_job, [(key, obj, metas, self.config.seed,
                                                  self._fixed(task))],
                                self.reference_timeout)[0]
        if outcome.status != "ok":
            self._ref_objs[key] = None
            warnings.warn(f"check_correctness: the reference kernel of {key} failed "
                          f"({outcome.status}: {outcome.value}); its outputs are not checked",
                          stacklevel=2)
            return None
        self._ref_loaded.add(key)
        self._ref_starts = self.pool.starts
        return key

    def _fixed(self, task) -> tuple:
        """The task inputs' files by name (written once, into this runner's directory)."""
        if not getattr(task, "task_input_names", ()):
            return ()
        if self._inputs_dir is None:
            self._inputs_dir = tempfile.mkdtemp(prefix="autosched-task-inputs-")
        return files_for(task, self._inputs_dir, self._input_files)

    def close(self) -> None:
        self.pool.close()
        if self._inputs_dir is not None:
            shutil.rmtree(self._inputs_dir, ignore_errors=True)
            self._inputs_dir = None
            self._input_files.clear()

    def __enter__(self) -> LocalRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
