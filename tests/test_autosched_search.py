"""SketchPolicy: golden sketches, valid and distinct sketches/samples for the workload
families the tuner targets, evolutionary search output, and end-to-end tuning."""
import fcntl
import functools
import json
import os
import pathlib

import numpy as np
import pytest
from autosched_helpers import SMALL_SEARCH, Fine

import autosched as auto
from autosched import catalog  # noqa: F401  (registers built-in workloads)
from autosched.errors import WorkloadError
from autosched.measure import MeasureInput, MeasureResult
from autosched.measure.builder import default_build_func
from compiler import build, te, tir, topi
from compiler.runtime import compile_ir
from records import load_records

GOLDEN = pathlib.Path(__file__).parent / "golden"


@auto.register_workload(override=True)
def mm_bias_relu(N, M, K):
    A = te.placeholder((N, K), name="A")
    B = te.placeholder((K, M), name="B")
    bias = te.placeholder((M,), name="bias")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((N, M), lambda i, j: C[i, j] + bias[j], name="D")
    R = te.compute((N, M), lambda i, j: te.max(D[i, j], tir.const(0.0, "float32")), name="R")
    return [A, B, bias, R]


@auto.register_workload(override=True)
def conv_relu_nchw(N, CI, H, W, CO):
    X = te.placeholder((N, CI, H, W), name="X")
    F = te.placeholder((CO, CI, 3, 3), name="F")
    return [X, F, topi.nn.relu(topi.nn.conv2d_nchw(X, F, 1, 1, 1))]


@auto.register_workload(override=True)
def conv_relu_nhwc(N, H, W, CI, CO):
    X = te.placeholder((N, H, W, CI), name="X")
    F = te.placeholder((3, 3, CI, CO), name="F")
    return [X, F, topi.nn.relu(topi.nn.conv2d_nhwc(X, F, 1, 1, 1))]


@auto.register_workload(override=True)
def row_sum(N, K):
    A = te.placeholder((N, K), name="A")
    k = te.reduce_axis((0, K), name="k")
    return [A, te.compute((N,), lambda i: te.sum(A[i, k], axis=k), name="S")]


@auto.register_workload(override=True)
def elem_chain(N, M):
    A = te.placeholder((N, M), name="A")
    B = te.compute((N, M), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((N, M), lambda i, j: B[i, j] + 1.0, name="C")
    return [A, te.compute((N, M), lambda i, j: te.exp(C[i, j]), name="D")]


WORKLOADS = {
    "matmul": ((64, 48, 32), lambda a, b: a @ b),
    "mm_bias_relu": ((32, 48, 16), lambda a, b, c: np.maximum(a @ b + c, 0)),
    "conv_relu_nchw": ((1, 4, 8, 8, 8), None),
    "conv_relu_nhwc": ((1, 8, 8, 4, 8), None),
    "softmax": ((8, 40), lambda x: np.exp(x - x.max(1, keepdims=True)) /
                np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)),
    "row_sum": ((4, 512), lambda a: a.sum(1)),
    "elem_chain": ((16, 24), lambda a: np.exp(a * 2 + 1)),
}


GOLDEN_TARGET = "llvm -mcpu=skylake-avx512"


def _sketch_text(policy) -> str:
    out = []
    for k, sk in enumerate(policy.generate_sketches()):
        out.append(f"=== sketch {k} ===\n{sk}" + "\n".join(
            repr(s.to_record()) for s in sk.transform_steps))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("name,args", [("matmul", (512, 512, 512)),
                                       ("conv2d_nchw", (1, 64, 56, 56, 64, 3, 3, 1, 1))])
def test_golden_sketches(name, args, request):
    # a fixed AVX-512 target: conv2d's 56-wide rows then get the vector-axis variants
    task = auto.SearchTask(func=name, args=args, target=GOLDEN_TARGET)
    text = _sketch_text(auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0))
    path = GOLDEN / f"sketches_{name}.txt"
    if request.config.getoption("--update-golden"):
        path.write_text(text)
    assert text == path.read_text()


def _reference(name, args, arrays):
    if name.startswith("conv_relu"):
        x, f = arrays
        nhwc = name.endswith("nhwc")
        if nhwc:
            x, f = x.transpose(0, 3, 1, 2), f.transpose(3, 2, 0, 1)
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((x.shape[0], f.shape[0], x.shape[2], x.shape[3]))
        for ry in range(3):
            for rx in range(3):
                patch = xp[:, :, ry:ry + x.shape[2], rx:rx + x.shape[3]]
                out += np.einsum("nchw,fc->nfhw", patch, f[:, :, ry, rx])
        out = np.maximum(out, 0)
        return out.transpose(0, 2, 3, 1) if nhwc else out
    return WORKLOADS[name][1](*arrays)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_sketches_and_samples_are_valid_and_distinct(name):
    args = WORKLOADS[name][0]
    task = auto.SearchTask(func=name, args=args)
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=3)
    sketches = policy.generate_sketches()
    assert sketches and len({str(s) + repr(s.transform_steps) for s in sketches}) == len(sketches)
    pop = policy.sample_initial_population(6)
    # an inlined elementwise chain only differs in its parallel/vector split
    assert len({str(s) for s in pop}) == len(pop) >= (2 if name == "elem_chain" else 3)
    rng = np.random.default_rng(0)
    for st in pop[:3]:
        sch, tensors = task.compute_dag.apply_steps_from_state(st)
        mod = build(sch, tensors, name="cand")
        ins = [rng.random([d.value for d in t.shape]).astype("float32") for t in tensors[:-1]]
        out = np.zeros([d.value for d in tensors[-1].shape], "float32")
        mod(*ins, out)
        np.testing.assert_allclose(out, _reference(name, args, ins), rtol=1e-4, atol=1e-4)


def test_evolutionary_search_returns_distinct_unmeasured_states():
    task = auto.SearchTask(func="matmul", args=(64, 64, 64))
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0)
    pop = policy.sample_initial_population(20)
    measured = pop[:5]
    policy.record_measured([MeasureInput(task, s) for s in measured],
                           [MeasureResult([1e-3], 0, "", 0.1, 0.0) for _ in measured])
    best = policy.evolutionary_search(pop, 12)
    keys = [str(s) for s in best]
    assert len(best) == 12 and len(set(keys)) == 12
    assert not set(keys) & {str(s) for s in measured}
    picks = policy.pick_states(8)
    assert len(picks) == 8 and not {str(s) for s in picks} & policy.measured_keys


def test_unknown_workload_key_error():
    with pytest.raises(WorkloadError, match="unknown workload 'nope'.*registered workloads"):
        auto.SearchTask(workload_key='["nope", 1, 2]')


def test_tune_small_matmul_end_to_end_and_resume(tmp_path):
    log = str(tmp_path / "mm.json")
    task = auto.SearchTask(func="matmul", args=(64, 64, 64))
    opts = auto.TuningOptions(num_measure_trials=8, num_measures_per_round=4, verbose=0,
                              runner=auto.LocalRunner(number=2),
                              measure_callbacks=[auto.RecordToFile(log)])
    stats = task.tune(opts, auto.SketchPolicy(task, params=SMALL_SEARCH, seed=1, verbose=0))
    assert stats.trials == 8 and stats.best_cost < 1
    # matmul has a default schedule: measuring it is measurement, not search overhead
    assert 0 < stats.default_seconds < stats.wall_seconds
    assert stats.measure_seconds == pytest.approx(
        stats.build_seconds + stats.run_seconds + stats.default_seconds)
    lines = open(log).read().splitlines()
    assert len(lines) == 8
    sch, args = task.apply_best(log)
    mod = build(sch, args)
    a, b = np.random.rand(64, 64).astype("float32"), np.random.rand(64, 64).astype("float32")
    c = np.zeros((64, 64), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    assert "s[T_matmul" in task.print_best(log)
    # resume: the 8 measured states are preloaded and never measured again
    before = {l.split('"r"')[0] for l in lines}
    opts2 = auto.TuningOptions(num_measure_trials=4, num_measures_per_round=4, verbose=0,
                               runner=auto.LocalRunner(number=2),
                               measure_callbacks=[auto.RecordToFile(log)])
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=1, verbose=0,
                               init_search_callbacks=[auto.PreloadMeasuredStates(log)])
    stats2 = task.tune(opts2, policy)
    assert stats2.preloaded == 8 and stats2.trials == 4
    new = open(log).read().splitlines()[8:]
    assert len(new) == 4 and not {l.split('"r"')[0] for l in new} & before


def test_each_tune_call_reports_its_own_search_seconds():
    fine = Fine()
    task = auto.SearchTask(func="steps_test_matmul", args=(16, 16, 16))
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0)
    calls = []
    for _ in range(3):
        opts = auto.TuningOptions(num_measure_trials=4, num_measures_per_round=4,
                                  verbose=0, builder=fine, runner=fine, retime_top_k=0)
        calls.append(task.tune(opts, policy))
    assert all(0 < s.search_seconds <= s.wall_seconds for s in calls)
    # the policy's total is the sum of the calls' shares, not the last call's figure
    assert sum(s.search_seconds for s in calls) == pytest.approx(policy.search_seconds)


def test_overhead_share_is_the_time_outside_building_and_running():
    stats = auto.TuneStats(wall_seconds=10.0, build_seconds=4.0, run_seconds=1.0,
                           default_seconds=1.0, search_seconds=3.5)
    assert stats.measure_seconds == 6.0
    assert stats.overhead_share == pytest.approx(0.4)
    assert auto.TuneStats().overhead_share == 0.0


@pytest.mark.slow
def test_tune_matmul_256_32_trials(tmp_path):
    log = str(tmp_path / "mm256.json")
    task = auto.SearchTask(func="matmul", args=(256, 256, 256))
    stats = task.tune(auto.TuningOptions(num_measure_trials=32, verbose=0,
                                         measure_callbacks=[auto.RecordToFile(log)]))
    assert stats.trials == 32 and os.path.getsize(log) > 0
    sch, args = task.apply_best(log)
    a, b = np.random.rand(256, 256).astype("float32"), np.random.rand(256, 256).astype("float32")
    c = np.zeros((256, 256), "float32")
    build(sch, args)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def _planted_kernel(name, body, n=32):
    ir = f"define void @{name}(ptr %A, ptr %B, ptr %C) {{\n{body}\n}}\n"
    metas = [(name, [("A", (n, n), "float32", False), ("B", (n, n), "float32", False),
                     ("C", (n, n), "float32", True)])]
    return compile_ir(ir, "llvm", cache=None), metas


def crash_or_hang_build(ledger, inp):
    """Module-level build_func (bound to a ledger file with functools.partial): the
    builds take turns, in the order they start, to segfault, hang and build for real;
    each writes its steps and kind to the ledger, so the test knows what to expect
    whichever states the search picks on this machine."""
    key = json.dumps([s.to_record() for s in inp.state.transform_steps])
    with open(ledger, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        kind = sum(1 for _ in f) % 3
        f.write(json.dumps([key, kind]) + "\n")
        f.flush()
        fcntl.flock(f, fcntl.LOCK_UN)
    if kind == 0:
        return _planted_kernel("crash", "entry:\n  store volatile float 0.0, ptr null\n  ret void")
    if kind == 1:
        return _planted_kernel("hang", "entry:\n  br label %l\nl:\n  %v = load volatile float, "
                                       "ptr %A\n  br label %l")
    return default_build_func(inp)


def test_tuning_survives_crashing_and_hanging_kernels(tmp_path):
    log, ledger = str(tmp_path / "planted.json"), str(tmp_path / "kinds.jsonl")
    task = auto.SearchTask(func="matmul", args=(32, 32, 32))
    build_func = functools.partial(crash_or_hang_build, ledger)
    opts = auto.TuningOptions(num_measure_trials=9, num_measures_per_round=9, verbose=0,
                              builder=auto.LocalBuilder(build_func=build_func),
                              runner=auto.LocalRunner(timeout=1.5, number=1),
                              measure_callbacks=[auto.RecordToFile(log)])
    stats = task.tune(opts, auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0))
    recs = list(load_records(log))
    assert stats.trials == 9 and len(recs) == 9
    kinds = dict(json.loads(line) for line in open(ledger))
    assert sorted(kinds.values()) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    expected = {0: 4, 1: 7, 2: 0}   # crash -> RUNTIME_DEVICE, hang -> RUN_TIMEOUT, healthy
    for r in recs:
        assert r.result.error_no == expected[kinds[json.dumps(r.input.steps)]]
    codes = {r.result.error_no for r in recs}
    assert 0 in codes and codes & {4, 7} and stats.best_cost < 1
    # Hangs after the first valid measurement are cut by the runner's cut-off (0.1 s,
    # not the 1.5 s timeout) and counted apart from the errors.
    n_ok = sum(r.result.error_no == 0 for r in recs)
    assert stats.errors + stats.cut_off + n_ok == 9
    assert stats.cut_off >= 1
