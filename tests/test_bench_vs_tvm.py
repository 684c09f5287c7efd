"""scripts/bench_vs_tvm.py, our side only: argument parsing, reading the worker's output,
the ratios and the table.  Neither TVM nor any tuning is needed."""

import numpy as np
import pytest
from script_helpers import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_vs_tvm")


def test_defaults(bench):
    ns = bench.parse_args([])
    assert ns.trials == 200 and ns.seed == 0
    assert ns.workloads == ["conv2d", "dense_bias_relu"]
    assert ns.json == "results/bench_vs_tvm.json"
    assert not ns.skip_tvm and not ns.skip_ours


def test_arguments(bench):
    ns = bench.parse_args(["--trials", "8", "--workloads", "dense_bias_relu", "--seed", "3",
                           "--tvm-python", "/x/python", "--json", "out.json"])
    assert (ns.trials, ns.workloads, ns.seed, ns.tvm_python, ns.json) == \
        (8, ["dense_bias_relu"], 3, "/x/python", "out.json")
    for bad in (["--workloads", "matmul"], ["--trials", "0"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)


def test_worker_command(bench):
    ns = bench.parse_args(["--trials", "8"])
    ns.num_cores = 2
    cmd = bench.worker_command(ns, "conv2d", "znver3", "/tmp/w")
    assert cmd[:2] == [ns.tvm_python, str(bench.WORKER)]
    flags = dict(zip(cmd[2::2], cmd[3::2]))
    assert flags["--workload"] == "conv2d" and flags["--trials"] == "8"
    assert flags["--mcpu"] == "znver3" and flags["--num-cores"] == "2"


def test_parse_worker_output(bench):
    text = 'log line\n{"not": "a result"}\n{"workload": "conv2d", "best_ms": 1.5}\n'
    assert bench.parse_worker_output(text) == {"workload": "conv2d", "best_ms": 1.5}
    assert bench.parse_worker_output("Traceback ...\n{broken\n") is None


def test_missing_tvm_python_is_reported(bench, tmp_path):
    ns = bench.parse_args(["--tvm-python", str(tmp_path / "nope")])
    ns.num_cores = 2
    res = bench.run_metaschedule(ns, "conv2d", "znver3", str(tmp_path))
    assert "not found" in res["error"]


def test_compare_and_table(bench):
    ms = {"best_ms": 3.0, "gflops": 77.1, "numpy_ms": 4.0, "tune_seconds": 100.0}
    ours = {"best_ms": 1.5, "gflops": 154.1, "numpy_ms": 5.0, "tune_seconds": 50.0}
    row = {"metaschedule": ms, "ours": ours, **bench.compare(ms, ours)}
    assert row["ratio"] == pytest.approx(2.0)
    # ours ran on a slower-looking machine: normalized, its win is larger
    assert row["normalized_ratio"] == pytest.approx((3.0 / 4.0) / (1.5 / 5.0))
    failed = {"metaschedule": {"error": "boom"}, "ours": {"error": bench.SKIPPED},
              **bench.compare({"error": "boom"}, {})}
    assert failed["ratio"] is None and failed["normalized_ratio"] is None
    table = bench.format_table({"conv2d": row, "dense_bias_relu": failed})
    assert "2.00x" in table and "2.50x" in table
    assert "dense_bias_relu: metaschedule failed: boom" in table
    assert "dense_bias_relu: ours skipped" in table
    lines = bench.verdicts({"conv2d": row, "dense_bias_relu": failed}, 200)
    assert "goal 1.5x: met" in lines[0] and "no ratio" in lines[1]
    assert "peak" not in lines[0]


def test_verdict_reads_the_goal_against_the_measured_peak(bench):
    ms = {"best_ms": 3.0, "gflops": 150.0, "numpy_ms": 4.0}
    ours = {"best_ms": 2.5, "gflops": 180.0, "numpy_ms": 4.0}
    row = {"metaschedule": ms, "ours": ours, **bench.compare(ms, ours)}
    line = bench.verdicts({"dense_bias_relu": row}, 200, peak_gflops=200.0)[0]
    assert "goal 1.5x: NOT met" in line
    assert ("of the 200 GFLOPS FMA peak: MetaSchedule 75%, ours 90%, the goal 112% "
            "(above the peak: unreachable)") in line
    ms_slow = {**ms, "gflops": 100.0}
    row = {"metaschedule": ms_slow, "ours": ours, **bench.compare(ms_slow, ours)}
    line = bench.verdicts({"conv2d": row}, 200, peak_gflops=200.0)[0]
    assert line.endswith("the goal 75%")


def test_numpy_references(bench):
    rng = np.random.default_rng(0)
    x, f = rng.standard_normal((1, 3, 5, 5)), rng.standard_normal((2, 3, 3, 3))
    out = bench.shared.conv2d_ref(x, f)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    assert out.shape == (1, 2, 5, 5)
    assert out[0, 1, 2, 3] == pytest.approx(np.sum(xp[0, :, 2:5, 3:6] * f[1]))
    assert bench.shared.FLOPS["conv2d"] == 2 * 64 * 56 * 56 * 64 * 9
