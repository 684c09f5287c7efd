"""LocalBuilder: compile candidates in a WorkerPool (``autosched.measure.workers``).

Role: apply a state's steps, lower and compile each candidate (``default_build_func``) in
worker processes and turn every outcome into a ``BuildResult``.

Invariants:
- error codes: lowering/step application failures are INSTANTIATION_ERROR (1),
  codegen/compile failures and worker deaths COMPILE_HOST (2), timeouts BUILD_TIMEOUT (6),
  anything else (e.g. a build_func the worker cannot import) UNKNOWN_ERROR (8);
- the build function runs in the workers, so it must be a module-level function;
- cut-off (``BuildCutoff``) only shortens the timeout once enough builds of this
  builder succeeded for their median to mean something.
"""
from __future__ import annotations

import collections
import hashlib
import os
import pickle
import statistics
import time
import traceback
from dataclasses import dataclass

import compiler

from ..checks import check_fields, check_number
from ..errors import AutoSchedError
from .measurer import CUTOFF_MARK, BuildResult, MeasureErrorNo, MeasureInput, ProgramBuilder
from .workers import DEFAULT_STARTUP_TIMEOUT, JobOutcome, WorkerPool, check_seconds

_TASK_CACHE_SIZE = 8
# In a worker: unpickled tasks by the digest of their pickle (tasks repeat across jobs).
_TASK_CACHE: collections.OrderedDict = collections.OrderedDict()
# Successful build times kept for the cut-off median.
_RECENT_BUILDS = 256


class InstantiationError(AutoSchedError):
    """Applying a state's steps or lowering the resulting schedule failed."""


@dataclass(frozen=True)
class BuildCutoff:
    """When LocalBuilder gives up on a candidate sooner than ``timeout``: once ``warmup``
    builds succeeded, a build running longer than ``max(floor, ratio * median)`` of
    the recent successful build times is stopped (BUILD_TIMEOUT).

    Why: LLVM sometimes takes 100x the usual time on one candidate (O3 fully unrolls a
    nest of small scalar loops into ~15,000 instructions: 36 s for a 191-line matmul
    candidate, measured); the whole batch waits for it while the other builders idle.
    """
    ratio: float = 20.0
    floor: float = 5.0
    warmup: int = 8

    def __post_init__(self):
        check_fields(self, ("ratio", "floor"), 0, strict=True)
        check_fields(self, ("warmup",), 1, integer=True)


def default_build_func(inp: MeasureInput):
    """Apply the state's steps, lower and compile: ``(object bytes, FuncMeta tuple)``.

    Failures before code generation raise InstantiationError (the state does not make a
    valid schedule); later ones raise what codegen or LLVM raised.  The object cache is
    not used: the search never builds a state twice, so caching would only fill the disk
    (~10 KB per candidate) and hide real build times from the statistics.
    """
    try:
        sch, args = inp.task.compute_dag.apply_steps_from_state(
            inp.state, getattr(inp.task, "layout_rewrite_option", 0))
        func = compiler.lower(sch, args, name="default_function")
    except Exception as e:
        raise InstantiationError(f"{type(e).__name__}: {e}") from e
    obj, metas, _ir = compiler.build_object(func, inp.task.target, cache=None)
    return obj, metas


def _cached_task(digest: str, blob: bytes):
    task = _TASK_CACHE.get(digest)
    if task is None:
        task = pickle.loads(blob)         # our own parent pickled it (never a file)
        _TASK_CACHE[digest] = task
        while len(_TASK_CACHE) > _TASK_CACHE_SIZE:
            _TASK_CACHE.popitem(last=False)
    return task


def _build_job(build_func, digest: str, task_blob: bytes, state):
    """In a worker: ``(obj, metas, error_no, error_msg, seconds)`` for one candidate."""
    t0 = time.perf_counter()
    try:
        inp = MeasureInput(_cached_task(digest, task_blob), state)
        out = build_func(inp)
        if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], bytes)
                and out[1]):
            raise compiler.BuildError(f"build_func {build_func!r} returned {out!r:.200}; "
                                      "expected (object bytes, non-empty metas)")
        obj, metas = out
        return obj, tuple(metas), MeasureErrorNo.NO_ERROR, "", time.perf_counter() - t0
    except (InstantiationError, compiler.TEError, compiler.ScheduleError,
            compiler.LoweringError) as e:
        err = MeasureErrorNo.INSTANTIATION_ERROR
        msg = f"{type(e).__name__}: {e}"
    except Exception as e:
        err = MeasureErrorNo.COMPILE_HOST
        msg = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
    return None, None, int(err), msg, time.perf_counter() - t0


def default_n_parallel() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class LocalBuilder(ProgramBuilder):
    """Compile MeasureInputs in ``n_parallel`` worker processes (default: one per core).

    ``build_func(inp) -> (obj_bytes, metas)`` must be a module-level function (workers
    import it by name); default ``default_build_func``.  ``cutoff`` (a
    BuildCutoff, or None) stops builds far slower than the usual ones before
    ``timeout``.  ``last_seconds`` /
    ``total_seconds`` time the ``build`` calls.  Call ``close()`` (or use ``with``) to stop
    the workers early; they are daemons and die with the tuner anyway.
    """

    def __init__(self, timeout: float = 15, n_parallel: int | None = None, build_func=None,
                 max_jobs_per_worker: int = 1000,
                 startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
                 cutoff: BuildCutoff | None = BuildCutoff()):
        self.timeout = check_seconds(timeout, "LocalBuilder timeout")
        if cutoff is not None and not isinstance(cutoff, BuildCutoff):
            raise TypeError(f"LocalBuilder cutoff {cutoff!r}: expected a "
                            "BuildCutoff or None")
        self.cutoff = cutoff
        self._recent: collections.deque = collections.deque(maxlen=_RECENT_BUILDS)
        n = default_n_parallel() if n_parallel is None else n_parallel
        self.n_parallel = check_number(n, "LocalBuilder n_parallel", 1, integer=True)
        if build_func == "ndk":
            raise ValueError("LocalBuilder build_func='ndk': Android's NDK is not supported "
                             "(kernels are built for this machine's llvm target); use "
                             "'default' or a function")
        # TVM's spelling of the default: the string "default"
        self.build_func = default_build_func if build_func in (None, "default") \
            else build_func
        _check_module_level(self.build_func, "LocalBuilder build_func")
        self.pool = WorkerPool(n, "autosched-builder", max_jobs_per_worker, startup_timeout)
        self.last_seconds = self.total_seconds = 0.0

    def build(self, inputs, verbose: int = 0) -> list:
        """One BuildResult per input, in order (see the module doc for error codes)."""
        t0 = time.perf_counter()
        inputs = list(inputs)
        blobs = {}
        jobs = []
        for inp in inputs:
            if not isinstance(inp, MeasureInput):
                raise TypeError(f"LocalBuilder.build: expected MeasureInput items, got "
                                f"{type(inp).__name__}")
            if id(inp.task) not in blobs:
                blobs[id(inp.task)] = _pickle_task(inp.task)
            jobs.append((self.build_func, *blobs[id(inp.task)], inp.state))
        timeout, early = self._timeout()
        outcomes = self.pool.map(_build_job, jobs, timeout) if jobs else []
        results = [self._result(o, timeout, early) for o in outcomes]
        self._recent.extend(r.time_cost for r in results
                            if r.error_no == MeasureErrorNo.NO_ERROR)
        if verbose >= 1 and results:
            print("".join(_BUILD_MARKS.get(r.error_no, "E") for r in results), flush=True)
        self.last_seconds = time.perf_counter() - t0
        self.total_seconds += self.last_seconds
        return results

    def _timeout(self):
        """``(timeout for this batch, whether it is shorter than self.timeout)``."""
        stop = self.cutoff
        if stop is None or len(self._recent) < stop.warmup:
            return self.timeout, False
        limit = max(stop.floor, stop.ratio * statistics.median(self._recent))
        return (limit, True) if limit < self.timeout else (self.timeout, False)

    def _result(self, outcome: JobOutcome, timeout: float, early: bool) -> BuildResult:
        if outcome.status == "ok":
            return BuildResult(*outcome.value)
        if outcome.status == "timeout" and early:
            return BuildResult.failed(
                MeasureErrorNo.BUILD_TIMEOUT, f"build stopped after {timeout:.3g} s "
                f"{CUTOFF_MARK}: over {getattr(self.cutoff, 'ratio', 0):g}x the median build time "
                f"of this builder (the hard timeout is {self.timeout} s)", timeout)
        if outcome.status == "timeout":
            return BuildResult.failed(MeasureErrorNo.BUILD_TIMEOUT, "build did not finish "
                                      f"within the timeout of {timeout} s", timeout)
        if outcome.status == "died":
            return BuildResult.failed(MeasureErrorNo.COMPILE_HOST, f"build {outcome.value} "
                                      "while compiling this candidate (LLVM abort or crash)",
                                      outcome.seconds)
        return BuildResult.failed(MeasureErrorNo.UNKNOWN_ERROR, str(outcome.value),
                                  outcome.seconds)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> LocalBuilder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_BUILD_MARKS: dict = {MeasureErrorNo.NO_ERROR: ".", MeasureErrorNo.BUILD_TIMEOUT: "T"}


def _pickle_task(task) -> tuple:
    try:
        blob = pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        raise TypeError(f"task {task!r:.200} cannot be pickled for the build workers: "
                        f"{type(e).__name__}: {e}") from e
    return hashlib.sha1(blob).hexdigest(), blob


def _check_module_level(fn, what: str) -> None:
    if not callable(fn):
        raise TypeError(f"{what} {fn!r} is not callable")
    try:
        pickle.dumps(fn)
    except Exception as e:
        raise TypeError(f"{what} {fn!r} must be a module-level function (worker processes "
                        f"import it by name): {type(e).__name__}: {e}") from None
