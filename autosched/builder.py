"""LocalBuilder (compile candidates in worker processes) and the worker pool it shares
with LocalRunner.

Role: ``WorkerPool.map(fn, jobs, timeout)`` runs module-level functions in persistent
worker processes, one job at a time per worker, and reports each job as a
``JobOutcome`` (ok / error / timeout / died) instead of raising.  ``LocalBuilder`` uses
it to apply a state's steps, lower and compile each candidate (``default_build_func``)
and turns every outcome into a ``BuildResult``.

Invariants:
- workers are started with the "spawn" method, never forked: a fork of a process that
  ran a libgomp parallel region hangs, and LLVM state must not be shared.  Spawn
  re-imports the user's main module in each worker (so workloads registered there
  exist in the workers): tuning scripts need the ``if __name__ == "__main__":`` guard;
- a pool of our own (one Pipe per worker) rather than loky/concurrent.futures: only it
  can kill the one worker whose job hangs, and a round trip costs ~0.09 ms instead of
  ~0.47 ms (measured on the 2-core dev machine);
- a job's timeout runs from the moment it is handed to a *ready* worker (interpreter
  start-up and imports are excluded, bounded separately by ``startup_timeout``);
- a job past its timeout kills only its own worker; a worker that dies (segfault, LLVM
  abort) is reported for its job and replaced; the rest of the batch carries on;
- the parent only ever has one message in flight per worker, so a killed or abandoned
  worker can never hand a stale answer to the next job (on any exception escaping
  ``map``, e.g. Ctrl-C, every busy worker is killed before re-raising);
- workers ignore SIGINT (Ctrl-C reaches the whole process group): the parent decides;
- workers are recycled after ``max_jobs_per_worker`` jobs (llvmlite leaks ~75 KB per
  compile); outcomes come back in job order.
- error codes: lowering/step application failures are INSTANTIATION_ERROR (1),
  codegen/compile failures and worker deaths COMPILE_HOST (2), timeouts BUILD_TIMEOUT (6),
  anything else (e.g. a build_func the worker cannot import) UNKNOWN_ERROR (8).
"""
from __future__ import annotations

import collections
import hashlib
import math
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import time
import traceback
import weakref
from dataclasses import dataclass

import compiler

from .errors import AutoSchedError
from .measure import BuildResult, MeasureErrorNo, MeasureInput, ProgramBuilder

_CTX = multiprocessing.get_context("spawn")
DEFAULT_STARTUP_TIMEOUT = 120.0
_TASK_CACHE_SIZE = 8
# In a worker: unpickled tasks by the digest of their pickle (tasks repeat across jobs).
_TASK_CACHE: "collections.OrderedDict" = collections.OrderedDict()


class WorkerError(AutoSchedError, RuntimeError):
    """A worker process could not be started (its traceback is on stderr)."""


class InstantiationError(AutoSchedError):
    """Applying a state's steps or lowering the resulting schedule failed."""


@dataclass(frozen=True)
class JobOutcome:
    """How one job ended: ``status`` "ok" (``value`` is the function's result), "error"
    (``value`` is the message of an exception raised outside the job's own handling),
    "timeout" or "died" (``value`` describes it); ``seconds`` is parent wall time."""
    status: str
    value: object
    seconds: float


def _serve(conn) -> None:
    """Worker main loop: receive ``(fn, args)``, send ``("ok", result)`` or an error."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        except Exception as e:            # the message arrived whole but did not unpickle
            conn.send(("error", f"worker could not unpickle the job: {type(e).__name__}: {e}"))
            continue
        if msg is None:
            return
        fn, args = msg
        try:
            reply = ("ok", fn(*args))
        except Exception as e:
            reply = ("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
        try:
            conn.send(reply)
        except Exception as e:            # the result does not pickle
            conn.send(("error", f"job result could not be sent back: {type(e).__name__}: {e}"))


def describe_exit(exitcode) -> str:
    """``"killed by signal SIGSEGV"`` / ``"exited with code 1"`` for a process exit code."""
    if exitcode is None:
        return "stopped responding"
    if exitcode < 0:
        try:
            return f"was killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


class _Worker:
    """One spawned process and the parent's end of its pipe; ``state`` is one of
    "stopped", "starting", "idle", "busy"."""

    def __init__(self, name: str):
        self.name = name
        self.proc = self.conn = None
        self.state = "stopped"
        self.job = None
        self.deadline = math.inf
        self.dispatched = 0.0
        self.jobs_done = 0

    def start(self, startup_timeout: float) -> None:
        parent_end, child_end = _CTX.Pipe(duplex=True)
        self.proc = _CTX.Process(target=_serve, args=(child_end,), name=self.name, daemon=True)
        self.proc.start()
        child_end.close()                 # so the child's death reads as EOF here
        self.conn = parent_end
        self.state, self.job, self.jobs_done = "starting", None, 0
        self.deadline = time.monotonic() + startup_timeout

    def on_ready(self) -> None:
        try:
            self.conn.recv()
        except (EOFError, OSError):
            self.proc.join(5)
            raise WorkerError(f"worker process {self.name!r} {describe_exit(self.proc.exitcode)}"
                              " before it was ready (see its traceback on stderr)") from None
        self.state, self.deadline = "idle", math.inf

    def dispatch(self, job: int, fn, args, timeout: float) -> None:
        self.conn.send((fn, args))        # pickles first: a failure leaves the pipe clean
        self.state, self.job = "busy", job
        self.dispatched = time.monotonic()
        self.deadline = self.dispatched + timeout

    def receive(self) -> JobOutcome:
        """The busy job's outcome (the conn or the process sentinel is ready)."""
        seconds = time.monotonic() - self.dispatched
        try:
            if not self.conn.poll():
                raise EOFError
            status, value = self.conn.recv()
        except (EOFError, OSError):
            self.proc.join(5)
            return JobOutcome("died", f"worker process {describe_exit(self.proc.exitcode)}",
                              seconds)
        self.state, self.job, self.deadline = "idle", None, math.inf
        self.jobs_done += 1
        return JobOutcome(status, value, seconds)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join(5)
            self.conn.close()
        self.proc = self.conn = None
        self.state, self.job, self.deadline = "stopped", None, math.inf

    def stop(self) -> None:
        """Ask an idle worker to exit; kill it if it does not within 5 s."""
        if self.proc is not None and self.state == "idle":
            try:
                self.conn.send(None)
                self.proc.join(5)
            except OSError:
                pass
        self.kill()


class WorkerPool:
    """``size`` spawned worker processes running module-level functions (see module doc)."""

    def __init__(self, size: int, name: str = "autosched-worker",
                 max_jobs_per_worker: int = 1000,
                 startup_timeout: float = DEFAULT_STARTUP_TIMEOUT):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"WorkerPool: size {size!r} must be an int >= 1")
        if not isinstance(max_jobs_per_worker, int) or max_jobs_per_worker < 1:
            raise ValueError(f"WorkerPool: max_jobs_per_worker {max_jobs_per_worker!r} must "
                             "be an int >= 1")
        self.size = size
        self.max_jobs_per_worker = max_jobs_per_worker
        self.startup_timeout = check_seconds(startup_timeout, "WorkerPool startup_timeout")
        self._workers = [_Worker(f"{name}-{i}") for i in range(size)]
        self.starts = 0                   # processes started so far (restarts included)
        # A pool dropped without close() still stops its processes (it holds no ref to us).
        weakref.finalize(self, _kill_all, self._workers)

    def start(self) -> None:
        """Start every stopped worker without waiting for it to be ready."""
        for w in self._workers:
            if w.state == "stopped":
                w.start(self.startup_timeout)
                self.starts += 1

    def map(self, fn, jobs, timeout: float) -> list:
        """Run ``fn(*args)`` for each args tuple of ``jobs``; a JobOutcome per job, in order."""
        timeout = check_seconds(timeout, "WorkerPool.map timeout")
        jobs = list(jobs)
        outcomes = [None] * len(jobs)
        pending = collections.deque(range(len(jobs)))
        self.start()
        try:
            while pending or any(w.state == "busy" for w in self._workers):
                self._dispatch(fn, jobs, pending, outcomes, timeout)
                self._wait_and_collect(outcomes)
        except BaseException:
            for w in self._workers:
                if w.state == "busy":
                    w.kill()
            raise
        return outcomes

    def _dispatch(self, fn, jobs, pending, outcomes, timeout) -> None:
        for w in self._workers:
            while w.state == "idle" and pending:
                job = pending.popleft()
                try:
                    w.dispatch(job, fn, tuple(jobs[job]), timeout)
                except (pickle.PicklingError, TypeError, AttributeError) as e:
                    outcomes[job] = JobOutcome("error", f"job arguments could not be sent to "
                                               f"the worker: {type(e).__name__}: {e}", 0.0)
                except OSError:           # the idle worker died (e.g. killed by the OOM killer)
                    pending.appendleft(job)
                    self._restart(w)

    def _wait_and_collect(self, outcomes) -> None:
        active = [w for w in self._workers if w.state in ("busy", "starting")]
        if not active:
            return
        waitables = [w.conn for w in active] + [w.proc.sentinel for w in active]
        wait_s = max(0.0, min(w.deadline for w in active) - time.monotonic())
        ready = set(multiprocessing.connection.wait(waitables, timeout=wait_s))
        for w in active:
            if w.conn not in ready and w.proc.sentinel not in ready:
                continue
            if w.state == "starting":
                w.on_ready()
                continue
            job, outcome = w.job, w.receive()
            outcomes[job] = outcome
            if outcome.status == "died":
                self._restart(w)
            elif w.jobs_done >= self.max_jobs_per_worker:
                w.stop()
                self._restart(w)
        now = time.monotonic()
        for w in active:
            if w.state == "starting" and now >= w.deadline:
                w.kill()
                raise WorkerError(f"worker process {w.name!r} was not ready within "
                                  f"{self.startup_timeout} s of being started")
            if w.state == "busy" and now >= w.deadline:
                outcomes[w.job] = JobOutcome("timeout", "timed out", now - w.dispatched)
                self._restart(w)

    def _restart(self, w: _Worker) -> None:
        w.kill()
        w.start(self.startup_timeout)
        self.starts += 1

    def close(self) -> None:
        """Stop every worker (idle ones are asked to exit, the others killed); a later
        ``map`` starts new ones."""
        for w in self._workers:
            w.stop()

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _kill_all(workers) -> None:
    for w in workers:
        w.kill()


def check_seconds(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what}: {value!r} must be a finite number of seconds > 0")
    return float(value)


def default_build_func(inp: MeasureInput):
    """Apply the state's steps, lower and compile: ``(object bytes, FuncMeta tuple)``.

    Failures before code generation raise InstantiationError (the state does not make a
    valid schedule); later ones raise what codegen or LLVM raised.
    """
    try:
        sch, args = inp.task.compute_dag.apply_steps_from_state(inp.state)
        func = compiler.lower(sch, args, name="default_function")
    except Exception as e:
        raise InstantiationError(f"{type(e).__name__}: {e}") from e
    obj, metas, _ir = compiler.build_object(func, inp.task.target)
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
    import it by name); default ``default_build_func``.  ``last_seconds`` /
    ``total_seconds`` time the ``build`` calls.  Call ``close()`` (or use ``with``) to stop
    the workers early; they are daemons and die with the tuner anyway.
    """

    def __init__(self, timeout: float = 15, n_parallel: "int | None" = None, build_func=None,
                 max_jobs_per_worker: int = 1000,
                 startup_timeout: float = DEFAULT_STARTUP_TIMEOUT):
        self.timeout = check_seconds(timeout, "LocalBuilder timeout")
        n = default_n_parallel() if n_parallel is None else n_parallel
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"LocalBuilder: n_parallel {n_parallel!r} must be an int >= 1")
        self.n_parallel = n
        self.build_func = default_build_func if build_func is None else build_func
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
        outcomes = self.pool.map(_build_job, jobs, self.timeout) if jobs else []
        results = [self._result(o) for o in outcomes]
        if verbose >= 1 and results:
            print("".join(_BUILD_MARKS.get(r.error_no, "E") for r in results), flush=True)
        self.last_seconds = time.perf_counter() - t0
        self.total_seconds += self.last_seconds
        return results

    def _result(self, outcome: JobOutcome) -> BuildResult:
        if outcome.status == "ok":
            return BuildResult(*outcome.value)
        if outcome.status == "timeout":
            return BuildResult.failed(MeasureErrorNo.BUILD_TIMEOUT, "build did not finish "
                                      f"within the timeout of {self.timeout} s", self.timeout)
        if outcome.status == "died":
            return BuildResult.failed(MeasureErrorNo.COMPILE_HOST, f"build {outcome.value} "
                                      "while compiling this candidate (LLVM abort or crash)",
                                      outcome.seconds)
        return BuildResult.failed(MeasureErrorNo.UNKNOWN_ERROR, str(outcome.value),
                                  outcome.seconds)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> "LocalBuilder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_BUILD_MARKS = {MeasureErrorNo.NO_ERROR: ".", MeasureErrorNo.BUILD_TIMEOUT: "T"}


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
