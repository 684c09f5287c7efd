"""scripts/bench_tune.py's bookkeeping: a budget whose answer is the default schedule's
own state gets the default's figure, and the summary counts such runs.  No tuning."""

import json

import pytest
from script_helpers import load_script

import autosched as auto
from autosched import catalog  # noqa: F401  (registers built-in workloads)
from autosched.default_state import default_state


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_tune")


def test_an_answer_that_is_the_default_program_gets_the_default_figure(bench):
    task = auto.SearchTask(func="matmul", args=(64, 64, 64))
    dflt = default_state(task)
    other = auto.SketchPolicy(task, seed=0, verbose=0).sample_initial_population(1)[0]
    assert str(other) != str(dflt)
    run = {"seconds": {"default": 1.0, "best@64": 1.1, "best@200": 0.9, "numpy": 2.0},
           "logged_gflops": {64: 1.0, 200: 2.0}, "candidates_per_s": 5.0,
           "overhead_share": 0.2}
    bench.mark_default_answers(task, run, {64: dflt, 200: other})
    assert run["best_is_default"] == {"64": True, "200": False}
    secs = run["seconds"]
    assert secs["best@64"] == 1.0 and secs["best@64 (own build)"] == 1.1
    assert secs["best@200"] == 0.9 and "best@200 (own build)" not in secs
    rows = bench.summarize({"flops": 1e9, "runs": [run]}, [64, 200])
    # (budget, GFLOPS, min, max, vs numpy, vs default, min, logged, cand/s, overhead, =dflt)
    assert rows[0][0] == 64 and rows[0][5] == 1.0 and rows[0][10] == 1
    assert rows[1][0] == 200 and rows[1][5] == pytest.approx(1 / 0.9) and rows[1][10] == 0


def test_results_name_the_machine_they_were_measured_on(bench):
    host = bench.host_info()
    assert set(host) == {"target", "mcpu", "float32_lanes", "num_cores"}
    # the fields agree with the target string they summarize
    assert f"-mcpu={host['mcpu']}" in host["target"]
    assert f"-num-cores={host['num_cores']}" in host["target"]
    # AVX2 (Zen 3) or AVX-512 (Zen 4): 8 or 16 float32 lanes
    assert host["float32_lanes"] in (4, 8, 16)
    assert json.loads(json.dumps(host)) == host


def test_the_table_gives_each_median_as_a_share_of_the_measured_peak(bench, capsys):
    run = {"seconds": {"default": 1.0, "best@64": 0.5, "numpy": 2.0},
           "logged_gflops": {64: 2.0}, "candidates_per_s": 5.0, "overhead_share": 0.2}
    out = {"matmul:64": {"flops": 80e9, "runs": [run]}}     # 160 GFLOPS at 0.5 s
    bench.print_table(out, [64], peak_gflops=200.0)
    head, row = capsys.readouterr().out.splitlines()
    assert head.split()[-1] == "peak" and row.split()[-1] == "80%"
    bench.print_table(out, [64])
    head, row = capsys.readouterr().out.splitlines()
    assert "peak" not in head and row.split()[-1] == "0"       # ends at the =dflt count


def test_workload_names_are_checked(bench):
    assert bench.parse_workload("matmul:256") == ("matmul", (256, 256, 256))
    assert bench.parse_workload("depthwise")[0] == "depthwise_conv2d"
    for bad in ("depthwise_conv2d", "matmul:big", "conv3d"):
        with pytest.raises(SystemExit, match=f"unknown workload '{bad}'; expected matmul:N "
                           "or one of conv2d, dense_bias_relu, depthwise, softmax"):
            bench.parse_workload(bad)


def test_the_final_retiming_runs_the_rounds_asked_for(bench, monkeypatch):
    task = auto.SearchTask(func="matmul", args=(64, 64, 64))
    asked = []

    def fake_interleaved(timers, rounds=7, settle=0.25):
        asked.append((sorted(timers), rounds))
        return {k: 1e-3 for k in timers}
    monkeypatch.setattr(bench, "interleaved", fake_interleaved)
    got = bench.retime("matmul", task, {64: default_state(task)}, rounds=15)
    assert asked == [(["best@64", "default", "numpy"], 15)] and got["best@64"] == 1e-3
