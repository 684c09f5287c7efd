"""scripts/bench_window.py: the summary's spread and regret mean what they say, and a
small run writes every window's figures."""
import json
import math

import numpy as np
import pytest
from script_helpers import load_script


@pytest.fixture(scope="module")
def bw():
    return load_script("bench_window")


def test_summary_spread_and_regret(bw):
    # 4 candidates, candidate 0 the fastest; window 0 repeats exactly and ranks it
    # first; window 50 swaps candidates 0 and 1 in its second pass (twice as slow)
    steady = np.array([[1.0, 2.0, 4.0, 8.0], [1.0, 2.0, 4.0, 8.0]])
    noisy = np.array([[1.0, 2.0, 4.0, 8.0], [2.0, 1.0, 4.0, 8.0]])
    out = bw.summarize({0: steady, 50: noisy}, {0: 0.8, 50: 4.0}, 4, 2)
    w0, w50 = out["windows"][0], out["windows"][50]
    assert w0["spread"] == 0.0 and w0["regret"] == [0.0, 0.0]
    # the faster half is candidates 0 and 1: both moved by a factor 2 between passes
    assert w50["spread"] == pytest.approx(math.log(2))
    ref = np.exp(np.mean(np.log(np.vstack([steady, noisy])), axis=0))
    assert w50["regret"][0] == 0.0
    assert w50["regret"][1] == pytest.approx(ref[1] / ref[0] - 1)
    assert w0["ms_per_candidate"] == pytest.approx(100.0)
    assert w50["ms_per_candidate"] == pytest.approx(500.0)


def test_a_small_run_times_every_window(bw, tmp_path):
    out = tmp_path / "w.json"
    assert bw.main(["--workloads", "matmul:64", "--windows", "0", "5", "--passes", "2",
                    "--candidates", "3", "--trials", "8", "--json", str(out)]) == 0
    got = json.loads(out.read_text())["workloads"]["matmul:64"]
    assert got["candidates"] >= 2 and got["reference_median_ms"] > 0
    assert set(got["windows"]) == {"0.0", "5.0"}
    for w in got["windows"].values():
        assert len(w["regret"]) == 2 and all(r >= 0 for r in w["regret"])
        assert w["ms_per_candidate"] > 0


def test_unknown_workload_and_one_pass_are_refused(bw):
    with pytest.raises(SystemExit, match="unknown workload 'gemm'"):
        bw.make_task("gemm")
    with pytest.raises(SystemExit, match="at least 2"):
        bw.main(["--passes", "1"])
