"""Measurement: LocalBuilder, LocalRunner, ProgramMeasurer, RecordToFile.

Uses a fake task whose ``apply_steps_from_state`` returns a real TE schedule of a small
matmul (so builds and runs are real), and planted build functions that produce crashing,
hanging, aborting, slow or wrong kernels.  Builder and runner are shared per module;
the planted timeouts keep the file well under a minute.
"""
import gc
import json
import os
import signal
import threading
import time
from dataclasses import dataclass

import numpy as np
import pytest
from planted_kernels import CRASH_BODY, HANG_BODY, hand_kernel, slow_body

import autosched.measure.measurer as measure_mod
import autosched.measure.runner as runner_mod
import compiler
from autosched.measure import (
    BuildResult,
    MeasureErrorNo,
    MeasureInput,
    MeasureResult,
    ProgramMeasurer,
    RecordToFile,
    was_cut_off,
)
from autosched.measure.builder import BuildCutoff, LocalBuilder, default_build_func
from autosched.measure.repeats import MAX_SAMPLES_PER_REPEAT
from autosched.measure.runner import LocalRunner, RunCutoff, _arguments
from autosched.measure.workers import WorkerPool, pause_gc_until_replied
from compiler import te
from compiler.runtime import FuncMeta, ParamMeta, parse_target
from records import FAILURE_COST, MeasureInputRecord, MeasureResultRecord, Record, load_records

N = 32
BUILD_TIMEOUT = 4.0
RUN_TIMEOUT = 2.0


@dataclass(frozen=True)
class FakeState:
    tile: int = 1
    parallel: bool = False
    invalid: bool = False
    plant: str = ""            # "", "crash", "hang", "sleep", "abort", "wrong", "raise"


class FakeDAG:
    """The two ComputeDAG members the measurement code uses, on a real matmul."""

    def __init__(self, n: int):
        self.n = n
        self.flop_ct = 2.0 * n ** 3
        self.init_state = FakeState()

    def apply_steps_from_state(self, state, transpose_b: bool = False):
        n = self.n
        A = te.placeholder((n, n), name="A")
        B = te.placeholder((n, n), name="B")
        k = te.reduce_axis((0, n), name="k")
        if transpose_b:
            C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
        else:
            C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
        s = te.create_schedule(C.op)
        if state.invalid:
            s[C].split(C.op.axis[0], factor=0)        # raises ScheduleError
        if state.tile > 1:
            xo, _xi = s[C].split(C.op.axis[0], factor=state.tile)
            if state.parallel:
                s[C].parallel(xo)
        return s, [A, B, C]


class FakeTask:
    def __init__(self, n: int = N):
        self.workload_key = json.dumps(["fake_matmul", n])
        self.target = parse_target("llvm")
        self.hardware_params = (2, 64, 64, 0, 0, 0, 0, 0)
        self.compute_dag = FakeDAG(n)


def _hand_kernel(name: str, body: str):
    return hand_kernel(name, body, N)


SLOW_BODY = slow_body(200000000)


def planted_build(inp):
    """Module-level build_func: plants a bad kernel when the state asks for one."""
    plant = inp.state.plant
    if plant == "crash":
        return _hand_kernel("crash", CRASH_BODY)
    if plant == "hang":
        return _hand_kernel("hang", HANG_BODY)
    if plant == "slow":
        return _hand_kernel("slow", SLOW_BODY)
    if plant == "sleep":
        time.sleep(60)
    if plant == "abort":
        os.abort()
    if plant == "raise":
        raise RuntimeError("planted codegen failure")
    if plant == "wrong":
        sch, args = inp.task.compute_dag.apply_steps_from_state(inp.state, transpose_b=True)
        func = compiler.lower(sch, args, name="wrong")
        obj, metas, _ = compiler.build_object(func, inp.task.target)
        return obj, metas
    return default_build_func(inp)


def raising_job(x):
    if x == 2:
        raise KeyError("two")
    return x * 10


def gc_pausing_job(replies=1):
    return pause_gc_until_replied(replies), gc.isenabled()


@pytest.fixture(scope="module")
def task():
    return FakeTask()


@pytest.fixture(scope="module")
def builder():
    with LocalBuilder(timeout=BUILD_TIMEOUT, n_parallel=2, build_func=planted_build) as b:
        yield b


@pytest.fixture(scope="module")
def runner():
    # No cut-off: these tests plant kernels against the hard timeout.
    with LocalRunner(timeout=RUN_TIMEOUT, number=2, repeat=2, cutoff=None) as r:
        r.start()
        yield r


def _inputs(task, *states):
    return [MeasureInput(task, s) for s in states]


def test_data_classes_validate_and_fail_with_failure_cost():
    res = MeasureResult.failed(MeasureErrorNo.RUNTIME_DEVICE, "boom", 0.5)
    assert res.costs == [FAILURE_COST] and res.error_no == 4 and not res.is_valid
    assert res.mean_cost == FAILURE_COST
    ok = MeasureResult([1e-3, 3e-3], 0, "", 0.1, 1.0)
    assert ok.is_valid and ok.mean_cost == pytest.approx(2e-3)
    with pytest.raises(ValueError, match="at least one cost"):
        MeasureResult([], 0, "", 0.0, 0.0)
    zero = MeasureResult([0.0, 1e-3], 0, "", 0.1, 1.0)     # the log refuses a zero cost
    assert zero.error_no == MeasureErrorNo.RUNTIME_DEVICE and not zero.is_valid
    assert zero.error_msg.startswith("timer returned 0.0 s: nothing was measured")
    with pytest.raises(ValueError,
                       match=r"MeasureResult error_no=9: expected an int >= 0 and <= 8"):
        MeasureResult([1.0], 9, "", 0.0, 0.0)
    with pytest.raises(ValueError, match="needs object bytes"):
        BuildResult(None, None, 0, "", 0.0)
    assert MeasureErrorNo.RUN_TIMEOUT == 7 and MeasureErrorNo.UNKNOWN_ERROR == 8


def test_build_and_run_real_matmul(task, builder, runner):
    inputs = _inputs(task, FakeState(), FakeState(tile=4), FakeState(tile=8, parallel=True))
    brs = builder.build(inputs)
    assert [b.error_no for b in brs] == [0, 0, 0], [b.error_msg for b in brs]
    assert all(isinstance(b.obj, bytes) and b.metas and b.time_cost > 0 for b in brs)
    results = runner.run(inputs, brs)
    assert [r.error_no for r in results] == [0, 0, 0], [r.error_msg for r in results]
    for r, b in zip(results, brs):
        assert len(r.costs) == 2 and all(c > 0 for c in r.costs)
        assert r.all_cost >= b.time_cost and r.timestamp > 1e9
    assert builder.last_seconds > 0 and runner.last_seconds > 0


def test_instantiation_and_compile_errors_do_not_stop_the_batch(task, builder):
    inputs = _inputs(task, FakeState(tile=4), FakeState(invalid=True),
                     FakeState(plant="raise"), FakeState(tile=2))
    brs = builder.build(inputs)
    assert [b.error_no for b in brs] == [0, 1, 2, 0]
    assert "ScheduleError" in brs[1].error_msg and "factor must be a positive" in \
        brs[1].error_msg
    assert "planted codegen failure" in brs[2].error_msg
    assert brs[1].obj is None and brs[1].metas is None


def test_build_timeout_and_worker_death(task, builder):
    inputs = _inputs(task, FakeState(plant="sleep"), FakeState(plant="abort"),
                     FakeState(tile=4))
    t0 = time.perf_counter()
    brs = builder.build(inputs)
    assert time.perf_counter() - t0 < BUILD_TIMEOUT + 10
    assert [b.error_no for b in brs] == [MeasureErrorNo.BUILD_TIMEOUT,
                                         MeasureErrorNo.COMPILE_HOST, 0]
    assert "timeout" in brs[0].error_msg and brs[0].time_cost == BUILD_TIMEOUT
    assert "SIGABRT" in brs[1].error_msg
    assert builder.build(_inputs(task, FakeState(tile=2)))[0].error_no == 0


def test_crashing_kernel_is_runtime_error_and_next_candidate_runs(task, builder, runner):
    inputs = _inputs(task, FakeState(plant="crash"), FakeState(tile=4))
    brs = builder.build(inputs)
    assert [b.error_no for b in brs] == [0, 0]
    results = runner.run(inputs, brs)
    assert [r.error_no for r in results] == [MeasureErrorNo.RUNTIME_DEVICE, 0]
    assert "SIGSEGV" in results[0].error_msg and results[0].costs == [FAILURE_COST]
    assert results[1].costs[0] > 0


def test_hanging_kernel_is_run_timeout_and_next_candidate_runs(task, builder, runner):
    inputs = _inputs(task, FakeState(plant="hang"), FakeState(tile=8))
    brs = builder.build(inputs)
    t0 = time.perf_counter()
    results = runner.run(inputs, brs)
    assert time.perf_counter() - t0 < RUN_TIMEOUT + 10
    assert [r.error_no for r in results] == [MeasureErrorNo.RUN_TIMEOUT, 0]
    assert "timeout" in results[0].error_msg


def test_build_failures_pass_through_the_runner(task, runner):
    inputs = _inputs(task, FakeState(), FakeState())
    brs = [BuildResult.failed(MeasureErrorNo.INSTANTIATION_ERROR, "bad steps", 0.25),
           BuildResult.failed(MeasureErrorNo.BUILD_TIMEOUT, "slow", 4.0)]
    results = runner.run(inputs, brs)
    assert [(r.error_no, r.error_msg, r.all_cost) for r in results] == [
        (1, "bad steps", 0.25), (6, "slow", 4.0)]
    with pytest.raises(ValueError, match="2 inputs but 1 build results"):
        runner.run(inputs, brs[:1])


def test_check_correctness_flags_a_wrong_kernel(task, builder):
    inputs = _inputs(task, FakeState(tile=4), FakeState(plant="wrong"),
                     FakeState(tile=8, parallel=True))
    brs = builder.build(inputs)
    with LocalRunner(timeout=RUN_TIMEOUT, number=1, check_correctness=True) as checker:
        results = checker.run(inputs, brs)
    assert [r.error_no for r in results] == [0, MeasureErrorNo.WRONG_ANSWER, 0]
    assert "differs from the reference" in results[1].error_msg


def _fake_encode_record(inp, res):
    steps = [["SP", 0, 0, N, [inp.state.tile], 1]] if inp.state.tile > 1 else []
    return Record(MeasureInputRecord(inp.task.workload_key, str(inp.task.target),
                                     inp.task.hardware_params, steps=steps),
                  MeasureResultRecord(res.costs, res.error_no, res.all_cost, res.timestamp))


def test_program_measurer_tracks_best_and_logs_every_measurement(task, builder, runner,
                                                                 tmp_path, monkeypatch):
    monkeypatch.setattr(measure_mod.serialize, "encode_record", _fake_encode_record)
    log = tmp_path / "log.json"
    seen = []
    measurer = ProgramMeasurer(builder, runner, [RecordToFile(log),
                                                 lambda p, i, r: seen.append(len(r))],
                               verbose=0, batch_size=2)
    inputs = _inputs(task, FakeState(tile=4), FakeState(invalid=True),
                     FakeState(tile=8, parallel=True))
    results = measurer.measure(task, "policy", inputs)
    assert [r.error_no for r in results] == [0, 1, 0]
    # LocalRunner times one candidate at a time, so each is logged as soon as it is timed
    assert seen == [1, 1, 1]
    assert measurer.ct == 3 and measurer.error_ct == 1
    best = min(r.mean_cost for r in results)
    assert measurer.best_cost[task.workload_key] == best
    assert measurer.best_state[task.workload_key] is inputs[
        [r.mean_cost for r in results].index(best)].state
    assert measurer.last_build_seconds > 0 and measurer.last_run_seconds > 0
    assert measurer.total_build_seconds == measurer.last_build_seconds
    lines = log.read_text().splitlines()
    assert len(lines) == 3
    records = list(load_records(log, strict=True))
    assert [r.result.error_no for r in records] == [0, 1, 0]
    assert records[1].result.costs == (FAILURE_COST,)


@pytest.fixture
def ctrl_c_raises():
    """Python's own SIGINT handler for the test: a process started in the background by
    a non-interactive shell (``cmd &``, ``nohup``) inherits SIGINT ignored, and Python
    then leaves it ignored, so a Ctrl-C could never arrive."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_ctrl_c_kills_busy_workers_and_the_builder_recovers(task, builder, ctrl_c_raises):
    main = threading.main_thread().ident
    timer = threading.Timer(0.5, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        builder.build(_inputs(task, FakeState(plant="sleep"), FakeState(plant="sleep")))
    assert time.perf_counter() - t0 < BUILD_TIMEOUT
    timer.join()
    assert [b.error_no for b in builder.build(_inputs(task, FakeState(tile=4)))] == [0]


def test_a_job_may_pause_the_collector_until_its_reply_is_sent():
    assert pause_gc_until_replied() is False and gc.isenabled()    # not in a worker
    with WorkerPool(1, "test-gc") as pool:
        paused = pool.map(gc_pausing_job, [()], timeout=30)[0]
        after = pool.map(gc.isenabled, [()], timeout=30)[0]
    assert (paused.status, paused.value) == ("ok", (True, False))
    assert (after.status, after.value) == ("ok", True)     # resumed once the reply went


def test_a_job_may_keep_the_collector_paused_through_the_next_jobs_reply():
    with WorkerPool(1, "test-gc2") as pool:
        first = pool.map(gc_pausing_job, [(2,)], timeout=30)[0]
        between = pool.map(gc.isenabled, [()], timeout=30)[0]
        after = pool.map(gc.isenabled, [()], timeout=30)[0]
        # a job asking for the pause while it holds: True, and it ends after its reply
        held = pool.map(gc_pausing_job, [(2,), ()], timeout=30)
        last = pool.map(gc.isenabled, [()], timeout=30)[0]
    assert first.value == (True, False)
    assert (between.value, after.value) == (False, True)
    assert [o.value for o in held] == [(True, False), (True, False)]
    assert last.value is True


def test_worker_pool_recycles_workers_after_max_jobs():
    with WorkerPool(1, "test-recycle", max_jobs_per_worker=2) as pool:
        pids = [o.value for o in pool.map(os.getpid, [()] * 5, timeout=30)]
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4]
    assert pool.starts == 3


def test_worker_pool_map_each_runs_once_in_every_worker():
    with WorkerPool(3, "test-each") as pool:
        pids = [o.value for o in pool.map_each(os.getpid, (), timeout=30)]
        assert len(set(pids)) == 3
        # the same processes run later jobs
        later = {o.value for o in pool.map(os.getpid, [()] * 6, timeout=30)}
        assert later <= set(pids)
        with pytest.raises(ValueError, match="WorkerPool.map_each timeout"):
            pool.map_each(os.getpid, (), timeout=0)


def test_worker_pool_map_pinned_gives_job_i_to_worker_i():
    with WorkerPool(3, "test-pinned") as pool:
        pids = [o.value for o in pool.map_each(os.getpid, (), timeout=30)]
        again = pool.map_pinned(os.getpid, [(), None, ()], timeout=30)
        assert again[1] is None
        assert [again[0].value, again[2].value] == [pids[0], pids[2]]
        with pytest.raises(ValueError, match=r"WorkerPool.map_pinned: 4 jobs for 3 "
                                             r"workers \(expected at most one job per"):
            pool.map_pinned(os.getpid, [()] * 4, timeout=30)


def test_worker_pool_reports_exceptions_in_order():
    with WorkerPool(2, "test-pool") as pool:
        outcomes = pool.map(raising_job, [(1,), (2,), (3,)], timeout=30)
    assert [o.status for o in outcomes] == ["ok", "error", "ok"]
    assert outcomes[0].value == 10 and outcomes[2].value == 30
    assert "KeyError" in outcomes[1].value


def test_bad_configuration_is_rejected():
    with pytest.raises(TypeError, match="module-level"):
        LocalBuilder(build_func=lambda inp: None)
    with pytest.raises(ValueError, match="timeout"):
        LocalBuilder(timeout=0)
    with pytest.raises(ValueError, match="n_parallel"):
        LocalBuilder(n_parallel=0)
    with pytest.raises(ValueError, match="number=0"):
        LocalRunner(number=0)
    with pytest.raises(ValueError, match="cooldown_interval"):
        LocalRunner(cooldown_interval=-1)
    with pytest.raises(TypeError, match="MeasureInput"):
        LocalBuilder(n_parallel=1).build([object()])
    with pytest.raises(TypeError, match="filename"):
        RecordToFile(3)
    with pytest.raises(ValueError, match="build_func='ndk': Android's NDK is not supported"):
        LocalBuilder(build_func="ndk")
    with LocalBuilder(n_parallel=1, build_func="default") as b:    # TVM's spelling
        assert b.build_func is default_build_func


def test_runner_inputs_are_deterministic():
    meta = FuncMeta("f", (ParamMeta("A", (4, 4), "float32", False),
                          ParamMeta("C", (4,), "int32", True)))
    first = [a.copy() for a in _arguments(meta, 0)]
    assert np.array_equal(_arguments(meta, 0)[0], first[0])
    assert not _arguments(meta, 0)[1].any()
    assert not np.array_equal(_arguments(meta, 1)[0], first[0])


def test_slow_candidate_is_timed_once(task, builder):
    """A first call slower than slow_call_seconds is the measurement (no more repeats)."""
    inputs = _inputs(task, FakeState(plant="slow"), FakeState(tile=4))
    brs = builder.build(inputs)
    with LocalRunner(timeout=RUN_TIMEOUT, number=2, repeat=2, slow_call_seconds=0.02) as r:
        slow, fast = r.run(inputs, brs)
    assert slow.error_no == 0 and len(slow.costs) == 1 and slow.costs[0] >= 0.02
    assert fast.error_no == 0 and len(fast.costs) == 2


def test_an_idle_runner_measures_its_next_candidate_twice(task, builder, monkeypatch):
    """After an idle spell (builds) the worker's first measurement is slow for small
    kernels: that candidate is measured twice and the second figure kept.  Candidates
    right after it, failures and kernels over _WARM_MAX_COST are measured once."""
    inputs = _inputs(task, FakeState(tile=4), FakeState(tile=8), FakeState(plant="crash"))
    brs = builder.build(inputs)
    with LocalRunner(timeout=RUN_TIMEOUT, number=2, cutoff=None) as r:
        jobs = []
        real_map = r.pool.map

        def counting_map(fn, items, timeout):
            jobs.extend(items)
            return real_map(fn, items, timeout)

        monkeypatch.setattr(r.pool, "map", counting_map)
        results = r.run(inputs[:2], brs[:2])           # a fresh worker is idle too
        assert [x.error_no for x in results] == [0, 0]
        assert r.warmups == 1 and len(jobs) == 3
        r.run(inputs[:1], brs[:1])                       # right after: no warm-up
        assert r.warmups == 1 and len(jobs) == 4
        time.sleep(2 * runner_mod._WARM_AFTER_IDLE_S)
        r.run(inputs[:1], brs[:1])
        assert r.warmups == 2 and len(jobs) == 6
        time.sleep(2 * runner_mod._WARM_AFTER_IDLE_S)
        failed = r.run(inputs[2:], brs[2:])[0]          # a failure is not repeated
        assert failed.error_no == MeasureErrorNo.RUNTIME_DEVICE
        assert r.warmups == 2 and len(jobs) == 7
        monkeypatch.setattr(runner_mod, "_WARM_MAX_COST", 0.0)
        time.sleep(2 * runner_mod._WARM_AFTER_IDLE_S)
        r.run(inputs[:1], brs[:1])                       # over the cap: measured once
        assert r.warmups == 2 and len(jobs) == 8


def test_runner_cutoff_kills_a_kernel_far_slower_than_the_best(task, builder):
    """Before any valid measurement only the hard timeout applies; after one, a call
    over kill_ratio x the best is stopped and the next candidate runs."""
    inputs = _inputs(task, FakeState(plant="hang"), FakeState(tile=4),
                     FakeState(plant="hang"), FakeState(tile=8))
    brs = builder.build(inputs)
    stop = RunCutoff(kill_ratio=20, kill_floor=0.05)
    with LocalRunner(timeout=RUN_TIMEOUT, number=2, cutoff=stop) as r:
        results = r.run(inputs, brs)
    assert [x.error_no for x in results] == [7, 0, 7, 0]
    assert "within the timeout of 2.0 s" in results[0].error_msg
    assert results[0].all_cost >= RUN_TIMEOUT
    assert results[2].error_msg.startswith("stopped after ")
    assert "(cut off): slower than 20x the best mean cost" in results[2].error_msg
    assert was_cut_off(results[2]) and not was_cut_off(results[0])
    assert results[2].all_cost - brs[2].time_cost < 1.0
    assert r.pool.starts == 3                  # the first worker and two replacements


def test_runner_cutoff_times_a_slow_candidate_once(task, builder):
    inputs = _inputs(task, FakeState(tile=4), FakeState(plant="slow"), FakeState(tile=8))
    brs = builder.build(inputs)
    stop = RunCutoff(single_shot_ratio=2, single_shot_floor=0.001, kill_floor=30)
    with LocalRunner(timeout=RUN_TIMEOUT * 5, number=2, repeat=2, slow_call_seconds=10,
                     cutoff=stop) as r:
        fast, slow, fast2 = r.run(inputs, brs)
    assert fast.error_no == slow.error_no == fast2.error_no == 0
    assert len(fast.costs) == 2 and len(fast2.costs) == 2
    assert len(slow.costs) == 1 and slow.costs[0] > 2 * fast.mean_cost


def test_builder_cutoff_cuts_a_build_far_slower_than_the_median(task):
    with LocalBuilder(timeout=BUILD_TIMEOUT * 5, n_parallel=2, build_func=planted_build,
                      cutoff=BuildCutoff(ratio=2, floor=1.0, warmup=2)) as b:
        warm = b.build(_inputs(task, FakeState(tile=2), FakeState(tile=4)))
        t0 = time.perf_counter()
        brs = b.build(_inputs(task, FakeState(plant="sleep"), FakeState(tile=8)))
        elapsed = time.perf_counter() - t0
    assert [x.error_no for x in warm + brs] == [0, 0, MeasureErrorNo.BUILD_TIMEOUT, 0]
    assert brs[0].error_msg.startswith("build stopped after 1 s (cut off): over 2x the "
                                       "median build time")
    assert was_cut_off(brs[0])
    assert brs[0].time_cost == 1.0 and elapsed < BUILD_TIMEOUT


def test_worker_pool_forks_workers_from_the_fork_server():
    """Workers are children of the fork server (which imported the package already), not
    of the tuner; a dead worker is replaced and the next job runs."""
    with WorkerPool(1, "test-restart") as pool:
        first = pool.map(os.getpid, [()], 30)[0].value
        parent = pool.map(os.getppid, [()], 30)[0].value
        outcomes = pool.map(os._exit, [(3,), ()], 30)
        after = pool.map(os.getpid, [()], 30)[0].value
    assert parent != os.getpid()
    assert [o.status for o in outcomes] == ["died", "error"]   # os._exit() needs a code
    assert "exited with code 3" in outcomes[0].value
    assert first != after and pool.starts == 2


def test_cutoff_configurations_are_validated():
    with pytest.raises(ValueError, match=r"RunCutoff kill_ratio=0.5: expected a finite "
                                         r"number >= 1"):
        RunCutoff(kill_ratio=0.5)
    with pytest.raises(ValueError, match="RunCutoff single_shot_floor=-1"):
        RunCutoff(single_shot_floor=-1)
    with pytest.raises(ValueError, match=r"BuildCutoff floor=0: expected a finite"):
        BuildCutoff(floor=0)
    with pytest.raises(ValueError, match="BuildCutoff warmup=0"):
        BuildCutoff(warmup=0)
    with pytest.raises(TypeError, match="LocalRunner cutoff 3: expected an RunCutoff"):
        LocalRunner(cutoff=3)
    with pytest.raises(TypeError, match="LocalBuilder cutoff"):
        LocalBuilder(cutoff=RunCutoff())


def test_the_worker_aggregates_calls_as_its_config_asks(task, builder, monkeypatch):
    """``RunConfig.call_mean`` reaches ``repeat_costs`` in the worker's job (run here,
    in-process, with the aggregation spied on)."""
    br = builder.build(_inputs(task, FakeState(tile=2)))[0]
    seen = []

    def spy(groups, mean=False):
        seen.append(([len(g) for g in groups], mean))
        return [1e-3] * len(groups)
    monkeypatch.setattr(runner_mod, "repeat_costs", spy)
    for mean in (False, True):
        cfg = runner_mod.RunConfig(number=4, repeat=2, call_mean=mean)
        costs, err, msg = runner_mod._run_job(br.obj, br.metas, cfg, None, float("inf"))
        assert err == 0, msg
    assert seen == [([4, 4], False), ([4, 4], True)]


def test_a_repeat_lasts_min_repeat_ms_not_each_call(task, builder, monkeypatch):
    """TVM's ``min_repeat_ms`` is the length of a repeat: with it, a repeat of a
    microsecond kernel has many more than ``number`` figures and lasts the window
    (before, each of the ``number`` calls was a loop lasting the whole window)."""
    br = builder.build(_inputs(task, FakeState(tile=2)))[0]
    seen = []

    def spy(groups, mean=False):
        seen.append(groups)
        return [1e-3] * len(groups)
    monkeypatch.setattr(runner_mod, "repeat_costs", spy)
    cfg = runner_mod.RunConfig(number=3, repeat=2, min_repeat_ms=20)
    t0 = time.perf_counter()
    costs, err, msg = runner_mod._run_job(br.obj, br.metas, cfg, None, float("inf"))
    assert err == 0, msg
    assert time.perf_counter() - t0 >= 2 * 0.020          # two repeats of the window
    (groups,) = seen
    assert len(groups) == 2
    for g in groups:
        # a 32x32 matmul takes microseconds: many figures, each of one call or a short
        # loop of them, none a loop of the whole 20 ms
        assert 3 < len(g) <= MAX_SAMPLES_PER_REPEAT and max(g) < 0.005


def test_a_repeat_costs_the_median_of_its_calls():
    # one call that waited a time slice (9.0) does not decide the cost
    assert runner_mod.repeat_costs([[1.0, 1.1, 9.0], [2.0, 2.2, 2.1]]) == [1.1, 2.1]
    assert runner_mod.repeat_costs([[4.0]]) == [4.0]
    # call_mean: what the calls deliver together, their slow ones included
    assert runner_mod.repeat_costs([[1.0, 1.1, 9.0], [2.0, 2.2, 2.1]], mean=True) == \
        pytest.approx([11.1 / 3, 2.1])

