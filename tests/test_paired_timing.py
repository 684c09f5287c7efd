"""Paired timings of bench_vs_tvm (scripts/_paired_timing.py, the serve mode of both
sides' timing processes and the verdict that reads them).  Fake timing processes stand
in for the two sides: neither TVM nor any tuning is needed."""

import io
import json
import sys

import pytest
from script_helpers import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_vs_tvm")


@pytest.fixture(scope="module")
def pairing(bench):
    return bench.pairing


def fake_server(tmp_path, name: str, body: str) -> list:
    """A command running a fake serve-mode process."""
    path = tmp_path / f"{name}.py"
    path.write_text("import json, sys, time\n" + body)
    return [sys.executable, str(path)]


SERVES = ('print("a log line"); print(json.dumps({"ready": True}), flush=True)\n'
          'for i, line in enumerate(sys.stdin):\n'
          '    print(json.dumps({"best_ms": BASE + i}), flush=True)\n')


def test_serve_answers_each_request_until_eof(bench):
    calls = iter([1.5, 2.5])
    out = io.StringIO()
    status = bench.shared.serve(lambda: (lambda: {"best_ms": next(calls)}),
                                stdin=io.StringIO("time\n\ntime\n"), stdout=out)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert status == 0
    assert lines == [{"ready": True}, {"best_ms": 1.5}, {"best_ms": 2.5}]


def test_serve_reports_errors_as_json(bench):
    def broken():
        raise FileNotFoundError("no kernel at k.so")
    out = io.StringIO()
    assert bench.shared.serve(broken, stdin=io.StringIO("time\n"), stdout=out) == 1
    assert json.loads(out.getvalue()) == {"error": "FileNotFoundError: no kernel at k.so"}

    def failing_timer():
        raise RuntimeError("segfault avoided")
    out = io.StringIO()
    status = bench.shared.serve(lambda: failing_timer, stdin=io.StringIO("time\ntime\n"),
                                stdout=out)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert status == 0
    assert lines[1:] == [{"error": "RuntimeError: segfault avoided"}] * 2


def test_paired_alternates_and_takes_the_median_ratio(pairing, tmp_path):
    cmds = {"metaschedule": fake_server(tmp_path, "ms", "BASE = 3.0\n" + SERVES),
            "ours": fake_server(tmp_path, "ours", "BASE = 1.0\n" + SERVES)}
    res = pairing.paired(cmds, {}, 3, timeout=30)
    assert res["metaschedule_ms"] == [3.0, 4.0, 5.0] and res["ours_ms"] == [1.0, 2.0, 3.0]
    assert res["pair_ratios"] == pytest.approx([3.0, 2.0, 5.0 / 3.0])
    assert res["ratio"] == pytest.approx(2.0)
    assert res["metaschedule_median_ms"] == 4.0 and res["ours_median_ms"] == 2.0


def test_paired_order_alternates_by_pair(pairing, monkeypatch):
    calls, closed = [], []

    class Fake:
        def __init__(self, cmd, env, timeout):
            self.side = cmd[0]

        def time(self):
            calls.append(self.side)
            return 2.0 if self.side == "metaschedule" else 1.0

        def close(self):
            closed.append(self.side)

    monkeypatch.setattr(pairing, "TimingProcess", Fake)
    res = pairing.paired({"metaschedule": ["metaschedule"], "ours": ["ours"]}, {}, 4, 1.0)
    assert calls == ["metaschedule", "ours", "ours", "metaschedule"] * 2
    assert res["ratio"] == 2.0 and sorted(closed) == ["metaschedule", "ours"]


def test_paired_reports_a_side_that_fails_to_start(pairing, tmp_path):
    bad = 'print(json.dumps({"error": "FileNotFoundError: k.so"}), flush=True)\n'
    cmds = {"metaschedule": fake_server(tmp_path, "ms", "BASE = 3.0\n" + SERVES),
            "ours": fake_server(tmp_path, "ours", bad)}
    res = pairing.paired(cmds, {}, 2, timeout=30)
    assert res["error"].endswith("failed: FileNotFoundError: k.so")
    assert str(tmp_path / "ours.py") in res["error"]
    assert res["metaschedule_ms"] == [] and res["ours_ms"] == []


def test_paired_keeps_the_figures_of_a_side_that_dies(pairing, tmp_path):
    dies = ('print(json.dumps({"ready": True}), flush=True)\n'
            'sys.stdin.readline(); print(json.dumps({"best_ms": 1.0}), flush=True)\n'
            'sys.stdin.readline(); sys.exit("killed by a signal")\n')
    cmds = {"metaschedule": fake_server(tmp_path, "ms", "BASE = 3.0\n" + SERVES),
            "ours": fake_server(tmp_path, "ours", dies)}
    res = pairing.paired(cmds, {}, 3, timeout=30)
    assert "exited: killed by a signal" in res["error"]
    # the second pair asks ours first: it dies there
    assert res["metaschedule_ms"] == [3.0] and res["ours_ms"] == [1.0]


def test_a_silent_process_times_out_and_is_closed(pairing, tmp_path):
    silent = 'print(json.dumps({"ready": True}), flush=True)\ntime.sleep(60)\n'
    proc = pairing.TimingProcess(fake_server(tmp_path, "s", silent), {}, timeout=0.5)
    with pytest.raises(RuntimeError, match="gave no answer in 0.5 s"):
        proc.time()
    pairing.CLOSE_SECONDS, saved = 0.2, pairing.CLOSE_SECONDS
    try:
        proc.close()
    finally:
        pairing.CLOSE_SECONDS = saved
    assert proc.proc.returncode is not None


def test_paired_timings_serve_both_sides(bench, monkeypatch):
    ns = bench.parse_args([])
    ns.num_cores = 2
    assert ns.pairs == 10
    seen = {}

    def fake(cmds, env, pairs, timeout):
        seen.update(cmds=cmds, env=env, pairs=pairs)
        return {"ratio": 1.7}

    monkeypatch.setattr(bench.pairing, "paired", fake)
    assert bench.paired_timings(ns, "conv2d", {"kernel": "k.so"}, {"log": "l.json"}) == \
        {"ratio": 1.7}
    assert all(cmd[-1] == "--serve" for cmd in seen["cmds"].values())
    assert "--time-kernel" in seen["cmds"]["metaschedule"]
    assert "--time-ours" in seen["cmds"]["ours"]
    assert seen["pairs"] == 10 and seen["env"]["TVM_NUM_THREADS"] == "2"
    # no kernel on a side, or no pairs asked: nothing timed
    assert bench.paired_timings(ns, "conv2d", {"error": "x"}, {"log": "l.json"}) == {}
    ns.pairs = 0
    assert bench.paired_timings(ns, "conv2d", {"kernel": "k.so"}, {"log": "l.json"}) == {}
    with pytest.raises(SystemExit):
        bench.parse_args(["--pairs", "-1"])


def test_verdict_reads_the_paired_ratio(bench):
    ms = {"best_ms": 3.0, "gflops": 100.0, "numpy_ms": 4.0}
    ours = {"best_ms": 1.5, "gflops": 200.0, "numpy_ms": 4.0}
    sbs = {"ratio": 1.4, "metaschedule_ms": [2.8], "ours_ms": [2.0], "round_ratios": [1.4],
           "metaschedule_median_ms": 2.8, "ours_median_ms": 2.0}
    pair = {"ratio": 1.6, "metaschedule_ms": [3.2, 3.0], "ours_ms": [2.0, 1.9],
            "pair_ratios": [1.6, 3.0 / 1.9], "metaschedule_median_ms": 2.0,
            "ours_median_ms": 1.0}
    row = {"metaschedule": ms, "ours": ours, "side_by_side": sbs, "paired": pair,
           **bench.compare(ms, ours, sbs, pair)}
    assert row["paired_ratio"] == 1.6
    flops = bench.shared.FLOPS["conv2d"]
    line = bench.verdicts({"conv2d": row}, 200, peak_gflops=flops / 1e-3 / 1e9)[0]
    assert line == ("conv2d: ours is 1.60x MetaSchedule's speed at 200 trials, in paired "
                    "timings (2.00x as the tuning processes timed them, normalized 2.00x; "
                    "1.40x side by side in fresh processes; goal 1.5x: met); of the "
                    f"{flops / 1e-3 / 1e9:.0f} GFLOPS FMA peak: MetaSchedule 50%, ours "
                    "100%, the goal 75%")
    table = bench.format_table({"conv2d": row})
    assert " 1.60x |" in table
    assert ("conv2d: paired, 2 pairs: MetaSchedule [3.200, 3.000] ms, ours [2.000, 1.900] "
            "ms; per-pair ratios 1.58-1.60x") in table
    failed = {**row, "paired": {"error": "timing process x exited: boom"}, "paired_ratio": None}
    assert "conv2d: paired timing failed: timing process x exited: boom" in \
        bench.format_table({"conv2d": failed})
    # without pairs the side-by-side ratio decides, as before
    assert "1.40x MetaSchedule's speed at 200 trials, side by side" in \
        bench.verdicts({"conv2d": failed}, 200)[0]


def test_time_ours_serve_reports_a_missing_log_as_json(bench, tmp_path, capsys,
                                                       monkeypatch):
    log = tmp_path / "none.json"
    monkeypatch.setattr(sys, "stdin", io.StringIO("time\n"))
    status = bench.main(["--workloads", "conv2d", "--time-ours", str(log), "--serve"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert status == 1 and str(log) in out["error"]


def test_reuse_times_an_earlier_runs_kernels_again(bench, tmp_path, monkeypatch):
    earlier = {"config": {"trials": 64, "work_dir": "/tmp/w"},
               "results": {"conv2d": {"metaschedule": {"best_ms": 3.0, "kernel": "k.so"},
                                      "ours": {"best_ms": 1.5, "log": "l.json"}}}}
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(earlier))
    monkeypatch.setattr(bench.peak, "measure_peak", lambda threads: {"gflops": 100.0})
    monkeypatch.setattr(bench, "side_by_side", lambda ns, name, ms, ours: {
        "ratio": 1.9, "metaschedule_ms": [3.8], "ours_ms": [2.0], "round_ratios": [1.9],
        "metaschedule_median_ms": 3.8, "ours_median_ms": 2.0})
    monkeypatch.setattr(bench, "paired_timings", lambda ns, name, ms, ours: {
        "ratio": 1.8, "metaschedule_ms": [3.6], "ours_ms": [2.0], "pair_ratios": [1.8],
        "metaschedule_median_ms": 3.6, "ours_median_ms": 2.0})
    out = tmp_path / "again.json"
    assert bench.main(["--workloads", "conv2d", "--reuse", str(path), "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    row = got["results"]["conv2d"]
    assert (row["ratio"], row["side_by_side_ratio"], row["paired_ratio"]) == (2.0, 1.9, 1.8)
    assert got["config"]["trials"] == 64 and got["config"]["work_dir"] == "/tmp/w"
    with pytest.raises(SystemExit, match="has no results for 'dense_bias_relu'"):
        bench.main(["--workloads", "dense_bias_relu", "--reuse", str(path),
                    "--json", str(out)])


def test_worker_serve_mode_reports_a_kernel_it_cannot_load(bench, tmp_path, capsys,
                                                           monkeypatch):
    w = bench.shared
    ns = w.parse_args(["--workload", "conv2d", "--time-kernel", "/k.so", "--serve"])
    assert ns.serve and not w.parse_args(["--workload", "conv2d", "--time-kernel",
                                          "/k.so"]).serve
    monkeypatch.setattr(sys, "stdin", io.StringIO("time\n"))
    # this interpreter has no tvm (or no such kernel): the first line says why
    status = w.main(["--workload", "conv2d", "--time-kernel", str(tmp_path / "k.so"),
                     "--serve"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert status == 1 and set(out) == {"error"}
    assert "tvm" in out["error"] or "k.so" in out["error"]


def test_a_process_that_cannot_start_is_an_error_not_a_crash(pairing, tmp_path):
    missing = str(tmp_path / "no-python")
    res = pairing.paired({"metaschedule": [missing, "w.py"], "ours": [missing, "o.py"]},
                         {}, 2, timeout=5)
    assert res["error"].startswith(f"timing process {missing} could not start:")
    assert res["metaschedule_ms"] == [] and res["ours_ms"] == []
