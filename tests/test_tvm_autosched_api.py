"""TVM auto-scheduler API parity (issue 12, items 1 and 5): PreloadMeasuredStates and
``init_search_callbacks`` (a re-run reuses a log only when asked, and says so),
``load_best_record`` returning ``(MeasureInput, MeasureResult)`` with a replayable State,
and parameters TVM accepts that must work or raise (``print_mode``, ``layout_rewrite``).

Measurements are faked (a builder that builds nothing, a runner whose cost is a hash of
the state), so the tests are fast and deterministic.
"""
import importlib
import json
import statistics
import subprocess
import sys

import autosched_helpers  # noqa: F401  (registers the steps_test_* workloads)
import pytest
from autosched_helpers import SMALL_SEARCH, Fine

import autosched as auto
import compiler
from autosched import catalog  # noqa: F401  (registers the built-in workloads)
from autosched.default_state import default_state
from autosched.measure.runner import RunConfig, more_calls
from autosched.steps import serialize
from autosched.tuning import best_state, default_steps_repr, preload, rank_records, retimed_cost
from compiler import te
from records import MeasureInputRecord, Record, load_records, save_records
from records import load_best_record as load_best_raw

KEY_ARGS = (16, 16, 16)




def make_task():
    return auto.SearchTask(func="steps_test_matmul", args=KEY_ARGS)


def options(log, trials=4, verbose=0):
    fine = Fine()
    return auto.TuningOptions(num_measure_trials=trials, num_measures_per_round=4,
                              verbose=verbose, builder=fine, runner=fine,
                              measure_callbacks=[auto.RecordToFile(str(log))])


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "mm.json"
    task = make_task()
    task.tune(options(path, trials=8), auto.SketchPolicy(task, params=SMALL_SEARCH,
                                                         seed=0, verbose=0))
    assert len(list(load_records(path))) == 8
    return path


def steps_of(path) -> list:
    return [r.input.steps for r in load_records(path)]


# ------------------------------------------------------------ PreloadMeasuredStates
def test_task_tune_does_not_preload_by_itself_and_says_how_to_resume(log, capsys):
    task = make_task()
    stats = task.tune(options(log, verbose=1), auto.SketchPolicy(task, params=SMALL_SEARCH,
                                                                 seed=0, verbose=0))
    assert stats.preloaded == 0
    hints = [line for line in capsys.readouterr().out.splitlines() if "exists" in line]
    assert len(hints) == 1
    assert f"init_search_callbacks=[auto.PreloadMeasuredStates({str(log)!r})]" in hints[0]
    # verbose=0: silent
    task.tune(options(log, verbose=0), auto.SketchPolicy(task, params=SMALL_SEARCH,
                                                         seed=1, verbose=0))
    assert "exists" not in capsys.readouterr().out


def test_preload_callback_resumes_without_measuring_a_state_twice(log, capsys):
    task = make_task()
    before = steps_of(log)
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=1,
                               init_search_callbacks=[auto.PreloadMeasuredStates(log)])
    assert policy.preloaded == 8 and len(policy.measured_keys) == 8
    assert f"SearchPolicy: Loaded 8 measured states of {task.workload_key}" in \
        capsys.readouterr().out
    stats = task.tune(options(log, verbose=1), policy)
    assert stats.preloaded == 8 and stats.trials == 4
    assert "exists" not in capsys.readouterr().out       # it was asked: no hint
    after = steps_of(log)
    assert len(after) == 12 and len(set(after)) == 12 and after[:8] == before


def test_a_policy_that_already_has_the_states_gets_no_hint(log, capsys):
    task = make_task()
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0)
    assert preload(policy, str(log)) == 8
    task.tune(options(log, verbose=1), policy)
    assert "exists" not in capsys.readouterr().out
    assert len(set(steps_of(log))) == 12


def test_preload_of_a_missing_log_loads_nothing(tmp_path):
    policy = auto.SketchPolicy(make_task(), params=SMALL_SEARCH, verbose=0, init_search_callbacks=[
        auto.PreloadMeasuredStates(tmp_path / "absent.json")])
    assert policy.preloaded == 0 and not policy.measured_keys


def test_preload_loads_only_the_policys_task(log):
    other = auto.SearchTask(func="steps_test_matmul", args=(8, 8, 8))
    policy = auto.SketchPolicy(other, params=SMALL_SEARCH, verbose=0,
                               init_search_callbacks=[auto.PreloadMeasuredStates(log)])
    assert policy.preloaded == 0


def test_init_search_callbacks_are_checked():
    task = make_task()
    with pytest.raises(TypeError, match=r"init_search_callbacks\[1\]=3: expected a "
                                        r"SearchCallback"):
        auto.SketchPolicy(task, params=SMALL_SEARCH,
                          init_search_callbacks=[auto.PreloadMeasuredStates("x"), 3])
    with pytest.raises(TypeError, match="init_search_callbacks=.*expected a list"):
        auto.SketchPolicy(task, params=SMALL_SEARCH,
                          init_search_callbacks=auto.PreloadMeasuredStates("x"))
    with pytest.raises(TypeError, match=r"PreloadMeasuredStates filename=3: expected a path"):
        auto.PreloadMeasuredStates(3)


def test_a_custom_search_callback_runs_once_at_creation():
    seen = []

    class Spy(auto.SearchCallback):
        def callback(self, policy):
            seen.append(policy)

    policy = auto.SketchPolicy(make_task(), params=SMALL_SEARCH,
                                         verbose=0, init_search_callbacks=[Spy()])
    assert seen == [policy]
    with pytest.raises(NotImplementedError, match="SearchCallback.callback"):
        auto.SketchPolicy(make_task(), params=SMALL_SEARCH,
                                    init_search_callbacks=[auto.SearchCallback()])


# ------------------------------------------------------------ load_best_record
def test_load_best_record_returns_tvm_measure_input_and_result(log):
    task = make_task()
    inp, res = auto.load_best_record(str(log), task.workload_key)
    raw = load_best_raw(log, task.workload_key)
    assert isinstance(inp, auto.MeasureInput) and isinstance(res, auto.MeasureResult)
    assert inp.task.workload_key == task.workload_key and str(inp.task.target) == raw.target
    assert inp.task.hardware_params.to_list() == list(raw.input.hardware_params)
    assert isinstance(inp.state, auto.State)
    assert _thaw([s.to_record() for s in inp.state.transform_steps]) == \
        _thaw(raw.input.steps)
    assert res.costs == list(raw.result.costs) and res.error_no == 0 and res.error_msg == ""
    assert res.all_cost == raw.result.all_cost and res.timestamp == raw.result.timestamp
    # replayable: the state applies and is the one apply_best uses
    sch, tensors = inp.task.compute_dag.apply_steps_from_state(inp.state)
    assert len(tensors) == 3
    assert str(inp.state) == str(auto.tuning.best_state(task, str(log))[0])
    # a target filter: same kind matches, another kind does not
    assert auto.load_best_record(str(log), task.workload_key, "llvm")[1].costs == res.costs
    assert auto.load_best_record(str(log), task.workload_key, "cuda") == (None, None)


def _thaw(x):
    return [_thaw(v) for v in x] if isinstance(x, (list, tuple)) else x


def test_load_best_record_without_a_valid_record_is_none_none(log, tmp_path):
    assert auto.load_best_record(str(log), json.dumps(["steps_test_matmul", 1, 2, 3])) == \
        (None, None)
    failed = [Record(r.input, r.result.__class__((1e10,), 4, 0.1, 1.0))
              for r in load_records(log)]
    bad = tmp_path / "failed.json"
    save_records(bad, failed)
    assert auto.load_best_record(str(bad), make_task().workload_key) == (None, None)


def test_load_best_record_of_an_unknown_workload_raises_its_workload_error(log, tmp_path):
    good = next(iter(load_records(log)))
    key = json.dumps(["no_such_workload", 1])
    path = tmp_path / "unknown.json"
    save_records(path, [Record(MeasureInputRecord(key, good.target, good.input.hardware_params,
                                                  steps=good.input.steps), good.result)])
    with pytest.raises(auto.WorkloadError, match="unknown workload 'no_such_workload'"):
        auto.load_best_record(str(path), key)


def test_load_best_record_skips_a_cheaper_record_that_does_not_replay(log, tmp_path):
    task = make_task()
    good = load_best_raw(log, task.workload_key)
    stale = Record(MeasureInputRecord(good.workload_key, good.target,
                                      good.input.hardware_params,
                                      steps=(("SP", 99, 0, 8, (2,), 1),)),
                   good.result.__class__((1e-9,), 0, 0.1, 1.0))
    path = tmp_path / "stale.json"
    save_records(path, [stale, good])
    with pytest.warns(UserWarning, match="no longer applies"):
        inp, res = auto.load_best_record(str(path), task.workload_key)
    assert res.costs == list(good.result.costs)
    save_records(path, [stale], append=False)
    with pytest.raises(auto.AutoSchedError, match="none of the 1 valid records"), \
            pytest.warns(UserWarning):
        auto.load_best_record(str(path), task.workload_key)


def test_search_task_and_load_best_record_accept_a_registered_dag_key(log, tmp_path):
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    key = auto.register_workload_tensors(json.dumps(["0123456789abcdef", [16, 16], [16, 16]]),
                                         [A, B, C])
    task = auto.SearchTask(workload_key=key)
    assert task.workload_key == key and len(task.compute_dag.tensors) == 3
    good = load_best_raw(log, make_task().workload_key)
    path = tmp_path / "dag.json"
    save_records(path, [Record(MeasureInputRecord(key, good.target, good.input.hardware_params,
                                                  steps=good.input.steps), good.result)])
    inp, res = auto.load_best_record(str(path), key)
    assert inp.task.workload_key == key and res.costs == list(good.result.costs)
    inp.task.compute_dag.apply_steps_from_state(inp.state)


# ------------------------------------------------------------ accepted parameters
def test_print_best_modes(log):
    task = make_task()
    assert task.print_best(str(log), print_mode="schedule") == task.print_best(str(log))
    with pytest.raises(ValueError, match=r"print_mode='cuda': CUDA is not supported"):
        task.print_best(str(log), print_mode="cuda")
    with pytest.raises(ValueError, match=r"print_mode='python': expected one of 'schedule'"):
        task.print_best(str(log), print_mode="python")


def test_apply_steps_from_state_layout_rewrite(log):
    """Every LayoutRewriteOption value is accepted (the rewrite itself is tested in
    test_layout_rewrite.py); this workload has no layout-free weight, so none changes it."""
    inp, _ = auto.load_best_record(str(log), make_task().workload_key)
    dag = inp.task.compute_dag
    for option in (False, 0, True, 1, 2, auto.LayoutRewriteOption.INSERT_TRANSFORM_STAGE):
        sch, tensors = dag.apply_steps_from_state(inp.state, layout_rewrite=option)
        assert [t.op for t in tensors] == [t.op for t in dag.tensors]
    with pytest.raises(auto.AutoSchedError, match=r"layout_rewrite=7: expected a "
                                                  "LayoutRewriteOption"):
        dag.apply_steps_from_state(inp.state, layout_rewrite=7)


def test_reachable_as_compiler_auto_scheduler():
    """TVM scripts write ``tvm.auto_scheduler.SearchTask`` after ``import tvm``."""
    assert compiler.auto_scheduler is auto
    assert sys.modules["compiler.auto_scheduler"] is auto
    assert compiler.auto_scheduler.SearchTask is auto.SearchTask


# ------------------------------------------------------------ honest re-timing
class Lucky(Fine):
    """The first measurement of each state is its hash cost; later ones of the state that
    measured cheapest are 10x slower (it was a lucky reading)."""

    def __init__(self):
        self.seen: dict = {}

    def run(self, inputs, build_results, verbose=0):
        out = super().run(inputs, build_results, verbose)
        for inp, res in zip(inputs, out):
            key = str(inp.state)
            if key in self.seen and self.seen[key] == min(self.seen.values()):
                res.costs[:] = [res.costs[0] * 10]
            self.seen.setdefault(key, res.costs[0])
        return out


def test_retime_measures_the_best_again_and_apply_best_ranks_by_retimed_cost(tmp_path):
    task = make_task()
    log = tmp_path / "mm.json"
    lucky = Lucky()
    opts = auto.TuningOptions(num_measure_trials=8, num_measures_per_round=4, verbose=0,
                              builder=lucky, runner=lucky, retime_top_k=3, retime_rounds=2,
                              measure_callbacks=[auto.RecordToFile(str(log))])
    stats = task.tune(opts, auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0))
    recs = list(load_records(log))
    assert stats.trials == 8 and stats.retimed == 6 and len(recs) == 14
    first = {}
    for r in recs[:8]:
        first[repr(r.input.steps)] = r.mean_cost
    luckiest = min(first, key=first.get)
    # the luckiest state measured 10x slower twice more: its second-lowest figure is no
    # longer the best
    state, rec = best_state(task, str(log))
    assert repr(rec.input.steps) != luckiest
    assert stats.best_cost == sorted(first.values())[1]
    assert all(r.input.layout_rewrite_option == int(task.layout_rewrite_option) for r in recs)


class SlowFirstDefault(Fine):
    """The default schedule's state measures 5 ms the first time (a slow moment of the
    machine) and 0.5 ms when measured again; every other state costs its hash."""

    def __init__(self, default_key):
        self.default_key, self.seen = default_key, set()

    def run(self, inputs, build_results, verbose=0):
        out = super().run(inputs, build_results, verbose)
        for inp, res in zip(inputs, out):
            if str(inp.state) == self.default_key:
                res.costs[:] = [5e-3 if self.default_key not in self.seen else 5e-4]
                self.seen.add(self.default_key)
        return out


def test_the_default_state_is_retimed_beside_the_best_and_can_win(tmp_path):
    task = auto.SearchTask(func="matmul", args=(32, 32, 32))
    key = str(default_state(task))
    fake = SlowFirstDefault(key)
    log = tmp_path / "mm.json"
    opts = auto.TuningOptions(num_measure_trials=8, num_measures_per_round=4, verbose=0,
                              builder=fake, runner=fake, retime_top_k=2, retime_rounds=2,
                              measure_callbacks=[auto.RecordToFile(str(log))])
    stats = task.tune(opts, auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0))
    assert stats.retimed == 6                  # the best two and the default, twice each
    state, rec = best_state(task, str(log))
    assert str(state) == key and stats.best_cost == 5e-4


class LuckyThenSlow(Fine):
    """The default schedule's state always measures 1 ms; every other state measures
    half its hash cost (0.5-1 ms) the first ``lucky`` times and 2 ms after that."""

    def __init__(self, default_key, lucky):
        self.default_key, self.lucky = default_key, lucky
        self.config = RunConfig(number=3)
        self.ran: list = []
        self.means: list = []           # config.call_mean of each measurement

    def run(self, inputs, build_results, verbose=0):
        out = super().run(inputs, build_results, verbose)
        for inp, res in zip(inputs, out):
            key = str(inp.state)
            seen = self.ran.count(key)
            self.ran.append(key)
            self.means.append(self.config.call_mean)
            if key == self.default_key:
                res.costs[:] = [1e-3]
            elif seen >= self.lucky:
                res.costs[:] = [2e-3]
            else:
                res.costs[:] = [res.costs[0] / 2]
        return out


def tune_lucky(tmp_path, lucky, confirm_rounds):
    task = auto.SearchTask(func="matmul", args=(32, 32, 32))
    key = str(default_state(task))
    fake = LuckyThenSlow(key, lucky)
    log = tmp_path / f"mm_{lucky}_{confirm_rounds}.json"
    opts = auto.TuningOptions(num_measure_trials=8, num_measures_per_round=4, verbose=0,
                              builder=fake, runner=fake, retime_top_k=2, retime_rounds=3,
                              confirm_rounds=confirm_rounds,
                              measure_callbacks=[auto.RecordToFile(str(log))])
    stats = task.tune(opts, auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0))
    return task, key, fake, stats, best_state(task, str(log))[0]


def test_a_tuned_state_leading_the_retiming_is_confirmed_against_the_default(tmp_path):
    """Four lucky figures (its trial and three re-timings) put a tuned state ahead of the
    default; five more rounds of just the two show it at 2 ms, and the default stays."""
    task, key, fake, stats, best = tune_lucky(tmp_path, lucky=4, confirm_rounds=5)
    assert stats.retimed == 3 * 3 + 2 * 5          # 2 best + default x 3, then 2 x 5
    duel = fake.ran[-10:]
    assert duel.count(key) == 5 and len(set(duel)) == 2
    assert all(len(set(duel[i:i + 2])) == 2 for i in range(0, 10, 2))   # both per round
    # the confirmation's figures are means of their calls, the re-timing's medians
    assert fake.means[-10:] == [True] * 10 and not any(fake.means[:-10])
    assert fake.config.call_mean is False and fake.config.number == 3    # restored
    assert str(best) == key and stats.best_cost == 1e-3
    # without the confirmation the lucky state would have been the answer
    _, _, _, stats0, best0 = tune_lucky(tmp_path, lucky=4, confirm_rounds=0)
    assert stats0.retimed == 9 and str(best0) != key and stats0.best_cost < 1e-3


def test_a_really_faster_tuned_state_survives_its_confirmation(tmp_path):
    task, key, fake, stats, best = tune_lucky(tmp_path, lucky=100, confirm_rounds=5)
    assert stats.retimed == 9 + 10
    assert str(best) != key and stats.best_cost < 1e-3


def test_no_confirmation_when_the_default_leads(tmp_path):
    """Tuned states at 2 ms from their first figure: the default leads after the
    re-timing rounds and nothing more is measured."""
    task, key, fake, stats, best = tune_lucky(tmp_path, lucky=0, confirm_rounds=5)
    assert stats.retimed == 2 * 3 and str(best) == key     # the default is one of the 2 best


def test_a_second_tune_call_retimes_from_the_figures_of_the_first(tmp_path):
    """The policy keeps its re-timing figures, so a later tune() call of it ranks on the
    figures its log holds (here the default's 1 + 3 + 5, then 3 + 5 more)."""
    task = auto.SearchTask(func="matmul", args=(32, 32, 32))
    key = str(default_state(task))
    fake = LuckyThenSlow(key, lucky=4)
    log = tmp_path / "twice.json"
    policy = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0)
    for trials in (8, 4):
        task.tune(auto.TuningOptions(
            num_measure_trials=trials, num_measures_per_round=4, verbose=0, builder=fake,
            runner=fake, retime_top_k=2, retime_rounds=3, confirm_rounds=5,
            measure_callbacks=[auto.RecordToFile(str(log))]), policy)
        in_log = [r.mean_cost for r in load_records(log)
                  if repr(r.input.steps) == default_steps_repr(default_state(task))]
        assert policy.retimed_figures[key] == in_log[1:]
    assert len(in_log) >= 1 + 2 * 3


def test_confirm_rounds_must_be_a_count():
    with pytest.raises(ValueError, match="confirm_rounds"):
        auto.TuningOptions(confirm_rounds=-1)


class CountingRunner(Fine):
    """Counts builds per state and records the calls per measurement (``config.number``)
    each run is made with, as a LocalRunner carries it."""

    def __init__(self):
        self.config = RunConfig(number=3)
        self.builds: dict = {}
        self.numbers: list = []

    def build(self, inputs, verbose=0):
        for inp in inputs:
            self.builds[str(inp.state)] = self.builds.get(str(inp.state), 0) + 1
        return super().build(inputs, verbose)

    def run(self, inputs, build_results, verbose=0):
        self.numbers += [self.config.number] * len(inputs)
        return super().run(inputs, build_results, verbose)


def test_retiming_builds_each_state_once_and_times_more_calls(tmp_path):
    """The re-timed states are built once and their objects run every round, each
    measurement with RETIME_CALLS calls; the runner's own setting is restored after."""
    task = make_task()
    fake = CountingRunner()
    opts = auto.TuningOptions(num_measure_trials=8, num_measures_per_round=4, verbose=0,
                              builder=fake, runner=fake, retime_top_k=3, retime_rounds=3,
                              measure_callbacks=[auto.RecordToFile(str(tmp_path / "l.json"))])
    stats = task.tune(opts, auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0, verbose=0))
    assert stats.trials == 8 and stats.retimed == 9          # 3 states x 3 rounds
    assert fake.numbers == [3] * 8 + [auto.tuning.RETIME_CALLS] * 9
    assert fake.config.number == 3
    assert sorted(fake.builds.values()) == [1] * 5 + [2] * 3  # built for the trial, then once


def test_more_calls_raises_only_a_run_config_below_it():
    runner = CountingRunner()
    with more_calls(runner, 10):
        assert runner.config.number == 10
    assert runner.config.number == 3
    runner.config = RunConfig(number=20)
    with more_calls(runner, 10):
        assert runner.config.number == 20
    with more_calls(runner, 10, mean=True):                   # enough calls: means only
        assert runner.config.number == 20 and runner.config.call_mean
    assert runner.config == RunConfig(number=20)
    plain = Fine()
    with more_calls(plain, 10):                               # no RunConfig: left alone
        assert not hasattr(plain, "config")


def state_records(task, state, costs) -> list:
    """One record of ``state`` per cost, in order."""
    return [serialize.encode_record(auto.MeasureInput(task, state),
                                    auto.MeasureResult([c], 0, "", 0.0, 1.0)) for c in costs]


def test_retimed_states_rank_before_states_measured_once():
    task = make_task()
    states = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0,
                               verbose=0).sample_initial_population(2)
    once, thrice = states
    recs = state_records(task, once, [1e-3]) + state_records(task, thrice, [9e-4, 2e-3, 3e-3])
    # measured once at 1 ms vs re-timed at 2 ms (retimed_cost): the re-timed one ranks first
    assert [repr(r.input.steps) for r in rank_records(recs)] == \
        [repr(recs[1].input.steps), repr(recs[0].input.steps)]


def test_retimed_cost_is_the_second_lowest_figure_of_a_retimed_state():
    assert retimed_cost([2e-3]) == 2e-3
    assert retimed_cost([3e-3, 2e-3]) == 2e-3                   # not re-timed: the lowest
    assert retimed_cost([1e-3, 3e-3, 2e-3]) == 2e-3             # the lucky lowest is dropped
    assert retimed_cost([5e-3, 1e-3, 4e-3, 1.1e-3]) == 1.1e-3   # any order (merged logs)


def test_two_slowed_retimings_do_not_hide_the_faster_default():
    """From a conv2d log of this machine: the default's state was slowed in two of its
    three re-timings; a long interleaved re-timing found the tuned state 7% slower.  By
    the median the tuned state ranked first; by ``retimed_cost`` the default does."""
    task = make_task()
    a, b = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0,
                             verbose=0).sample_initial_population(2)

    dflt = state_records(task, b, [1.137e-3, 1.427e-3, 1.108e-3, 1.298e-3])
    tuned = state_records(task, a, [1.155e-3, 1.214e-3, 1.171e-3, 1.175e-3])
    assert statistics.median(r.mean_cost for r in tuned) < \
        statistics.median(r.mean_cost for r in dflt)
    assert rank_records(tuned + dflt)[0] is dflt[2]           # its cheapest record
    assert rank_records(tuned + dflt, prefer=default_steps_repr(b))[0] is dflt[2]


def test_the_default_state_wins_a_tie_within_the_margin():
    task = make_task()
    a, b = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0,
                             verbose=0).sample_initial_population(2)

    tuned, dflt = state_records(task, a, [1.00e-3] * 3), state_records(task, b, [1.02e-3] * 3)
    pref = default_steps_repr(b)
    assert rank_records(tuned + dflt, prefer=pref)[0] is dflt[0]        # 2% slower: kept
    slower = state_records(task, b, [1.05e-3] * 3)
    assert rank_records(tuned + slower, prefer=pref)[0] is tuned[0]     # 5% slower: replaced
    once = state_records(task, b, [1.01e-3])
    assert rank_records(tuned + once, prefer=pref)[0] is tuned[0]       # not re-timed



def test_a_bimodal_tuned_state_does_not_displace_the_default():
    """From a matmul 512 log of the Zen 3: the tuned state's figures were bimodal (three
    near 1.4 ms, four at 2.1-3.0 ms); by its second-lowest figure it beat the default's
    by 20%, by the median it was 12% slower, and an interleaved re-timing found it at
    0.80x the default's speed.  The default keeps first place unless a tuned state wins
    by both."""
    task = make_task()
    a, b = auto.SketchPolicy(task, params=SMALL_SEARCH, seed=0,
                             verbose=0).sample_initial_population(2)
    tuned = state_records(task, a, [1.420e-3, 2.904e-3, 2.968e-3, 1.397e-3, 2.103e-3,
                                    1.519e-3, 2.178e-3])
    dflt = state_records(task, b, [2.825e-3, 2.824e-3, 2.103e-3, 1.781e-3, 1.786e-3,
                                   1.806e-3, 1.880e-3])
    assert retimed_cost([r.mean_cost for r in tuned]) < \
        0.9 * retimed_cost([r.mean_cost for r in dflt])
    pref = default_steps_repr(b)
    assert rank_records(tuned + dflt, prefer=pref)[0] is dflt[3]        # its cheapest
    assert rank_records(tuned + dflt)[0] is tuned[3]     # without a default to prefer
    # faster by both statistics: the tuned state replaces the default
    steady = state_records(task, a, [1.40e-3, 1.42e-3, 1.45e-3, 1.50e-3, 1.52e-3,
                                     1.55e-3, 1.60e-3])
    assert rank_records(steady + dflt, prefer=pref)[0] is steady[0]


# ------------------------------------------------------------------ EmptyPolicy
def test_empty_policy_measures_the_initial_state_every_round(tmp_path, log):
    task = make_task()
    out = tmp_path / "empty.json"
    policy = auto.EmptyPolicy(task, init_search_callbacks=[auto.PreloadMeasuredStates(log)])
    assert policy.preloaded == 8 and policy.search_task is task
    stats = task.tune(options(out, trials=3), policy)
    assert stats.trials == 3
    recs = list(load_records(out))
    assert len(recs) == 3 and all(r.input.steps == () for r in recs)
    with pytest.raises(TypeError, match="EmptyPolicy has no sketch rules"):
        auto.EmptyPolicy(task, init_search_callbacks=[auto.PreloadCustomSketchRule(
            lambda p, s, i: 0, lambda p, s, i: [])])


# ------------------------------------------------------------------ submodule alias
_SUBMODULES = """
import sys
import compiler as tvm
import autosched
from compiler.auto_scheduler.loop_state import State
from compiler.auto_scheduler.errors import WorkloadError
import compiler.auto_scheduler.measure.runner as runner
import compiler.auto_scheduler.workload as wl
real = {name: sys.modules["autosched." + name] for name in
        ("loop_state", "errors", "measure.runner", "workload")}
print(State is real["loop_state"].State, WorkloadError is real["errors"].WorkloadError,
      runner is real["measure.runner"], wl is real["workload"])
try:
    import compiler.auto_scheduler.no_such_module
except ModuleNotFoundError as err:
    print(err.name)
"""


def test_tvm_submodule_imports_give_this_packages_modules_not_copies():
    """``from tvm.auto_scheduler.X import Y`` after ``import compiler as tvm``: one module
    (a copy would have its own workload registry and exception classes)."""
    out = subprocess.run([sys.executable, "-c", _SUBMODULES], capture_output=True,
                         text=True, timeout=120, check=True).stdout.split("\n")
    assert out[:2] == ["True True True True", "compiler.auto_scheduler.no_such_module"]


# TVM's module path -> names TVM scripts import from it
_TVM_MODULES = {
    "search_task": ("SearchTask", "TuningOptions", "HardwareParams",
                    "register_task_input_buffer", "get_task_input_buffer",
                    "register_task_input_check_func"),
    "search_policy": ("SketchPolicy", "EmptyPolicy", "SearchCallback",
                      "PreloadMeasuredStates", "PreloadCustomSketchRule"),
    "dispatcher": ("DispatchContext", "ApplyHistoryBest", "ApplyHistoryBestOrSample"),
    "workload_registry": ("register_workload", "make_workload_key",
                          "workload_key_to_tensors", "register_workload_tensors"),
}


@pytest.mark.parametrize("module", sorted(_TVM_MODULES))
def test_tvm_module_paths_name_the_same_objects(module):
    """``from tvm.auto_scheduler.search_task import SearchTask`` and the like: TVM's
    module paths exist, as attributes and as imports, and give this package's objects."""
    mod = importlib.import_module(f"compiler.auto_scheduler.{module}")
    assert getattr(auto, module) is mod
    for name in _TVM_MODULES[module]:
        obj = getattr(mod, name)
        assert obj is getattr(auto, name, obj) and obj is getattr(
            importlib.import_module(obj.__module__), obj.__name__)
    assert set(mod.__all__) == set(_TVM_MODULES[module])
