"""scripts/bench_search.py's bookkeeping: workload names, exclusive phase times, the
wrappers' removal, and a small search's phases and fingerprint."""
import pytest
from script_helpers import load_script

from autosched.cost_model import xgb_model
from autosched.search import evolution
from autosched.search import policy as policy_mod


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_search")


def test_workload_names_are_checked(bench):
    assert bench.parse_workload("matmul:256") == ("matmul", (256, 256, 256))
    assert bench.parse_workload("depthwise")[0] == "depthwise_conv2d"   # bench_tune's names
    for bad in ("matmul:x", "conv3d", "softmax:12"):
        with pytest.raises(SystemExit, match=f"unknown workload '{bad}'"):
            bench.parse_workload(bad)


def test_nested_phases_are_charged_to_themselves_only(bench, monkeypatch):
    clock = bench.PhaseClock()
    clock.close()                        # the search's own functions stay as they are
    clock._undo = []
    now = [0.0]
    monkeypatch.setattr(bench.time, "process_time", lambda: now[0])

    class Fake:
        def featurize(self):
            now[0] += 2.0

        def predict(self):
            now[0] += 1.0
            self.featurize()
            now[0] += 3.0

    clock._wrap(Fake, "featurize", "featurize")
    clock._wrap(Fake, "predict", "score")
    Fake().predict()                     # not active: not counted
    assert clock.seconds["score"] == clock.seconds["featurize"] == 0.0
    clock.active = True
    Fake().predict()
    assert clock.seconds["score"] == 4.0 and clock.seconds["featurize"] == 2.0
    clock.close()
    assert Fake.predict.__name__ == "predict"


def test_close_restores_the_search_functions(bench):
    before = (policy_mod.sample_population, evolution.next_generation,
              xgb_model.XGBModel._featurize, xgb_model.XGBModel.train,
              xgb_model.XGBModel.predict)
    clock = bench.PhaseClock()
    assert policy_mod.sample_population is not before[0]
    clock.close()
    after = (policy_mod.sample_population, evolution.next_generation,
             xgb_model.XGBModel._featurize, xgb_model.XGBModel.train,
             xgb_model.XGBModel.predict)
    assert after == before


def test_a_small_search_splits_its_rounds_into_phases_and_repeats_alike(bench):
    a = bench.one_search("matmul", (64, 64, 64), rounds=2, population=48, seed=0)
    b = bench.one_search("matmul", (64, 64, 64), rounds=2, population=48, seed=0)
    assert a["fingerprint"] == b["fingerprint"]
    phases = a["phases_s"]
    assert set(phases) == set(bench.PHASES)
    assert all(v >= 0 for v in phases.values())
    assert phases["sample"] > 0 and phases["mutate"] > 0 and phases["featurize"] > 0
    assert sum(phases.values()) == pytest.approx(a["round_s"], rel=1e-6)


def test_an_island_search_times_its_rounds_waits_and_training(bench):
    before = (bench.islands.IslandRun.results, xgb_model.XGBModel.train)
    a = bench.islands_search("matmul", (64, 64, 64), rounds=3, seed=0, population=512)
    b = bench.islands_search("matmul", (64, 64, 64), rounds=3, seed=0, population=512)
    assert (bench.islands.IslandRun.results, xgb_model.XGBModel.train) == before
    assert a["fingerprint"] == b["fingerprint"]
    assert a["round_s"] > a["train_s"] > 0        # the third round trains the model
    assert 0 <= a["wait_s"] < a["round_s"]


def test_a_baseline_of_the_other_mode_is_refused(bench, tmp_path):
    path = tmp_path / "serial.json"
    path.write_text('{"workloads": {}, "mode": "serial"}')
    with pytest.raises(SystemExit, match="timed serial rounds, this run times islands"):
        bench.main(["--islands", "--baseline", str(path), "--workloads", "matmul:64"])


def test_against_alternates_the_trees_in_abba_pairs_and_takes_each_pairs_ratio(
        bench, monkeypatch, tmp_path):
    other = tmp_path / "other"
    (other / "autosched").mkdir(parents=True)
    (other / "autosched" / "__init__.py").write_text("")
    calls = []
    times = {"this": iter([2.0, 2.2, 1.8]), "other": iter([1.0, 2.0, 2.0])}

    def fake_run(tree, args):
        name = "other" if tree == other.resolve() else "this"
        calls.append(name)
        return {"workloads": {"matmul:256": {"round_s": next(times[name]),
                                             "fingerprint": "f"}}}

    monkeypatch.setattr(bench, "_run_tree", fake_run)
    got = bench.bench_against(str(other), 3, ["--workloads", "matmul:256"])
    assert calls == ["this", "other", "other", "this", "this", "other"]
    r = got["matmul:256"]
    assert r["ratios"] == pytest.approx([2.0, 1.1, 0.9])
    assert r["ratio_median"] == pytest.approx(1.1) and r["same_picks"]
    with pytest.raises(SystemExit, match="--against .*: no autosched package there"):
        bench.bench_against(str(tmp_path / "nowhere"), 1, [])
