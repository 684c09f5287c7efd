"""Confirming the best few while tuning (``TuningOptions.confirm_top_k``, not in TVM): a
candidate that enters its task's best k is run a second time from the same build; both
runs are logged, the candidate costs the slower figure (for the search, the cost model
and the ranking of the log), and the faster one is kept for the re-timing at the end.

Measurements are faked (nothing is compiled; a cost from a hash of the state, halved on
the first run of "lucky" states), so the expected confirmations can be replayed here."""
import collections
import zlib

import autosched_helpers  # noqa: F401  (registers the steps_test_* workloads)
import pytest
from autosched_helpers import SMALL_SEARCH, Fine

import autosched as auto
from autosched.measure.measurer import MeasureErrorNo, MeasureResult, ProgramMeasurer
from autosched.tuning import best_state, default_steps_repr, rank_records, retimed_cost
from records import load_records

K = 2


def make_task():
    return auto.SearchTask(func="steps_test_matmul", args=(16, 16, 16))


def is_lucky(key: str) -> bool:
    return zlib.crc32(key.encode()) % 3 == 0


class LuckyOnce(Fine):
    """The first run of a lucky state (one in three, by hash) reads half its cost; every
    other run reads its cost."""

    def __init__(self):
        self.runs: collections.Counter = collections.Counter()

    def run(self, inputs, build_results, verbose=0):
        out = super().run(inputs, build_results, verbose)
        for inp, res in zip(inputs, out):
            key = str(inp.state)
            if not self.runs[key] and is_lucky(key):
                res.costs[:] = [res.costs[0] / 2]
            self.runs[key] += 1
        return out


def tune(tmp_path, fake, trials=16, **kw):
    task = make_task()
    log = tmp_path / "mm.json"
    opts = auto.TuningOptions(num_measure_trials=trials, num_measures_per_round=4, verbose=0,
                              builder=fake, runner=fake,
                              measure_callbacks=[auto.RecordToFile(str(log))], **kw)
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0)
    stats = task.tune(opts, policy)
    return task, policy, stats, list(load_records(log)), str(log)


def figures_by_state(recs) -> dict:
    by_state = collections.defaultdict(list)
    for r in recs:
        by_state[repr(r.input.steps)].append(r.mean_cost)
    return by_state


def replay(recs, by_state, top: list) -> tuple:
    """The states the rule confirms in ``recs`` (one call's records, in order), starting
    from the settled best ``top``: a first figure under the k-th best settled cost is
    confirmed and settles at the slower of its figures.  (confirmed keys, final top)."""
    expected = set()
    for key in dict.fromkeys(repr(r.input.steps) for r in recs):   # first runs, in order
        if len(top) < K or by_state[key][0] < top[-1]:
            expected.add(key)
            top = sorted(top + [max(by_state[key])])[:K]
    return expected, top


def test_a_candidate_entering_the_best_k_is_run_twice_and_costs_its_slower_figure(tmp_path):
    fake = LuckyOnce()
    task, policy, stats, recs, log = tune(tmp_path, fake, confirm_top_k=K)
    by_state = figures_by_state(recs)
    twice = {k for k, v in by_state.items() if len(v) == 2}
    assert stats.trials == 16 and len(by_state) == 16
    assert stats.confirmed == len(twice) and len(recs) == 16 + len(twice)
    assert all(len(v) <= 2 for v in by_state.values())
    expected, _ = replay(recs, by_state, [])
    assert twice == expected and len(twice) >= K + 1
    # the policy (search seeds, cost model, re-timing) has the slower figure, and keeps
    # the faster one with the re-timing figures
    settled = {k: max(v) for k, v in by_state.items()}
    measured = {default_steps_repr(st): c for c, st in policy.measured}
    assert measured == settled
    assert {default_steps_repr(st): figs for st, figs in
            ((s, policy.retimed_figures.get(str(s))) for _, s in policy.measured) if figs} == \
        {k: [min(v)] for k, v in by_state.items() if len(v) == 2}
    # a lucky first figure was confirmed at its true cost, and the log ranks by it
    lucky = [k for k in twice if by_state[k][0] < by_state[k][1]]
    assert lucky
    ranked = rank_records([r for r in recs if r.is_valid])
    firsts = [retimed_cost(by_state[repr(r.input.steps)]) for r in ranked]
    assert firsts == sorted(firsts)
    state, rec = best_state(task, log)
    assert retimed_cost(by_state[repr(rec.input.steps)]) == min(settled.values())


def test_a_second_tune_call_confirms_only_what_beats_the_first_calls_best(tmp_path):
    # the best k carry over: the measurer of the second call starts from the settled
    # costs of the policy's earlier states (not from an empty list, which would run its
    # first k valid candidates twice whatever they cost)
    fake = LuckyOnce()
    task, policy, first, recs1, log = tune(tmp_path, fake, trials=12, confirm_top_k=K)
    opts = auto.TuningOptions(num_measure_trials=12, num_measures_per_round=4, verbose=0,
                              builder=fake, runner=fake, confirm_top_k=K,
                              measure_callbacks=[auto.RecordToFile(log)])
    second = task.tune(opts, policy)
    recs = list(load_records(log))
    recs2 = recs[len(recs1):]
    by_state = figures_by_state(recs)
    confirmed1, top = replay(recs1, by_state, [])
    confirmed2, _ = replay(recs2, by_state, top)
    assert second.confirmed == len(confirmed2) == \
        sum(1 for v in figures_by_state(recs2).values() if len(v) == 2)
    # what an empty start would have confirmed: at least the first K of the call
    assert len(replay(recs2, by_state, [])[0]) > len(confirmed2)
    # a preloaded log carries over the same way
    fresh = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=1, verbose=0,
                              init_search_callbacks=[auto.PreloadMeasuredStates(log)])
    measurer = ProgramMeasurer(fake, fake, confirm_top_k=K, verbose=0)
    assert measurer._measured_before(fresh) == replay(recs, by_state, [])[1] == \
        sorted(retimed_cost(v) for v in by_state.values())[:K]


def test_confirmation_is_off_by_default(tmp_path):
    _, policy, stats, recs, _ = tune(tmp_path, LuckyOnce(), trials=8)
    assert stats.confirmed == 0 and len(recs) == 8 and not policy.retimed_figures
    assert len({repr(r.input.steps) for r in recs}) == 8


class FailsSecondRun(Fine):
    """Every second run of a state fails (a flaky kernel)."""

    def __init__(self):
        self.runs: collections.Counter = collections.Counter()

    def run(self, inputs, build_results, verbose=0):
        out = super().run(inputs, build_results, verbose)
        for k, inp in enumerate(inputs):
            self.runs[str(inp.state)] += 1
            if self.runs[str(inp.state)] == 2:
                out[k] = MeasureResult.failed(MeasureErrorNo.RUNTIME_DEVICE, "crashed", 0.0)
        return out


def test_a_failed_second_run_fails_the_candidate(tmp_path):
    _, policy, stats, recs, _ = tune(tmp_path, FailsSecondRun(), trials=4, confirm_top_k=K)
    # with nothing settled yet, every candidate enters the best k, and each fails again
    assert stats.confirmed == 4 and stats.errors == 4 and len(recs) == 8
    assert [r.result.error_no for r in recs[4:]] == [MeasureErrorNo.RUNTIME_DEVICE] * 4
    assert policy.measured == [] and not policy.retimed_figures


def test_confirm_top_k_must_be_a_count():
    with pytest.raises(ValueError, match="confirm_top_k"):
        auto.TuningOptions(confirm_top_k=-1)
    with pytest.raises(ValueError, match="ProgramMeasurer confirm_top_k"):
        ProgramMeasurer(Fine(), Fine(), confirm_top_k=1.5)
