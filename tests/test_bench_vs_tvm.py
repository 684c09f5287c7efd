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


def test_worker_command_exports_the_kernel(bench):
    ns = bench.parse_args(["--trials", "8"])
    ns.num_cores = 2
    flags = dict(zip(*[iter(bench.worker_command(ns, "conv2d", "znver3", "/tmp/w")[2:])] * 2))
    assert flags["--export"] == "/tmp/w/kernel.so"


def test_worker_arguments_in_timing_mode(bench):
    w = bench.shared
    ns = w.parse_args(["--workload", "conv2d", "--time-kernel", "/tmp/k.so"])
    assert ns.time_kernel == "/tmp/k.so" and ns.trials is None
    with pytest.raises(SystemExit):
        w.parse_args(["--workload", "conv2d"])      # tuning needs --trials, --mcpu, --work-dir
    with pytest.raises(SystemExit):
        bench.parse_args(["--side-by-side", "-1"])


def test_timing_commands(bench):
    ns = bench.parse_args(["--number", "3", "--repeat", "4"])
    ns.num_cores = 2
    cmds = bench.timing_commands(ns, "conv2d", {"kernel": "/w/kernel.so"}, {"log": "/w/o.json"})
    ms, ours = cmds["metaschedule"], cmds["ours"]
    assert ms[:2] == [ns.tvm_python, str(bench.WORKER)]
    assert dict(zip(ms[2::2], ms[3::2]))["--time-kernel"] == "/w/kernel.so"
    assert ours[0] == bench.sys.executable and ours[1].endswith("bench_vs_tvm.py")
    flags = dict(zip(ours[2::2], ours[3::2]))
    assert flags["--time-ours"] == "/w/o.json" and flags["--workloads"] == "conv2d"
    assert flags["--number"] == "3" and flags["--repeat"] == "4"
    # a side that failed, or has nothing to time, is left out
    assert set(bench.timing_commands(ns, "conv2d", {"kernel": "k", "error": "x"},
                                     {"log": "l"})) == {"ours"}
    assert bench.timing_commands(ns, "conv2d", {}, {"error": "boom", "log": "l"}) == {}


def test_side_by_side_alternates_and_takes_medians(bench, monkeypatch):
    ns = bench.parse_args(["--side-by-side", "4"])
    ns.num_cores = 2
    calls = []
    figures = {"metaschedule": iter([3.0, 2.0, 4.0, 3.5]), "ours": iter([1.0, 1.5, 2.0, 1.2])}

    def fake(cmd, env):
        side = "metaschedule" if "--time-kernel" in cmd else "ours"
        calls.append(side)
        assert env["TVM_NUM_THREADS"] == "2"
        return next(figures[side])

    monkeypatch.setattr(bench, "time_in_process", fake)
    sbs = bench.side_by_side(ns, "conv2d", {"kernel": "k.so"}, {"log": "l.json"})
    assert calls == ["metaschedule", "ours", "ours", "metaschedule"] * 2
    assert sbs["metaschedule_median_ms"] == pytest.approx(3.25)
    assert sbs["ours_median_ms"] == pytest.approx(1.35)
    assert sbs["ratio"] == pytest.approx(3.25 / 1.35)
    assert sbs["round_ratios"] == pytest.approx([3.0, 2.0 / 1.5, 2.0, 3.5 / 1.2])
    ns.side_by_side = 0
    assert bench.side_by_side(ns, "conv2d", {"kernel": "k.so"}, {"log": "l.json"}) == {}


def test_side_by_side_reports_a_failed_timing(bench, monkeypatch):
    ns = bench.parse_args(["--side-by-side", "2"])
    ns.num_cores = 2

    def fake(cmd, env):
        if "--time-ours" in cmd:
            raise RuntimeError("timing process x failed: boom")
        return 2.0

    monkeypatch.setattr(bench, "time_in_process", fake)
    sbs = bench.side_by_side(ns, "conv2d", {"kernel": "k.so"}, {"log": "l.json"})
    assert sbs["error"] == "timing process x failed: boom"
    assert sbs["metaschedule_ms"] == [2.0] and sbs["ours_ms"] == []
    row = {"metaschedule": {"best_ms": 2.0}, "ours": {"best_ms": 1.0}, "side_by_side": sbs,
           **bench.compare({"best_ms": 2.0}, {"best_ms": 1.0}, sbs)}
    assert row["side_by_side_ratio"] is None
    assert "conv2d: side-by-side timing failed: timing process x failed: boom" in \
        bench.format_table({"conv2d": row})


def test_time_in_process_reads_the_result_or_the_error(bench):
    ok = [bench.sys.executable, "-c",
          'print("noise"); print(\'{"workload": "w", "best_ms": 1.25}\')']
    assert bench.time_in_process(ok, {}) == 1.25
    err = [bench.sys.executable, "-c", 'print(\'{"workload": "w", "error": "ValueError: bad"}\')']
    with pytest.raises(RuntimeError, match="failed: ValueError: bad"):
        bench.time_in_process(err, {})
    crash = [bench.sys.executable, "-c", "raise SystemExit('no kernel here')"]
    with pytest.raises(RuntimeError, match="failed: no kernel here"):
        bench.time_in_process(crash, {})
    hang = [bench.sys.executable, "-c", "import time; time.sleep(30)"]
    with pytest.raises(RuntimeError, match="killed after 0.5 s"):
        bench.time_in_process(hang, {}, timeout=0.5)


def test_verdict_reads_the_side_by_side_ratio(bench):
    ms = {"best_ms": 3.0, "gflops": 100.0, "numpy_ms": 4.0}
    ours = {"best_ms": 1.5, "gflops": 200.0, "numpy_ms": 4.0}
    sbs = {"ratio": 1.4, "metaschedule_ms": [2.8, 2.9], "ours_ms": [2.0, 2.1],
           "round_ratios": [1.4, 1.38]}
    row = {"metaschedule": ms, "ours": ours, "side_by_side": sbs, **bench.compare(ms, ours, sbs)}
    assert row["side_by_side_ratio"] == 1.4 and row["ratio"] == pytest.approx(2.0)
    line = bench.verdicts({"conv2d": row}, 200)[0]
    # the tuning processes' 2.0x does not count: the side-by-side 1.4x decides
    assert line.startswith("conv2d: ours is 1.40x MetaSchedule's speed at 200 trials, side "
                           "by side (2.00x as the tuning processes timed them, normalized "
                           "2.00x; goal 1.5x: NOT met)")
    table = bench.format_table({"conv2d": row})
    assert "1.40x" in table
    # the peak shares are those of the side-by-side medians too
    sbs.update(metaschedule_median_ms=2.0, ours_median_ms=1.0)
    flops = bench.shared.FLOPS["conv2d"]
    line = bench.verdicts({"conv2d": row}, 200, peak_gflops=flops / 1e-3 / 1e9)[0]
    assert line.endswith("MetaSchedule 50%, ours 100%, the goal 75%")
    assert ("conv2d: side by side, 2 rounds: MetaSchedule [2.800, 2.900] ms, ours "
            "[2.000, 2.100] ms; per-round ratios 1.38-1.40x") in table


def test_time_ours_reports_a_missing_log_as_json(bench, tmp_path, capsys):
    log = tmp_path / "none.json"
    status = bench.main(["--workloads", "conv2d", "--time-ours", str(log)])
    out = bench.parse_worker_output(capsys.readouterr().out)
    assert status == 1 and out["workload"] == "conv2d"
    assert str(log) in out["error"]
