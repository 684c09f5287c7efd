"""WorkerPool: persistent worker processes that run module-level functions, one
job at a time each, shared by LocalBuilder (n workers) and LocalRunner (one worker).

Role: ``WorkerPool.map(fn, jobs, timeout)`` reports each job as a ``JobOutcome`` (ok /
error / timeout / died) instead of raising.

Invariants:
- workers are forked from multiprocessing's fork server, never from the tuner itself:
  a fork of a process that ran a libgomp parallel region hangs, and LLVM state must not
  be shared.  The server has only imported this package (``_PRELOAD``), never compiled
  or run anything, so a new worker is ready in ~6 ms instead of the ~0.5 s a spawned
  one needs to import it; a worker killed for a timeout or a crash is replaced at once.
  Unlike multiprocessing's default, a worker never imports the user's main module
  (``_main_hidden``): TVM's tutorials call ``task.tune`` at module level with no
  ``if __name__ == "__main__":`` guard, and re-running that script in every worker would
  start tuning recursively.  Jobs carry everything they need (tasks are pickled whole,
  functions are module-level).  The preload list is process-wide
  (``set_forkserver_preload``);
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
- a worker exits within a second of its tuner's death, even mid-job (``_watch_owner``);
- workers are recycled after ``max_jobs_per_worker`` jobs (llvmlite leaks ~75 KB per
  compile); outcomes come back in job order;
- a job may pause the cyclic garbage collector until its reply is sent, or until the
  reply of a later job that continues it (``pause_gc_until_replied``): the collection
  of what it left behind then runs after the caller has its result, not before;
- ``map_pinned`` gives job i to worker i, so a job can continue what an earlier job
  left in its worker (a restarted worker has lost it: the job checks).
"""
from __future__ import annotations

import collections
import ctypes
import gc
import math
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import threading
import time
import traceback
import types
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..checks import check_number
from ..errors import AutoSchedError

_CTX = multiprocessing.get_context("forkserver")
# What the fork server imports before it forks workers: the job functions' modules.
_PRELOAD = ["autosched.measure.builder", "autosched.measure.runner"]
_CTX.set_forkserver_preload(_PRELOAD)
DEFAULT_STARTUP_TIMEOUT = 120.0
_PR_SET_PDEATHSIG = 1                     # linux/prctl.h


class WorkerError(AutoSchedError, RuntimeError):
    """A worker process could not be started (its traceback is on stderr)."""


@dataclass(frozen=True)
class JobOutcome:
    """How one job ended: ``status`` "ok" (``value`` is the function's result), "error"
    (``value`` is the message of an exception raised outside the job's own handling),
    "timeout" or "died" (``value`` describes it); ``seconds`` is parent wall time."""
    status: str
    value: Any
    seconds: float


@contextmanager
def _main_hidden():
    """While starting a worker, ``__main__`` is an empty module: multiprocessing then
    sends no main module for the child to re-import (its preparation data names the main
    module only when it has a ``__spec__`` or a ``__file__``)."""
    saved = sys.modules.get("__main__")
    blank = types.ModuleType("__main__")
    blank.__spec__ = None
    sys.modules["__main__"] = blank
    try:
        yield
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this worker when its parent (the fork server, which exits as
    soon as the tuner is gone) dies: a worker busy in a long kernel would otherwise
    outlive a ``kill -9`` of the tuner.  Elsewhere the pipe's EOF ends the worker."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:                 # the parent died before prctl took effect
        os._exit(0)


def _watch_owner(owner: int) -> None:
    """Exit when the tuner that owns this worker is gone, even in the middle of a job.

    The fork server outlives the tuner while any worker lives (every worker holds its
    keep-alive pipe), and a worker only reads its pipe's EOF between jobs, so a worker
    busy in a long compile or a slow kernel (whose timeout the dead tuner no longer
    enforces) kept a core busy for minutes after the tuner was killed."""
    while True:
        time.sleep(0.5)
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            os._exit(0)
        except PermissionError:
            pass


_IN_WORKER: list = []        # [True] in a worker process (set by _serve)
_GC_AFTER_REPLY: list = []   # [replies to go] while jobs have the collector paused


def pause_gc_until_replied(replies: int = 1) -> bool:
    """In a worker, during a job: pause the cyclic garbage collector until the reply
    of this job and the next ``replies - 1`` jobs has been sent (the worker loop
    resumes it), and return True -- also when an earlier job's pause still holds
    through this one.  Outside a worker (or with the collector paused otherwise) do
    nothing and return False."""
    if not _IN_WORKER:
        return False
    if _GC_AFTER_REPLY:
        _GC_AFTER_REPLY[0] = max(_GC_AFTER_REPLY[0], replies)
        return True
    if not gc.isenabled():
        return False
    gc.disable()
    _GC_AFTER_REPLY.append(replies)
    return True


def _resume_gc() -> None:
    if _GC_AFTER_REPLY:
        _GC_AFTER_REPLY[0] -= 1
        if _GC_AFTER_REPLY[0] <= 0:
            _GC_AFTER_REPLY.clear()
            gc.enable()


def _serve(conn, owner: int | None = None) -> None:
    """Worker main loop: receive ``(fn, args)``, send ``("ok", result)`` or an error."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    if owner is not None:
        threading.Thread(target=_watch_owner, args=(owner,), daemon=True,
                         name="owner-watch").start()
    _IN_WORKER.append(True)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, ConnectionResetError):
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
        except (BrokenPipeError, ConnectionResetError):
            return                        # the parent is gone: end quietly
        except Exception as e:            # the result does not pickle
            conn.send(("error", f"job result could not be sent back: {type(e).__name__}: {e}"))
        finally:
            _resume_gc()


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
    """One worker process and the parent's end of its pipe; ``state`` is one of
    "stopped", "starting", "idle", "busy"."""

    def __init__(self, name: str):
        self.name = name
        self.proc: Any = None         # the Process (Any: mypy has no common base)
        self.conn: Any = None         # our end of its pipe
        self.state = "stopped"
        self.job: int | None = None
        self.deadline = math.inf
        self.dispatched = 0.0
        self.jobs_done = 0

    def start(self, startup_timeout: float) -> None:
        parent_end, child_end = _CTX.Pipe(duplex=True)
        self.proc = _CTX.Process(target=_serve, args=(child_end, os.getpid()), name=self.name,
                                 daemon=True)
        try:
            with _main_hidden():
                self.proc.start()
        except BaseException:
            child_end.close()
            parent_end.close()
            self.proc = None
            raise
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
        if self.proc is not None and self.proc.pid is not None:
            self.proc.kill()                   # a process that never started has no pid
            self.proc.join(5)
        if self.conn is not None:
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
    """``size`` worker processes running module-level functions (see module doc)."""

    def __init__(self, size: int, name: str = "autosched-worker",
                 max_jobs_per_worker: int = 1000,
                 startup_timeout: float = DEFAULT_STARTUP_TIMEOUT):
        self.size = check_number(size, "WorkerPool size", 1, integer=True)
        self.max_jobs_per_worker = check_number(max_jobs_per_worker,
                                                "WorkerPool max_jobs_per_worker", 1,
                                                integer=True)
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
        return self._drive(pending, outcomes,
                           lambda: self._dispatch(fn, jobs, pending, outcomes, timeout))

    def map_each(self, fn, args: tuple, timeout: float) -> list:
        """Run ``fn(*args)`` once in every worker (e.g. to import what later jobs
        need); a JobOutcome per worker.  ``map`` cannot promise that: the first worker
        to be ready takes every queued job."""
        timeout = check_seconds(timeout, "WorkerPool.map_each timeout")
        return self.map_pinned(fn, [tuple(args)] * self.size, timeout)

    def map_pinned(self, fn, jobs: list, timeout: float) -> list:
        """Run ``fn(*jobs[i])`` in worker ``i`` (no job where ``jobs[i]`` is None), e.g.
        a job that continues what an earlier job left in that worker; a JobOutcome
        (None where there was no job) per worker.  A worker restarted in between has
        lost what its earlier jobs left: the job must check."""
        timeout = check_seconds(timeout, "WorkerPool.map_pinned timeout")
        if len(jobs) > self.size:
            raise ValueError(f"WorkerPool.map_pinned: {len(jobs)} jobs for {self.size} "
                             "workers (expected at most one job per worker)")
        outcomes: list = [None] * len(jobs)
        pending = {i for i, job in enumerate(jobs) if job is not None}
        return self._drive(pending, outcomes,
                           lambda: self._dispatch_pinned(fn, jobs, pending, outcomes,
                                                         timeout))

    def _drive(self, pending, outcomes, dispatch) -> list:
        """Dispatch and collect until no job is pending or running; on any exception
        (Ctrl-C included) the busy workers are killed before it propagates."""
        self.start()
        try:
            while pending or any(w.state == "busy" for w in self._workers):
                dispatch()
                self._wait_and_collect(outcomes)
        except BaseException:
            for w in self._workers:
                if w.state == "busy":
                    w.kill()
            raise
        return outcomes

    def _dispatch_pinned(self, fn, jobs, pending, outcomes, timeout) -> None:
        """Job i goes to worker i, once that worker is idle."""
        for i in sorted(pending):
            w = self._workers[i]
            if w.state != "idle":
                continue
            pending.discard(i)
            try:
                w.dispatch(i, fn, tuple(jobs[i]), timeout)
            except (pickle.PicklingError, TypeError, AttributeError, OSError) as e:
                outcomes[i] = JobOutcome("error", f"job arguments could not be sent to the "
                                         f"worker: {type(e).__name__}: {e}", 0.0)

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

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _kill_all(workers) -> None:
    for w in workers:
        w.kill()


def check_seconds(value, what: str) -> float:
    return float(check_number(value, what, 0, strict=True, unit="seconds"))
