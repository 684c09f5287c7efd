"""The evolutionary search split into islands run by helper processes: reproducible,
never returning measured or duplicate states, scored as in-process, and robust to a
helper that fails."""
import gc
import pickle
import random
import sys
import threading

import pytest

import autosched as auto
from autosched import catalog  # noqa: F401  (registers built-in workloads)
from autosched.cost_model import CostModel, RandomModel, XGBModel
from autosched.features.extract import FeatureConfig
from autosched.measure import MeasureInput, MeasureResult
from autosched.search import islands
from autosched.search import policy as policy_module
from autosched.search.evolution import SearchParams
from autosched.search.gc_pause import paused_gc
from autosched.search.mutation_rules import replay

# a population large enough for islands (the threshold is lowered to it), kept small
PARALLEL = SearchParams(evolutionary_search_population=96, evolutionary_search_num_iters=2,
                        sample_init_min_population=32, parallel_min_population=64,
                        search_workers=1)


def _task():
    return auto.SearchTask(func="matmul", args=(64, 64, 64))


def _measure(policy, states, seed=0):
    rng = random.Random(seed)
    policy.record_measured([MeasureInput(policy.task, s) for s in states],
                           [MeasureResult([1e-3 * (1 + rng.random())], 0, "", 0.1, 0.0)
                            for _ in states])


def _two_rounds(seed):
    policy = auto.SketchPolicy(_task(), RandomModel(seed), params=PARALLEL, seed=seed,
                               verbose=0)
    first = policy.pick_states(8)
    _measure(policy, first)
    return policy, first, policy.pick_states(8)


def test_helpers_for_population_threshold_and_explicit_count():
    assert islands.helpers_for(SearchParams(evolutionary_search_population=100), 2) == 0
    assert islands.helpers_for(SearchParams(search_workers=2), 2) == 2
    assert islands.helpers_for(SearchParams(search_workers=0), 8) == 0
    assert islands.helpers_for(SearchParams(), 1) == 0
    auto_count = islands.helpers_for(SearchParams(), 64)
    assert 0 <= auto_count <= islands.MAX_HELPERS


def test_search_workers_must_be_a_count():
    with pytest.raises(ValueError, match="SearchParams search_workers=-1: expected an int >= 0"):
        SearchParams(search_workers=-1)


def test_parallel_rounds_are_reproducible_distinct_and_unmeasured():
    policy, first, second = _two_rounds(5)
    _, first_again, second_again = _two_rounds(5)
    assert [str(s) for s in first] == [str(s) for s in first_again]
    assert [str(s) for s in second] == [str(s) for s in second_again]
    keys = [str(s) for s in second]
    assert len(second) == 8 and len(set(keys)) == 8
    assert not set(keys) & {str(s) for s in first}
    # every pick replays from its own steps (helpers' states are rebuilt here)
    for st in second:
        assert str(replay(policy.task.compute_dag, st.transform_steps)) == str(st)


def test_run_island_returns_scored_replayable_unmeasured_steps():
    task = _task()
    policy = auto.SketchPolicy(task, params=PARALLEL, seed=0, verbose=0)
    pop = policy.sample_initial_population(12)
    measured = {str(s) for s in pop[:4]}
    out = islands.run_island(task, RandomModel(1), PARALLEL, 7, 16, [pop[0].transform_steps],
                             measured, 10, 2)
    assert len(out) == 10
    scores = [sc for sc, _ in out]
    assert scores == sorted(scores, reverse=True)
    states = [replay(task.compute_dag, steps) for _, steps in out]
    keys = {str(s) for s in states}
    assert len(keys) == 10 and not keys & measured


def test_xgb_snapshot_scores_as_the_model_and_pickles():
    task = _task()
    policy = auto.SketchPolicy(task, params=PARALLEL, seed=0, verbose=0)
    states = policy.sample_initial_population(40)
    model = XGBModel(seed=0, prior=None)
    rng = random.Random(0)
    model.update([MeasureInput(task, s) for s in states],
                 [MeasureResult([1e-3 * (1 + rng.random())], 0, "", 0.1, 0.0)
                  for _ in states])
    model.params = type(model.params)(num_warmup_sample=10, num_boost_round=20)
    expect = model.predict(task, states[:10])
    snap = pickle.loads(pickle.dumps(model.snapshot()))
    assert snap.num_records == 0
    assert snap.predict(task, states[:10]) == pytest.approx(expect, rel=1e-6)
    # before any training the copy scores with the prior, as the model does
    fresh = XGBModel(seed=0)
    assert fresh.has_prior
    prior_only = pickle.loads(pickle.dumps(fresh.snapshot()))
    assert prior_only.predict(task, states[:10]) == pytest.approx(
        fresh.predict(task, states[:10]), rel=1e-6)


def test_a_helper_keeps_its_feature_memo_across_rounds(monkeypatch):
    monkeypatch.setattr(islands, "_EXTRACTORS", {})
    monkeypatch.setattr(islands, "_SKETCHES", {})
    task = _task()
    model = XGBModel(seed=0)              # scores with its prior: featurizes every state
    first = pickle.loads(pickle.dumps(model.snapshot()))
    out1 = islands.run_island(task, first, PARALLEL, 3, 16, [], set(), 8, 2)
    kept = first.extractor
    assert len(kept._memo) > 0
    second = pickle.loads(pickle.dumps(model.snapshot()))
    assert second.extractor is not kept and len(second.extractor._memo) == 0
    out2 = islands.run_island(task, second, PARALLEL, 3, 16, [], set(), 8, 2)
    assert second.extractor is kept        # the next round starts from the kept memo
    assert out2 == out1                    # and searches exactly as with a cold one
    # another feature configuration gets its own extractor
    other = XGBModel(seed=0, feature_config=FeatureConfig(cache_line_bytes=128)).snapshot()
    islands.run_island(task, other, PARALLEL, 3, 16, [], set(), 8, 2)
    assert other.extractor is not kept and len(islands._EXTRACTORS) == 2


class _BrokenSnapshot(CostModel):
    """Scores in the tuner; its helper copy raises."""

    def predict(self, task, states):
        return [random.Random(str(s)).random() for s in states]

    def snapshot(self):
        return _Raises()


class _Raises(CostModel):
    def predict(self, task, states):
        raise RuntimeError("helper model broke")


def test_a_failing_helper_island_warns_and_the_round_goes_on():
    policy = auto.SketchPolicy(_task(), _BrokenSnapshot(), params=PARALLEL, seed=0,
                               verbose=0)
    with pytest.warns(UserWarning, match=r"search island of .* failed \(error: .*helper "
                                         r"model broke"):
        picks = policy.pick_states(8)
    assert len(picks) == 8 and len({str(s) for s in picks}) == 8


def test_models_without_snapshot_search_in_process(monkeypatch):
    class Plain(CostModel):
        def predict(self, task, states):
            return [0.5] * len(states)

    def no_islands(*args, **kw):
        raise AssertionError("a model without a snapshot started islands")

    assert Plain().snapshot() is None
    monkeypatch.setattr(policy_module, "start_islands", no_islands)
    policy = auto.SketchPolicy(_task(), Plain(), params=PARALLEL, seed=0, verbose=0)
    assert len(policy.pick_states(8)) == 8


class _SometimesNoSnapshot(RandomModel):
    """Its own snapshot(), which gives None: the helpers' samples are dropped."""

    def snapshot(self):
        return None


def test_a_snapshot_of_none_cancels_the_islands_and_searches_in_process():
    policy = auto.SketchPolicy(_task(), _SometimesNoSnapshot(0), params=PARALLEL, seed=0,
                               verbose=0)
    picks = policy.pick_states(8)
    assert len(picks) == 8 and len({str(s) for s in picks}) == 8
    assert islands._LOCK.acquire(timeout=30)        # the cancelled run let go
    islands._LOCK.release()


class _TrainingFails(RandomModel):
    """Its snapshot (where an XGBModel trains) raises once, then works."""

    def __init__(self, seed):
        super().__init__(seed)
        self.fail = True

    def snapshot(self):
        if self.fail:
            self.fail = False
            raise FloatingPointError("training diverged")
        return super().snapshot()


def test_a_failing_training_raises_and_the_next_round_gets_the_helpers():
    policy = auto.SketchPolicy(_task(), _TrainingFails(0), params=PARALLEL, seed=0,
                               verbose=0)
    with pytest.raises(FloatingPointError, match="training diverged"):
        policy.pick_states(8)
    # nothing holds the helpers (a run holding them would keep them ISLAND_TIMEOUT)
    assert islands._LOCK.acquire(timeout=30)
    islands._LOCK.release()
    picks = policy.pick_states(8)
    assert len(picks) == 8 and len({str(s) for s in picks}) == 8


def test_helpers_that_cannot_start_are_not_retried(monkeypatch):
    def no_start(self, fn, jobs, timeout):
        raise islands.WorkerError("worker process 'autosched-search-0' was not ready")

    monkeypatch.setattr(islands.WorkerPool, "map_pinned", no_start)
    monkeypatch.setattr(islands, "_START_FAILED", [])
    monkeypatch.setattr(islands, "_POOL", [])
    policy = auto.SketchPolicy(_task(), RandomModel(0), params=PARALLEL, seed=0, verbose=0)
    with pytest.warns(UserWarning, match="WorkerError: worker process .* was not ready"):
        assert len(policy.pick_states(8)) == 8
    assert islands.helpers_for(PARALLEL, 2) == 0
    assert len(policy.pick_states(8)) == 8       # in-process now, no warning


class _UnpicklableSnapshot(_BrokenSnapshot):
    def snapshot(self):
        model = RandomModel(0)
        model.hook = lambda: None          # lambdas do not pickle
        return model


def test_a_snapshot_that_cannot_be_sent_warns_and_the_round_goes_on():
    policy = auto.SketchPolicy(_task(), _UnpicklableSnapshot(), params=PARALLEL, seed=0,
                               verbose=0)
    with pytest.warns(UserWarning, match=r"search island of .* failed \((Pickling|Attribute)"):
        picks = policy.pick_states(8)
    assert len(picks) == 8 and len({str(s) for s in picks}) == 8


def _imported(name: str) -> bool:
    """A helper job: whether ``name`` is imported in this (helper) process."""
    return name in sys.modules


def _islands(task, n_helpers=2, **kw):
    return islands.start_islands(task, PARALLEL, [], n_helpers, 32, set(), 8, 2,
                                 random.Random(0), **kw)


def test_helpers_import_the_snapshot_modules_before_their_evolution(monkeypatch):
    monkeypatch.setattr(islands, "_POOL", [])
    monkeypatch.setattr(islands, "_WARMED", set())
    # a stdlib module nothing here imports: its presence in a helper is the warm-up's
    name = "colorsys"
    run = _islands(_task(), warm_before=(name,))
    run.evolve(RandomModel(0))
    done, failed = run.results()
    try:
        assert not failed and len(done) == 2
        with islands._LOCK:
            seen = [o.value for o in islands._POOL[0].map(_imported, [(name,)] * 2, 60)]
        assert seen == [True, True]
        assert islands._WARMED == {(2, name)}         # done once per pool
    finally:
        islands._POOL.pop().close()


def test_helpers_sample_before_the_snapshot_and_evolve_alike(monkeypatch):
    monkeypatch.setattr(islands, "_POOL", [])
    task = _task()
    run = _islands(task, n_helpers=1)
    try:
        # the helper's sample is done although no model was handed over yet
        assert run._sampled.wait(60)
        run.evolve(RandomModel(3))
        done, failed = run.results()
    finally:
        islands._POOL.pop().close()
    assert not failed
    # the same island as one whole search with the seed drawn for the helper
    seed = random.Random(0).randrange(2 ** 31)
    whole = islands.run_island(task, RandomModel(3), PARALLEL, seed, 32, [], set(), 8, 2)
    assert done == [whole]


def test_the_policy_trains_while_the_helpers_sample(monkeypatch):
    runs: list = []
    start = islands.start_islands

    def recording_start(*args, **kw):
        runs.append(start(*args, **kw))
        return runs[-1]

    class Watching(RandomModel):
        sampled_during_snapshot: list = []

        def snapshot(self):
            self.sampled_during_snapshot.append(runs[-1]._sampled.wait(60))
            return super().snapshot()

    monkeypatch.setattr(policy_module, "start_islands", recording_start)
    model = Watching(0)
    policy = auto.SketchPolicy(_task(), model, params=PARALLEL, seed=0, verbose=0)
    assert len(policy.pick_states(8)) == 8
    assert model.sampled_during_snapshot == [True]


def test_an_evolution_job_without_its_sample_fails_clearly():
    with pytest.raises(RuntimeError, match="no longer holds the island's sampled "
                                           "population .*restarted"):
        islands.evolve_island_job(-1, pickle.dumps(RandomModel(0)))


def _scores_and_modules(payload):
    """A helper job: the unpickled snapshot's scores, and which modules are imported."""
    model, task, states = pickle.loads(payload)
    return model.predict(task, states), "xgboost" in sys.modules, "sklearn" in sys.modules


def test_helpers_score_a_trained_snapshot_alike_without_importing_xgboost(monkeypatch):
    """A snapshot's booster travels pickled and scores through xgboost's C API in the
    helper: the same scores, and neither the xgboost package nor scikit-learn imported
    (the helpers are fresh interpreters)."""
    monkeypatch.setattr(islands, "_POOL", [])
    monkeypatch.setattr(islands, "_WARMED", set())
    task = _task()
    states = auto.SketchPolicy(task, seed=0, verbose=0).sample_initial_population(24)
    model = XGBModel(seed=0)
    model.params = type(model.params)(prior_warmup_sample=10, num_boost_round=5)
    rng = random.Random(0)
    model.update([MeasureInput(task, s) for s in states[:16]],
                 [MeasureResult([1e-3 * (1 + rng.random())], 0, "", 0.1, 0.0)
                  for _ in states[:16]])
    assert model.snapshot_modules() == () and model.upcoming_modules() == ()
    snap = model.snapshot()
    assert snap.booster is not None
    try:
        with islands._LOCK:
            out = islands._pool(1).map(_scores_and_modules,
                                       [(pickle.dumps((snap, task, states[16:])),)], 120)
        assert out[0].status == "ok", out[0].value
        scores, has_xgboost, has_sklearn = out[0].value
        assert not has_xgboost and not has_sklearn
        assert scores == snap.predict(task, states[16:])
    finally:
        islands._POOL.pop().close()


class _Upcoming(RandomModel):
    """A random model whose later snapshots would need ``colorsys`` in the helpers."""

    def upcoming_modules(self):
        return ("colorsys",)


def test_helpers_import_the_upcoming_modules_after_their_islands(monkeypatch):
    monkeypatch.setattr(islands, "_POOL", [])
    monkeypatch.setattr(islands, "_WARMED", set())
    task = _task()
    run = _islands(task, warm_after=("colorsys",))
    run.evolve(RandomModel(0))
    done, failed = run.results()
    try:
        assert not failed and len(done) == 2
        with islands._LOCK:          # the import runs under the lock, after the islands
            seen = [o.value for o in islands._POOL[0].map(_imported, [("colorsys",)] * 2, 60)]
        assert seen == [True, True]
        assert islands._WARMED == {(2, "colorsys")}
    finally:
        islands._POOL.pop().close()


def test_a_round_does_not_wait_for_the_helpers_upcoming_imports(monkeypatch):
    released = threading.Event()
    calls: list = []

    def slow_import(n_helpers, modules):
        # True only if the round's picks were returned while this import was running
        calls.append((n_helpers, tuple(modules), released.wait(20)))

    monkeypatch.setattr(islands, "_import_in_helpers", slow_import)
    policy = auto.SketchPolicy(_task(), _Upcoming(0), params=PARALLEL, seed=0, verbose=0)
    picks = policy.pick_states(8)
    released.set()
    with islands._LOCK:              # the background thread is done with the pool
        pass
    assert len(picks) == 8
    assert calls == [(1, ("colorsys",), True)]


class _GcSpy(CostModel):
    """Records whether the cyclic collector was on while it scored."""

    def __init__(self):
        self.seen = set()

    def predict(self, task, states):
        self.seen.add(gc.isenabled())
        return [random.Random(str(s)).random() for s in states]


def test_the_search_runs_with_the_cyclic_collector_paused():
    assert gc.isenabled()
    model = _GcSpy()
    policy = auto.SketchPolicy(_task(), model, params=SearchParams(
        evolutionary_search_population=32, evolutionary_search_num_iters=1,
        sample_init_min_population=16), seed=0, verbose=0)
    assert len(policy.pick_states(4)) == 4
    assert model.seen == {False} and gc.isenabled()
    with paused_gc():
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()          # the outer pause still holds
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()          # the caller's choice is kept
    finally:
        gc.enable()


def test_islands_never_handed_a_snapshot_time_out_and_say_so(monkeypatch):
    monkeypatch.setattr(islands, "_POOL", [])
    # long enough for the sample job (timed from a ready helper), short for the wait
    monkeypatch.setattr(islands, "ISLAND_TIMEOUT", 3.0)
    run = _islands(_task(), n_helpers=1)
    try:
        done, failed = run.results()
    finally:
        islands._POOL.pop().close()
    assert run._sampled.is_set()
    assert done == [] and failed == ["TimeoutError: no model snapshot within 3.0 s of "
                                     "the islands' start"]
