"""RPCRunner and LocalRPCMeasureContext: time candidates on RPC servers (TVM's names).

Role: ``RPCRunner(key, host, port)`` asks the tracker at ``host:port`` for a server of
``key`` and times each built candidate there (``compiler.rpc``): the object code and its
signature are sent, the deterministic random inputs (the same numbers ``LocalRunner``
uses; task inputs' data instead where a task has them) are uploaded once per session,
and the server times the kernel.  ``LocalRPCMeasureContext`` starts a tracker and one
server on this machine and offers ``.runner`` -- TVM's way of measuring through RPC on
a local device; here it also isolates the runs from the tuner like ``LocalRunner``.

Invariants:
- results are LocalRunner's: a cost per repeat is the median of ``number`` individually
  timed calls; a kernel that crashes the session process is RUNTIME_DEVICE (4), one that
  outlives ``timeout`` (the server's timer ends the session) RUN_TIMEOUT (7), a module
  the server cannot load COMPILE_DEVICE (3); failing to get a session at all is
  RUNTIME_DEVICE naming the tracker and key.  The next candidate gets a fresh session;
- as LocalRunner: a first call of ``slow_call_seconds`` or more is the measurement,
  with a ``RunCutoff`` a candidate far slower than the task's best so far is stopped,
  and ``check_correctness`` compares each candidate's outputs (downloaded) with the
  reference kernel's (run once per task) -- WRONG_ANSWER (5) when they differ;
- ``n_parallel`` sessions measure concurrently (for several remote devices), each
  giving its server back after every candidate; results come back in input order;
- nothing is pickled: only object code, JSON and raw array bytes travel.
"""
from __future__ import annotations

import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from compiler import rpc
from compiler.runtime import empty_aligned, normalize_funcs_meta

from ..checks import check_number
from ..task_inputs import arrays_for
from .measurer import CUTOFF_MARK, BuildResult, MeasureErrorNo, MeasureResult, ProgramRunner
from .repeats import repeat_costs, timed_repeats
from .runner import (
    RunConfig,
    RunCutoff,
    WrongAnswerError,
    _check_comparable,
    _check_outputs,
    _random_array,
    default_reference_func,
    run_limits,
)
from .workers import check_seconds

_REQUEST_TIMEOUT = 60.0      # how long a run waits for a free server of its key


def _inputs(meta, seed: int, fixed) -> list:
    """Host-side arguments of ``meta``: LocalRunner's deterministic random inputs, task
    inputs' data at their positions, zeroed outputs."""
    arrays = []
    for index, p in enumerate(meta.params):
        arr = empty_aligned(p.shape, p.np_dtype)
        if p.written:
            arr.fill(0)
        else:
            _random_array(p.shape, p.np_dtype, np.random.default_rng([seed, index]), arr)
        arrays.append(arr)
    for k, name, data in fixed:
        p = meta.params[k]
        if data.shape != tuple(p.shape) or data.dtype != p.np_dtype:
            raise rpc.RPCError(f"task input {name!r} is {data.shape} {data.dtype}, but the "
                               f"candidate's parameter {p.name!r} is {tuple(p.shape)} "
                               f"{p.np_dtype}")
        arrays[k][...] = data
    return arrays


def _zero_outputs(session, meta, args) -> None:
    session.request({"op": "zero", "handles": [a.handle for p, a in zip(meta.params, args)
                                               if p.written]})


def _outputs(meta, args) -> list:
    """The written arguments downloaded (None for the inputs)."""
    return [a.numpy() if p.written else None for p, a in zip(meta.params, args)]


class _Slot:
    """One session and the arguments it holds (a session per parallel measurement)."""

    def __init__(self):
        self.session = None
        self.args_key = None
        self.args: list = []

    def release(self) -> None:
        """End the session (its arguments go with it)."""
        if self.session is not None:
            self.session.close()
        self.session, self.args_key, self.args = None, None, []


def _more_calls(mod, args, cfg: RunConfig, k: int, calls: int, timeout) -> list:
    """``k`` more figures of ``mod`` on its server, each the seconds per call of a loop
    of ``calls`` calls (no warm-up: the candidate's first call was one)."""
    timer = mod.time_evaluator(mod.entry_name, number=calls, repeat=k, warmup=False,
                               enable_cpu_cache_flush=cfg.enable_cpu_cache_flush,
                               timeout=timeout)
    return list(timer(*args).results)


class RPCRunner(ProgramRunner):
    """TVM's ``auto_scheduler.RPCRunner`` (see the module doc).

    ``number``/``repeat``/``min_repeat_ms``/``enable_cpu_cache_flush`` go to the remote
    ``time_evaluator``; ``cooldown_interval`` seconds are slept before each candidate;
    ``timeout`` bounds one candidate's run on the server; ``priority`` orders this
    runner's requests at the tracker; ``device`` is TVM's device index (only the CPU,
    0); ``seed`` picks the random inputs; ``request_timeout`` bounds the wait for a free
    server.  ``slow_call_seconds`` and ``cutoff`` work as LocalRunner's: a first call
    that slow is the measurement, and a candidate far slower than the task's best so far
    is stopped (the server's timer ends its session).  So do ``check_correctness``,
    ``reference_func``, ``rtol`` and ``atol``: the reference runs once per task on the
    server, and each candidate's outputs are downloaded and compared with its."""

    def __init__(self, key: str, host: str, port: int, priority: int = 1,
                 n_parallel: int = 1, timeout: float = 10, number: int = 3, repeat: int = 1,
                 min_repeat_ms: float = 100, cooldown_interval: float = 0.0,
                 enable_cpu_cache_flush: bool = False, device: int = 0, seed: int = 0,
                 request_timeout: float = _REQUEST_TIMEOUT, slow_call_seconds: float = 0.1,
                 cutoff: RunCutoff | None = RunCutoff(), check_correctness: bool = False,
                 reference_func=None, rtol: float = 1e-3, atol: float = 1e-5):
        if not isinstance(key, str) or not key:
            raise ValueError(f"RPCRunner key {key!r}: expected the non-empty key the "
                             "servers registered under")
        self.key, self.host, self.port = key, host, port
        self.priority = int(priority)
        check_number(n_parallel, "RPCRunner n_parallel", 1, integer=True)
        self.n_parallel = n_parallel
        # TVM's device index: kernels here run on the server's CPU, which is device 0
        self.device = check_number(device, "RPCRunner device", 0, integer=True, high=0)
        self.timeout = check_seconds(timeout, "RPCRunner timeout")
        self.request_timeout = check_seconds(request_timeout, "RPCRunner request_timeout")
        self.config = RunConfig(number, repeat, min_repeat_ms, cooldown_interval,
                                bool(enable_cpu_cache_flush), seed, rtol, atol,
                                slow_call_seconds)
        self.check_correctness = bool(check_correctness)
        self.reference_func = default_reference_func if reference_func is None \
            else reference_func
        if not callable(self.reference_func):
            raise TypeError(f"RPCRunner reference_func {reference_func!r} is not callable")
        self._references: dict = {}  # task key -> reference outputs, or None: unusable
        if cutoff is not None and not isinstance(cutoff, RunCutoff):
            raise TypeError(f"RPCRunner cutoff {cutoff!r}: expected a RunCutoff or None")
        self.cutoff = cutoff
        self._best: dict = {}        # task key -> lowest valid mean cost measured here
        self._tracker: rpc.TrackerSession | None = None
        self._lock = threading.Lock()
        self._slots = [_Slot() for _ in range(n_parallel)]
        self.last_seconds = self.total_seconds = 0.0

    @property
    def one_at_a_time(self) -> bool:
        """One device: log each candidate as soon as it is timed (as LocalRunner)."""
        return self.n_parallel == 1

    def run(self, inputs, build_results, verbose: int = 0) -> list:
        t0 = time.perf_counter()
        inputs, build_results = list(inputs), list(build_results)
        if len(inputs) != len(build_results):
            raise ValueError(f"RPCRunner.run: {len(inputs)} inputs but "
                             f"{len(build_results)} build results")
        for br in build_results:
            if not isinstance(br, BuildResult):
                raise TypeError(f"RPCRunner.run: expected BuildResult items, got "
                                f"{type(br).__name__}")
        if self.n_parallel == 1 or len(inputs) == 1:
            results = [self._run_one(self._slots[0], inp, br)
                       for inp, br in zip(inputs, build_results)]
        else:
            results = self._run_parallel(inputs, build_results)
        if verbose >= 1 and results:
            print("".join("*" if r.is_valid else "E" for r in results), flush=True)
        self.last_seconds = time.perf_counter() - t0
        self.total_seconds += self.last_seconds
        return results

    def _run_parallel(self, inputs, build_results) -> list:
        free = list(self._slots)
        cond = threading.Condition()

        def job(pair):
            with cond:
                cond.wait_for(lambda: free)
                slot = free.pop()
            try:
                return self._run_one(slot, *pair)
            finally:
                # give the server back, as TVM's runner does after every measurement:
                # with more parallel slots than servers, a kept session would starve
                # the other slots until their request timed out
                slot.release()
                with cond:
                    free.append(slot)
                    cond.notify()
        with ThreadPoolExecutor(self.n_parallel) as pool:
            return list(pool.map(job, zip(inputs, build_results)))

    # ------------------------------------------------------------------ one candidate
    def _session(self, slot: _Slot):
        if slot.session is not None and slot.session.is_open:
            return slot.session
        with self._lock:
            if self._tracker is None:
                self._tracker = rpc.connect_tracker(self.host, self.port)
            tracker = self._tracker
        try:
            slot.session = tracker.request(self.key, self.priority,
                                           timeout=self.request_timeout)
        except rpc.RPCError:
            with self._lock:
                self._tracker = None
            raise
        slot.args_key, slot.args = None, []
        return slot.session

    def _run_one(self, slot: _Slot, inp, br: BuildResult) -> MeasureResult:
        if br.error_no != MeasureErrorNo.NO_ERROR:
            return MeasureResult.failed(br.error_no, br.error_msg, br.time_cost)
        t0 = time.perf_counter()
        if self.config.cooldown_interval > 0:
            time.sleep(self.config.cooldown_interval)
        task_key = f"{inp.task.workload_key}|{inp.task.target}"
        reference = None
        try:
            session = self._session(slot)
            if self.check_correctness:
                _check_comparable(inp.task)
                reference = self._reference(slot, session, inp.task, task_key)
                session = self._session(slot)      # a crashing reference ends its session
        except rpc.RPCError as e:
            return MeasureResult.failed(MeasureErrorNo.RUNTIME_DEVICE, f"no RPC session "
                                        f"with key {self.key!r} from the tracker at "
                                        f"{self.host}:{self.port}: {e}", br.time_cost)
        with self._lock:
            best = self._best.get(task_key)
        limits = run_limits(self.config, self.cutoff, self.timeout, best)
        got = self._time(slot, session, inp.task, br, reference, limits)
        if isinstance(got, WrongAnswerError):
            return MeasureResult.failed(MeasureErrorNo.WRONG_ANSWER, str(got),
                                        br.time_cost + time.perf_counter() - t0)
        if isinstance(got, tuple):
            return self._failure(slot, got + (limits[1], limits[2], best),
                                 br.time_cost + time.perf_counter() - t0)
        # a list of repeats (lists of calls), or a single shot's one figure
        costs = repeat_costs(got, self.config.call_mean) \
            if got and isinstance(got[0], list) else got
        mean = sum(costs) / len(costs)
        with self._lock:
            cur = self._best.get(task_key)
            self._best[task_key] = mean if cur is None else min(cur, mean)
        return MeasureResult(costs, MeasureErrorNo.NO_ERROR, "",
                             br.time_cost + time.perf_counter() - t0, time.time())

    def _time(self, slot: _Slot, session, task, br: BuildResult, reference, limits):
        """The timed calls of one candidate on ``session``; a WrongAnswerError when its
        outputs differ from ``reference``; ``(error, stage, seconds running)`` when the
        session failed it."""
        single_shot, timeout, _early = limits
        stage, t_run = "load", time.perf_counter()
        try:
            metas = normalize_funcs_meta(br.metas)
            mod = session.load_module(br.obj, metas)
            stage = "run"
            args = self._arguments(slot, session, metas[0], task)
            cfg = self.config
            timer = mod.time_evaluator(mod.entry_name, number=1,
                                       repeat=cfg.number * cfg.repeat,
                                       enable_cpu_cache_flush=cfg.enable_cpu_cache_flush,
                                       timeout=timeout, single_shot=single_shot)
            if reference is not None:
                _zero_outputs(session, metas[0], args)
            t_run = time.perf_counter()
            calls = list(timer(*args).results)
            if len(calls) >= cfg.number * cfg.repeat:
                # not a single shot: the repeats, topped up to min_repeat_ms on the
                # server (repeats.py)
                calls = timed_repeats(calls, cfg.number, 1, cfg.repeat, cfg.min_repeat_ms,
                                      lambda k, m: _more_calls(mod, args, cfg, k, m, timeout))
            session.free(mod.handle)
            if reference is not None:
                _check_outputs(metas[0], _outputs(metas[0], args), reference, cfg)
        except WrongAnswerError as e:
            return e
        except rpc.RPCError as e:
            return e, stage, time.perf_counter() - t_run
        return calls

    def _reference(self, slot: _Slot, session, task, task_key: str):
        """The reference kernel's outputs for ``task`` (run once, on the server, with the
        candidates' inputs); None, after a warning, when it cannot be had."""
        if task_key in self._references:
            return self._references[task_key]
        outs = None
        try:
            obj, metas = self.reference_func(task)
            metas = normalize_funcs_meta(metas)
            mod = session.load_module(obj, metas)
            args = self._arguments(slot, session, metas[0], task)
            _zero_outputs(session, metas[0], args)
            mod(*args, timeout=self.timeout)
            outs = _outputs(metas[0], args)
            session.free(mod.handle)
        except Exception as e:     # noqa: BLE001 - any failure: outputs are not checked
            if isinstance(e, rpc.RPCConnectionClosed):
                slot.session = None
            warnings.warn(f"check_correctness: the reference of {task_key} failed on the RPC "
                          f"server ({type(e).__name__}: {e}); its outputs are not checked",
                          stacklevel=3)
        self._references[task_key] = outs
        return outs

    def _arguments(self, slot: _Slot, session, meta, task) -> list:
        fixed = arrays_for(task)
        key = (self.config.seed, tuple((p.shape, p.dtype, p.written) for p in meta.params),
               tuple((k, name, id(a)) for k, name, a in fixed))
        if slot.args_key != key:
            if slot.args:
                session.free(*slot.args)
            slot.args, slot.args_key = [], None
            slot.args = [session.array(a) for a in _inputs(meta, self.config.seed, fixed)]
            slot.args_key = key
        return slot.args

    def _failure(self, slot: _Slot, failed, all_cost: float) -> MeasureResult:
        err, stage, elapsed, timeout, early, best = failed
        closed = isinstance(err, rpc.RPCConnectionClosed) or not (
            slot.session is not None and slot.session.is_open)
        if not closed:
            code = MeasureErrorNo.COMPILE_DEVICE if stage == "load" else \
                MeasureErrorNo.RUNTIME_DEVICE
            return MeasureResult.failed(code, f"{err}", all_cost)
        slot.session = None
        if stage == "run" and elapsed >= timeout and early:
            return MeasureResult.failed(
                MeasureErrorNo.RUN_TIMEOUT, f"stopped after {elapsed:.3g} s {CUTOFF_MARK}: "
                f"slower than {getattr(self.cutoff, 'kill_ratio', 0):g}x the best mean cost "
                f"measured for this task so far ({best:.3g} s); the RPC session was ended",
                all_cost)
        if stage == "run" and elapsed >= timeout:
            return MeasureResult.failed(
                MeasureErrorNo.RUN_TIMEOUT, f"run did not finish within the timeout of "
                f"{self.timeout} s on the RPC server (the kernel may hang); the session "
                "was ended", all_cost)
        return MeasureResult.failed(MeasureErrorNo.RUNTIME_DEVICE, f"{err}", all_cost)

    def close(self) -> None:
        """End the sessions (the next ``run`` opens new ones)."""
        for slot in self._slots:
            slot.release()
        with self._lock:
            if self._tracker is not None:
                self._tracker.close()
                self._tracker = None

    def __enter__(self) -> RPCRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalRPCMeasureContext:
    """TVM's ``auto_scheduler.LocalRPCMeasureContext``: a tracker and one server on this
    machine, and ``runner``, an RPCRunner measuring through them.  ``del`` it (or call
    ``close``) to stop both; they also die with this process."""

    def __init__(self, priority: int = 1, n_parallel: int = 1, timeout: float = 10,
                 number: int = 3, repeat: int = 1, min_repeat_ms: float = 0,
                 cooldown_interval: float = 0.0, enable_cpu_cache_flush: bool = False,
                 device: int = 0, seed: int = 0):
        key = "local-rpc-measure"
        self.tracker = rpc.Tracker(host="127.0.0.1", port=9000, port_end=10000, silent=True)
        self.server = rpc.Server(host="127.0.0.1", port=self.tracker.port + 1,
                                 port_end=min(self.tracker.port + 1001, 65536),
                                 tracker_addr=("127.0.0.1", self.tracker.port),
                                 key=key, silent=True)
        _wait_registered(self.tracker.port, key, n=1)
        self.runner = RPCRunner(key, "127.0.0.1", self.tracker.port, priority, n_parallel,
                                timeout, number, repeat, min_repeat_ms, cooldown_interval,
                                enable_cpu_cache_flush, device, seed)

    def close(self) -> None:
        runner = getattr(self, "runner", None)
        if runner is not None:
            runner.close()
        for part in (getattr(self, "server", None), getattr(self, "tracker", None)):
            if part is not None:
                part.terminate()

    def __enter__(self) -> LocalRPCMeasureContext:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:   # noqa: BLE001 - interpreter shutdown
            pass


def _wait_registered(port: int, key: str, n: int, seconds: float = 30.0) -> None:
    tracker = rpc.connect_tracker("127.0.0.1", port)
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if sum(s["key"] == key for s in tracker.summary()["servers"]) >= n:
                return
            time.sleep(0.02)
        raise rpc.RPCError(f"the local RPC server did not register with the tracker on "
                           f"port {port} within {seconds} s")
    finally:
        tracker.close()
