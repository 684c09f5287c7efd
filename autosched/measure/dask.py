"""DaskBuilder and DaskRunner: build and measure candidates on a dask.distributed cluster.

Role: TVM's RPC tracker + RPCRunner, done with an existing engine.  Start a scheduler and
workers the usual way (``dask scheduler``; ``dask worker tcp://host:8786 --nthreads 2
--resources measure=1`` on every machine) and pass the address (or a ``Client``) to
``DaskBuilder``/``DaskRunner``; they are drop-ins for LocalBuilder/LocalRunner.

Invariants:
- ``distributed`` is imported when a DaskBuilder/DaskRunner is made (the ``[dask]``
  extra), never at import time;
- on a worker, a build or a run is the local builder's/runner's job function
  (``_build_job``/``_run_job``) in an isolated process of a per-thread WorkerPool: a
  kernel that segfaults or hangs costs one pool process, never the dask worker;
- a run needs the worker resource ``measure`` (1 per worker: one measurement at a time
  on each machine); builds need none and use every worker thread;
- what travels: the pickled SearchTask (data only: te ops and shapes, sent once per
  task and cached by digest on workers), step records, object code as bytes and its
  FuncMeta, plain result tuples, and a task's inputs as ``.npy`` bytes (scattered once
  per array, written once per machine).  Dask pickles only references to this module's
  functions.  Records are written by the client alone (the ProgramMeasurer callbacks);
- the client enforces every timeout (a result not back in time is RUN/BUILD_TIMEOUT);
  a candidate whose worker died or disconnected is resubmitted once, anywhere; a worker
  whose CPU cannot run the task's target refuses it and the client sends it to another
  worker (RUNTIME_DEVICE when none can);
- a lost scheduler raises ``ClusterError``: ``tune`` stops cleanly, the log keeps every
  finished batch.
"""
from __future__ import annotations

import collections
import hashlib
import io
import multiprocessing
import os
import statistics
import tempfile
import threading
import time

import numpy as np

from compiler.errors import BuildError
from compiler.runtime import check_runnable, parse_target

from ..errors import AutoSchedError
from ..steps.registry import step_from_record
from ..task_inputs import arrays_for
from .builder import _build_job, _cached_task, _pickle_task, default_build_func
from .measurer import (
    CUTOFF_MARK,
    BuildResult,
    MeasureErrorNo,
    MeasureInput,
    MeasureResult,
    ProgramBuilder,
    ProgramRunner,
)
from .runner import RunConfig, RunCutoff, _run_job, run_limits
from .workers import WorkerPool, check_seconds

RESOURCE = "measure"
_RETRIES = 1
# Client-side slack on top of a job's own timeout (scheduling, transfer, pool start-up).
_CLIENT_SLACK = 10.0


class ClusterError(AutoSchedError, RuntimeError):
    """The Dask scheduler or every worker went away; tuning cannot go on."""


# ---------------------------------------------------------------- worker side
_LOCAL = threading.local()       # one pool per dask worker thread: pools are not thread-safe
_MASKED: set = set()             # host features this worker pretends not to have


def limit_host_features(features) -> None:
    """On a worker: treat ``features`` (e.g. ``["avx512f"]``) as missing from the CPU.

    Run with ``client.run(limit_host_features, [...], workers=[addr])`` to see how a
    farm of unequal machines routes work without owning one."""
    _MASKED.clear()
    _MASKED.update(features)


def _pool(kind: str) -> WorkerPool:
    pools = getattr(_LOCAL, "pools", None)
    if pools is None:
        pools = _LOCAL.pools = {}
        # Dask makes worker processes daemonic (they die with their nanny), and
        # multiprocessing refuses children to daemons.  Our pool processes read their
        # pipe and exit when this worker goes away, so lifting the flag is safe.
        me = multiprocessing.current_process()
        if me.daemon:
            me.daemon = False
    if kind not in pools:
        pools[kind] = WorkerPool(1, f"autosched-dask-{kind}")
    return pools[kind]


def _build_records_job(digest: str, blob: bytes, records: list):
    """In a pool process: decode the state from its step records, then build it."""
    task = _cached_task(digest, blob)
    state = task.compute_dag.state_from_steps([step_from_record(r) for r in records])
    return _build_job(default_build_func, digest, blob, state)


def worker_build(digest: str, blob: bytes, records: list, timeout: float) -> tuple:
    """Dask task: ``(obj, metas, error_no, error_msg, seconds)`` of one build."""
    out = _pool("build").map(_build_records_job, [(digest, blob, records)], timeout)[0]
    if out.status == "ok":
        return out.value
    err = MeasureErrorNo.BUILD_TIMEOUT if out.status == "timeout" else (
        MeasureErrorNo.COMPILE_HOST if out.status == "died" else MeasureErrorNo.UNKNOWN_ERROR)
    return None, None, int(err), f"build {out.status}: {out.value}", out.seconds


def _input_files(fixed) -> tuple:
    """On a worker: ``((position, name, path), ...)`` of the task inputs sent as ``(position,
    name, digest, .npy bytes)``; each file is written once per machine, named by its
    digest (atomically: concurrent workers may write the same one)."""
    if not fixed:
        return ()
    directory = os.path.join(tempfile.gettempdir(), "autosched-dask-task-inputs")
    os.makedirs(directory, exist_ok=True)
    out = []
    for k, name, digest, data in fixed:
        path = os.path.join(directory, f"{digest}.npy")
        if not os.path.exists(path):
            fd, tmp = tempfile.mkstemp(dir=directory, suffix=".part")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        out.append((k, name, path))
    return tuple(out)


def worker_run(target: str, obj: bytes, metas, config: RunConfig, single_shot: float,
               timeout: float, fixed=()) -> tuple:
    """Dask task: ``(status, costs, error_no, error_msg, seconds, address)``; ``fixed``: the
    task inputs as ``(position, name, digest, .npy bytes)``.

    ``status`` is "refused" when this machine cannot run ``target``, else "done"."""
    addr = _address()
    try:
        check_runnable(parse_target(target), without=tuple(_MASKED))
    except BuildError as e:
        return "refused", [], int(MeasureErrorNo.RUNTIME_DEVICE), f"worker {addr}: {e}", 0.0, addr
    out = _pool("run").map(_run_job, [(obj, metas, config, None, single_shot,
                                       _input_files(fixed))], timeout)[0]
    if out.status == "ok":
        costs, err, msg = out.value
        return "done", costs, err, msg, out.seconds, addr
    err = MeasureErrorNo.RUN_TIMEOUT if out.status == "timeout" else MeasureErrorNo.RUNTIME_DEVICE
    return "done", [], int(err), f"run {out.status} on worker {addr}: {out.value}", \
        out.seconds, addr


def _address() -> str:
    from distributed import get_worker  # noqa: PLC0415 - optional extra, on workers only
    try:
        return get_worker().address
    except ValueError:
        return "local"


# ---------------------------------------------------------------- client side
def worker_info(client) -> dict:
    """``{address: info}`` of every worker, asked of the scheduler now.

    Not ``client.scheduler_info()``: that returns the client's cached identity, which
    its own periodic refresh (every 2 s, without per-worker entries since distributed
    2025.5) can overwrite between the fresh fetch and the return, so it sometimes
    reports a live cluster as having no workers."""
    return client.sync(client.scheduler.identity, n_workers=-1)["workers"]


def _client(client_or_address, connect_timeout: float):
    try:
        import distributed  # noqa: PLC0415 - optional extra [dask]
    except ImportError:
        raise ImportError("DaskBuilder/DaskRunner need dask.distributed: "
                          "pip install 'tensor-autosched[dask]'") from None
    if isinstance(client_or_address, distributed.Client):
        return client_or_address, False
    if not isinstance(client_or_address, str):
        raise TypeError(f"expected a distributed.Client or a scheduler address such as "
                        f"'tcp://host:8786', got {client_or_address!r}")
    try:
        return distributed.Client(client_or_address, timeout=connect_timeout), True
    except (OSError, TimeoutError) as e:
        raise ClusterError(f"cannot reach the Dask scheduler at {client_or_address}: "
                           f"{type(e).__name__}: {e}") from None


class _DaskBase:
    def __init__(self, client_or_address, timeout: float, what: str,
                 connect_timeout: float = 30):
        self.timeout = check_seconds(timeout, f"{what} timeout")
        self.client, self._owns = _client(client_or_address, connect_timeout)
        self._sent: dict = {}       # task id -> (digest, blob future)
        self.last_seconds = self.total_seconds = 0.0

    def _task_blob(self, task):
        """(digest, future of the pickled task): each task crosses the wire once."""
        hit = self._sent.get(id(task))
        if hit is None:
            digest, blob = _pickle_task(task)
            ref = self._call(self.client.scatter, blob, hash=False, broadcast=False)
            hit = self._sent[id(task)] = (digest, ref, task)   # task kept: ids stay unique
        return hit[0], hit[1]

    def _call(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` on the client; a closed client or lost scheduler is a
        ClusterError (dask raises several unrelated types for it)."""
        try:
            return fn(*args, **kwargs)
        except (TypeError, ValueError):
            raise
        except Exception as e:  # noqa: BLE001 - ClosedClientError, CommClosedError, OSError...
            raise ClusterError(f"the Dask cluster is gone: {type(e).__name__}: {e}") from None

    def _workers(self) -> list:
        try:
            return sorted(worker_info(self.client))
        except Exception as e:  # noqa: BLE001 - any failure here means no scheduler
            raise ClusterError(f"the Dask scheduler is gone: {type(e).__name__}: {e}") from None

    def _gather(self, futures: dict, deadline: dict) -> dict:
        """``{key: (value | exception | "timeout")}`` once each future is done or late."""
        from distributed import wait  # noqa: PLC0415 - optional extra [dask]
        out = {}
        pending = dict(futures)
        while pending:
            left = max(0.05, min(deadline[k] for k in pending) - time.monotonic())
            try:
                wait(list(pending.values()), timeout=left, return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass
            except Exception as e:  # noqa: BLE001
                raise ClusterError(f"lost the Dask scheduler: {type(e).__name__}: {e}") from None
            now = time.monotonic()
            for k, f in list(pending.items()):
                if f.done():
                    try:
                        out[k] = f.result()
                    except Exception as e:  # noqa: BLE001 - classified by the caller
                        out[k] = e
                    del pending[k]
                elif now >= deadline[k]:
                    f.cancel()
                    out[k] = "timeout"
                    del pending[k]
        return out

    def close(self) -> None:
        self._sent.clear()            # release the scattered tasks before the client goes
        if self._owns:
            self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class DaskBuilder(_DaskBase, ProgramBuilder):
    """Build candidates on the cluster's workers (any worker, all threads)."""

    def __init__(self, client_or_address, timeout: float = 15, n_parallel=None,
                 connect_timeout: float = 30):
        _DaskBase.__init__(self, client_or_address, timeout, "DaskBuilder", connect_timeout)
        info = self._call(worker_info, self.client)
        threads = sum(w.get("nthreads", 1) for w in info.values())
        self.n_parallel = n_parallel or max(1, threads)

    def build(self, inputs, verbose: int = 0) -> list:
        t0 = time.perf_counter()
        inputs = list(inputs)
        results: list = [None] * len(inputs)
        todo = list(range(len(inputs)))
        for attempt in range(_RETRIES + 1):
            futures, deadline = {}, {}
            for i in todo:
                inp = inputs[i]
                if not isinstance(inp, MeasureInput):
                    raise TypeError(f"DaskBuilder.build: expected MeasureInput items, got "
                                    f"{type(inp).__name__}")
                digest, blob = self._task_blob(inp.task)
                recs = [s.to_record() for s in inp.state.transform_steps]
                futures[i] = self._call(self.client.submit, worker_build, digest, blob, recs,
                                        self.timeout, pure=False, retries=0)
                deadline[i] = time.monotonic() + self.timeout + _CLIENT_SLACK
            done = self._gather(futures, deadline)
            todo = []
            for i, v in done.items():
                if isinstance(v, tuple):
                    results[i] = BuildResult(*v)
                elif v == "timeout":
                    results[i] = BuildResult.failed(MeasureErrorNo.BUILD_TIMEOUT, "build result "
                                                    f"not back within {self.timeout} s",
                                                    self.timeout)
                elif attempt < _RETRIES:
                    todo.append(i)
                else:
                    results[i] = BuildResult.failed(MeasureErrorNo.COMPILE_HOST, "build lost "
                                                    f"twice on the cluster: {type(v).__name__}: "
                                                    f"{v}")
            if not todo:
                break
        self.last_seconds = time.perf_counter() - t0
        self.total_seconds += self.last_seconds
        return results


class DaskRunner(_DaskBase, ProgramRunner):
    """Time candidates on the cluster: one measurement at a time per worker (resource
    ``measure``), each in an isolated process there.  Arguments as LocalRunner's."""

    def __init__(self, client_or_address, timeout: float = 10, number: int = 3,
                 repeat: int = 1, min_repeat_ms: float = 0, cooldown_interval: float = 0.0,
                 enable_cpu_cache_flush: bool = False, seed: int = 0,
                 slow_call_seconds: float = 0.1, cutoff: RunCutoff | None = RunCutoff(),
                 connect_timeout: float = 30):
        _DaskBase.__init__(self, client_or_address, timeout, "DaskRunner", connect_timeout)
        self.config = RunConfig(number, repeat, min_repeat_ms, cooldown_interval,
                                bool(enable_cpu_cache_flush), seed, 1e-3, 1e-5,
                                slow_call_seconds)
        self.cutoff = cutoff
        self._best: dict = {}
        self._scattered: dict = {}    # (workload key, input name) -> (array, digest, future)
        self.per_worker: dict = collections.defaultdict(lambda: {"count": 0, "noise": []})
        info = self._call(worker_info, self.client)
        if not any(w.get("resources", {}).get(RESOURCE) for w in info.values()):
            raise ClusterError(f"no Dask worker offers the resource {RESOURCE!r}: start "
                               f"workers with --resources {RESOURCE}=1")

    def run(self, inputs, build_results, verbose: int = 0) -> list:
        t0 = time.perf_counter()
        inputs, build_results = list(inputs), list(build_results)
        if len(inputs) != len(build_results):
            raise ValueError(f"DaskRunner.run: {len(inputs)} inputs but {len(build_results)} "
                             "build results")
        results: list = [None] * len(inputs)
        todo = []
        for i, br in enumerate(build_results):
            if br.error_no != MeasureErrorNo.NO_ERROR:
                results[i] = MeasureResult.failed(br.error_no, br.error_msg, br.time_cost)
            else:
                todo.append(i)
        self._run_all(inputs, build_results, todo, results)
        self.last_seconds = time.perf_counter() - t0
        self.total_seconds += self.last_seconds
        return results

    def _run_all(self, inputs, build_results, todo, results) -> None:
        refused: dict = {i: set() for i in todo}
        lost: collections.Counter = collections.Counter()
        while todo:
            workers = self._workers()
            futures, deadline, limits = {}, {}, {}
            for i in todo:
                inp, br = inputs[i], build_results[i]
                key = f"{inp.task.workload_key}|{inp.task.target}"
                single, timeout, early = run_limits(self.config, self.cutoff, self.timeout,
                                                    self._best.get(key))
                allowed = [w for w in workers if w not in refused[i]]
                futures[i] = self._call(
                    self.client.submit, worker_run, str(inp.task.target), br.obj, br.metas,
                    self.config, single, timeout, self._fixed(inp.task),
                    resources={RESOURCE: 1}, workers=allowed or None,
                    allow_other_workers=False, pure=False, retries=0)
                deadline[i] = time.monotonic() + timeout + _CLIENT_SLACK
                limits[i] = (key, timeout, early)
            done = self._gather(futures, deadline)
            todo = []
            for i, v in done.items():
                again = self._result(i, v, build_results[i], limits[i], refused, lost, workers,
                                     results)
                if again:
                    todo.append(i)

    def _fixed(self, task) -> list:
        """The task inputs for ``worker_run``: ``[position, name, digest, .npy bytes]``,
        the bytes scattered to the cluster once per array (a future stands for them)."""
        out = []
        for k, name, arr in arrays_for(task):
            key = (task.workload_key, name)
            hit = self._scattered.get(key)
            if hit is None or hit[0] is not arr:
                buf = io.BytesIO()
                np.save(buf, arr, allow_pickle=False)
                data = buf.getvalue()
                digest = hashlib.sha1(data).hexdigest()
                future = self._call(self.client.scatter, data, broadcast=False, hash=False)
                hit = self._scattered[key] = (arr, digest, future)
            out.append((k, name, hit[1], hit[2]))
        return out

    def _result(self, i, v, br, limits, refused, lost, workers, results) -> bool:
        """Store candidate ``i``'s result; True if it must be sent again."""
        key, timeout, early = limits
        if isinstance(v, tuple):
            status, costs, err, msg, secs, addr = v
            if status == "refused":
                refused[i].add(addr)
                if set(workers) - refused[i]:
                    return True
                results[i] = MeasureResult.failed(err, f"no worker can run this target; last "
                                                  f"refusal: {msg}", br.time_cost)
                return False
            results[i] = self._measured(key, costs, err, msg, br.time_cost + secs, addr,
                                        timeout, early)
            return False
        if v == "timeout":
            results[i] = MeasureResult.failed(MeasureErrorNo.RUN_TIMEOUT, "result not back "
                                              f"within {timeout} s", br.time_cost + timeout)
            return False
        lost[i] += 1
        if lost[i] <= _RETRIES:
            return True
        results[i] = MeasureResult.failed(MeasureErrorNo.RUNTIME_DEVICE, "measurement lost "
                                          f"twice on the cluster: {type(v).__name__}: {v}",
                                          br.time_cost)
        return False

    def _measured(self, key, costs, err, msg, all_cost, addr, timeout, early):
        if err == MeasureErrorNo.RUN_TIMEOUT and early:
            msg = f"stopped after {timeout:.3g} s {CUTOFF_MARK}: {msg}"
        if err != MeasureErrorNo.NO_ERROR:
            return MeasureResult.failed(err, msg, all_cost)
        mean = sum(costs) / len(costs)
        best = self._best.get(key)
        self._best[key] = mean if best is None else min(best, mean)
        stats = self.per_worker[addr]
        stats["count"] += 1
        if len(costs) > 1 and mean > 0:
            stats["noise"].append(statistics.pstdev(costs) / mean)
        return MeasureResult(costs, err, "", all_cost, time.time())

    def summary(self) -> str:
        """Measured candidates and median noise (std/mean of the repeats) per worker."""
        lines = ["worker                           measured   median noise"]
        for addr, s in sorted(self.per_worker.items()):
            noise = f"{statistics.median(s['noise']):.1%}" if s["noise"] else "n/a"
            lines.append(f"{addr:32s} {s['count']:8d}   {noise:>12s}")
        return "\n".join(lines)


__all__ = ["DaskBuilder", "DaskRunner", "ClusterError", "limit_host_features", "RESOURCE"]
