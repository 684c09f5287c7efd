"""The next round's random sample, prepared ahead (search.prep): it is the sample the
round would draw itself, whether the builds' idle tail prepared it or not."""
import random

import autosched as auto
from autosched import (
    catalog,  # noqa: F401  (registers built-in workloads)
    idle,
)
from autosched.cost_model import RandomModel, XGBModel
from autosched.features.extract import FeatureExtractor
from autosched.search.evolution import SearchParams, sample_population
from autosched.search.prep import PreparedSample

SERIAL = SearchParams(evolutionary_search_population=48, evolutionary_search_num_iters=1,
                      sample_init_min_population=16, search_workers=0)


def _task():
    return auto.SearchTask(func="matmul", args=(64, 64, 64))


def test_a_prepared_sample_is_the_sample_drawn_at_once_and_fills_the_memo():
    task = _task()
    sketches = auto.SketchPolicy(task, seed=0, verbose=0).generate_sketches()
    drawn = sample_population(sketches, 150, random.Random(11), 2, 8)
    ext = FeatureExtractor()
    prep = PreparedSample("k", sketches, 150, 11, 2, 8, ext)
    pieces = 0
    while prep.step():
        pieces += 1
    assert pieces > 3 and not prep.step()
    assert [str(s) for s in prep.population()] == [str(s) for s in drawn]
    assert [str(s) for s in PreparedSample("k", sketches, 150, 11, 2, 8).population()] == \
        [str(s) for s in drawn]
    # the memo holds every sampled state's rows, equal to a fresh extractor's
    assert len(ext._memo) == len(drawn) == 150
    fresh = FeatureExtractor().featurize_many(drawn)
    assert all((a == b).all() for a, b in zip(ext.featurize_many(drawn), fresh))
    assert prep.matches("k", 150, 11)
    assert not prep.matches("k", 151, 11) and not prep.matches("k", 150, 12)
    assert not prep.matches("other", 150, 11)


def _rounds(tail: bool, model):
    policy = auto.SketchPolicy(_task(), model, params=SERIAL, seed=3, verbose=0)
    picks = [policy.pick_states(6)]
    for _ in range(2):
        prep = policy._prep
        assert prep is not None and prep.step in idle.offered()     # offered to the tail
        if tail:
            while idle.work_in_idle():
                pass
            assert not prep.step() and prep.step not in idle.offered()
        picks.append(policy.pick_states(6))
        assert prep.step not in idle.offered()               # taken back by the round
    return [[str(s) for s in p] for p in picks]


def test_the_next_round_is_the_same_whether_the_tail_prepared_it_or_not():
    assert _rounds(True, RandomModel(0)) == _rounds(False, RandomModel(0))
    assert _rounds(True, XGBModel(seed=0)) == _rounds(False, XGBModel(seed=0))


def test_offered_work_runs_in_order_and_a_dropped_owner_s_work_is_not_done():
    class Work:
        def __init__(self, name, n):
            self.name, self.n = name, n

        def step(self):
            log.append(self.name)
            self.n -= 1
            return self.n > 0

    log: list = []
    a, b, c = Work("a", 2), Work("b", 1), Work("c", 5)
    for w in (a, b, c):
        idle.offer(w.step)
    idle.offer(a.step)                       # offered once
    idle.withdraw(c.step)
    del b                                    # nobody keeps it: its work is dropped
    while idle.work_in_idle():
        pass
    assert log == ["a", "a"] and idle.offered() == []
