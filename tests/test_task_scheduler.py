"""TaskScheduler: allocation of rounds (gradient vs round-robin), dead tasks, early
stopping, resume from a log, callbacks and argument checks.

Most tests drive the scheduler with scripted policies whose best cost follows a curve per
task, so the allocation is deterministic and no kernel is built; the resume test tunes two
tiny matmuls for real once, then resumes with a spy builder/runner.
"""
import math
import zlib

import autosched_helpers  # noqa: F401  (registers the steps_test_* workloads)
import pytest

import autosched as auto
from autosched import catalog  # noqa: F401  (registers the built-in workloads)
from autosched.default_state import default_state
from autosched.measure.dask import ClusterError
from autosched.measure.measurer import BuildResult, MeasureInput, MeasureResult
from autosched.steps import serialize
from autosched.task_scheduler import derive_similarity_tag
from autosched.task_scheduler_callbacks import format_table
from autosched.tuning import rank_records, retimed_cost
from records import load_records

SMALL_SEARCH = {"sample_init_min_population": 16, "evolutionary_search_population": 16,
                "evolutionary_search_num_iters": 1}


class CurvePolicy:
    """Round k returns n results whose best cost is ``curve(k)``; after ``rounds`` rounds
    the search space is exhausted (empty rounds)."""

    def __init__(self, task, curve, rounds=None):
        self.task, self.curve, self.rounds = task, curve, rounds
        self.calls = []

    def continue_search_one_round(self, n, measurer):
        self.calls.append(n)
        k = len(self.calls) - 1
        if self.rounds is not None and k >= self.rounds:
            return [], []
        c = self.curve(k)
        return ([MeasureInput(self.task, None)] * n,
                [MeasureResult([c * (1 + 0.1 * j)], 0, "", 0.0, 0.0) for j in range(n)])


class Unused:
    """Builder and runner for scripted policies: never called, but closed."""
    n_parallel = 1

    def __init__(self):
        self.closed = 0

    def build(self, inputs, verbose=0):
        raise AssertionError("the scripted policies measure nothing")

    def run(self, inputs, build_results, verbose=0):
        raise AssertionError("the scripted policies measure nothing")

    def close(self):
        self.closed += 1


class Spy:
    """Builder + runner that measure nothing real: costs from a hash of the state."""
    n_parallel = 1

    def __init__(self):
        self.seen = []          # built states
        self.ran = []           # run states

    def build(self, inputs, verbose=0):
        self.seen += [str(inp.state) for inp in inputs]
        return [BuildResult(b"obj", ("f",), 0, "", 0.0) for _ in inputs]

    def run(self, inputs, build_results, verbose=0):
        self.ran += [str(inp.state) for inp in inputs]
        return [MeasureResult([1e-3 * (1 + zlib.crc32(str(i.state).encode()) % 97 / 97)], 0,
                              "", 0.0, 1.0) for i in inputs]


class Order(auto.TaskSchedulerCallback):
    """Records the task of every round and a snapshot of the status before the first."""

    def __init__(self):
        self.ids, self.first = [], None

    def pre_tune(self, ts, task_id):
        if self.first is None:
            self.first = (list(ts.task_cts), list(ts.best_costs))
        self.ids.append(task_id)


def tasks_of(*sizes):
    """Tasks without a default schedule (the scripted runners time nothing)."""
    return [auto.SearchTask(func="steps_test_matmul", args=(n, n, n)) for n in sizes]


def options(trials, per_round=4, **kw):
    kw.setdefault("verbose", 0)
    return auto.TuningOptions(num_measure_trials=trials, num_measures_per_round=per_round,
                              builder=Unused(), runner=Unused(), **kw)


def run(curves, trials, weights=None, strategy="gradient", rounds=None, per_round=4,
        per_task_early_stopping=None, **kw):
    tasks = tasks_of(*[8 * (i + 1) for i in range(len(curves))])
    policies = [CurvePolicy(t, c, r) for t, c, r in
                zip(tasks, curves, rounds or [None] * len(curves))]
    order = Order()
    ts = auto.TaskScheduler(tasks, weights, strategy=strategy, callbacks=[order])
    opts = options(trials, per_round, **kw)
    ts.tune(opts, search_policy=policies, per_task_early_stopping=per_task_early_stopping)
    assert opts.builder.closed == opts.runner.closed == 1
    return ts, policies, order


# ---------------------------------------------------------------------- allocation
HEAVY = lambda k: 1e-3 * max(0.1, 0.85 ** k)     # noqa: E731  weight 10, keeps improving
FLAT = lambda k: 1e-3                            # noqa: E731  never improves
SLOW = lambda k: 2e-3 * max(0.5, 0.95 ** k)      # noqa: E731  improves a little


def test_gradient_gives_rounds_to_the_task_that_pays():
    grad, _, _ = run([HEAVY, FLAT, SLOW], 120, weights=[10, 1, 1])
    rr, _, order = run([HEAVY, FLAT, SLOW], 120, weights=[10, 1, 1], strategy="round-robin")
    assert grad.ct == rr.ct == 120 and rr.task_cts == [10, 10, 10]
    assert grad.task_cts[0] >= 13 > rr.task_cts[0]       # the heavy improving task
    assert grad.task_cts[1] <= 7 < rr.task_cts[1]        # the flat one
    assert grad.cur_score < 0.8 * rr.cur_score
    # the objective is the weighted sum of the best costs, and history tracks it per round
    assert grad.cur_score == pytest.approx(sum(w * c for w, c in
                                               zip([10, 1, 1], grad.best_costs)))
    assert [t for t, _ in grad.history] == list(range(4, 124, 4))
    assert grad.history[0][1] == math.inf and grad.history[-1][1] == grad.cur_score
    assert [len(h) for h in grad.task_costs_history] == grad.task_cts


def test_round_robin_cycles_in_order():
    ts, policies, order = run([FLAT, FLAT, FLAT], 40, strategy="round-robin")
    assert order.ids == [0, 1, 2] * 3 + [0]
    assert [p.calls for p in policies] == [[4] * 4, [4] * 3, [4] * 3]
    assert ts.task_trials == [16, 12, 12] and ts.ct == 40


def test_last_round_is_cut_to_the_budget():
    ts, policies, _ = run([FLAT, FLAT], 10, strategy="round-robin")
    assert [p.calls for p in policies] == [[4, 2], [4]] and ts.ct == 10


def test_dead_tasks_are_skipped_and_tuning_ends_when_all_are_dead():
    ts, policies, order = run([SLOW, SLOW, SLOW], 1000, strategy="round-robin",
                              rounds=[1, 4, 2])
    # a task dies on its first empty round and is never asked again
    assert [len(p.calls) for p in policies] == [2, 5, 3]
    assert ts.dead_tasks == {0, 1, 2} and ts.ct == 4 * 7
    assert order.ids == [0, 1, 2, 0, 1, 2, 1, 2, 1, 1]
    grad, gpol, _ = run([SLOW, SLOW, SLOW], 1000, rounds=[1, 4, 2])
    assert [len(p.calls) for p in gpol] == [2, 5, 3] and grad.dead_tasks == {0, 1, 2}


def test_per_task_early_stopping():
    ts, policies, _ = run([lambda k: 1e-3 * 0.9 ** k, FLAT], 200, strategy="round-robin",
                          per_task_early_stopping=8)
    # FLAT improves in its first round only: 12 > 8 trials without gain after round 4
    assert len(policies[1].calls) == 4 and ts.dead_tasks == {1}
    assert ts.task_best_cts[1] == 1 and ts.ct == 200
    # HEAVY stops improving at round 16 and dies three rounds later, FLAT after four
    ts, policies, _ = run([HEAVY, FLAT], 200, strategy="round-robin",
                          per_task_early_stopping=8)
    assert [len(p.calls) for p in policies] == [19, 4] and ts.ct == 4 * 23
    # global early stopping: no better objective for `early_stopping` trials
    ts, policies, _ = run([FLAT, FLAT], 200, strategy="round-robin", early_stopping=12)
    assert ts.ct == 8 + 12 and "no improvement in the last 12" in ts.stop_reason


def test_cluster_error_stops_tuning_with_a_warning_and_closes():
    class Lost(CurvePolicy):
        def continue_search_one_round(self, n, measurer):
            if len(self.calls) == 2:
                raise ClusterError("scheduler gone")
            return super().continue_search_one_round(n, measurer)

    tasks = tasks_of(8, 16)
    policies = [Lost(tasks[0], FLAT), CurvePolicy(tasks[1], FLAT)]
    opts = options(100)
    ts = auto.TaskScheduler(tasks, strategy="round-robin", callbacks=[])
    with pytest.warns(UserWarning, match="tuning stopped: scheduler gone"):
        ts.tune(opts, policies)
    assert ts.ct == 16 and ts.stop_reason == "scheduler gone"
    assert opts.builder.closed == opts.runner.closed == 1


# ---------------------------------------------------------------------- resume
def test_resume_restores_status_and_never_measures_a_state_twice(tmp_path, capsys):
    log = str(tmp_path / "net.json")
    tasks = tasks_of(8, 16)
    first = auto.TaskScheduler(tasks, [1, 2], callbacks=[])
    first.tune(auto.TuningOptions(num_measure_trials=8, num_measures_per_round=4, verbose=0,
                                  runner=auto.LocalRunner(number=1),
                                  measure_callbacks=[auto.RecordToFile(log)]),
               search_policy="sketch.random", search_policy_params=SMALL_SEARCH)
    recs = list(load_records(log))
    assert len(recs) == 8 and first.task_cts == [1, 1]
    measured = {str(serialize.state_from_record(t, r)) for r in recs for t in tasks
                if r.input.workload_key == t.workload_key}
    best = [min(r.result.costs[0] for r in recs if r.input.workload_key == t.workload_key
                and r.result.error_no == 0) for t in tasks]

    # a third task, absent from the log, still gets its warm-up round; restored ones not
    tasks3 = tasks + tasks_of(24)
    spy, order = Spy(), Order()
    second = auto.TaskScheduler(tasks3, [1, 2, 1], strategy="round-robin", load_log_file=log,
                                callbacks=[order])
    second.tune(auto.TuningOptions(num_measure_trials=12, num_measures_per_round=4, verbose=0,
                                   builder=spy, runner=spy,
                                   measure_callbacks=[auto.RecordToFile(log)]),
                search_policy="default", search_policy_params=SMALL_SEARCH)
    assert order.first[0] == [1, 1, 0]
    assert order.first[1][:2] == pytest.approx(best) and order.first[1][2] == 1e10
    assert order.ids == [2, 0, 1] and second.preloaded == [4, 4, 0]
    assert len(spy.seen) == 12 and not set(spy.seen) & measured
    assert second.task_trials == [8, 8, 4] and second.ct == 12
    assert len(list(load_records(log))) == 20

    # without load_log_file an existing log is not reused, but the user is told how
    capsys.readouterr()
    third = auto.TaskScheduler(tasks, callbacks=[])
    third.tune(options(4, measure_callbacks=[auto.RecordToFile(log)], verbose=1),
               [CurvePolicy(t, FLAT) for t in tasks])
    hints = [l for l in capsys.readouterr().out.splitlines() if "load_log_file=" in l]
    assert len(hints) == 1 and log in hints[0] and third.ct == 4


def test_missing_load_log_file_starts_from_scratch(tmp_path):
    ts = auto.TaskScheduler(tasks_of(8), load_log_file=str(tmp_path / "none.json"),
                            callbacks=[])
    ts.tune(options(8), [CurvePolicy(ts.tasks[0], FLAT)])
    assert ts.task_cts == [2] and ts.ct == 8


# ---------------------------------------------------------------------- callbacks
def test_table_and_latency_log(tmp_path, capsys):
    tsv = tmp_path / "lat.tsv"
    tsv.write_text("stale line\n")
    tasks = tasks_of(8, 16)
    ts = auto.TaskScheduler(tasks, [3, 1], callbacks=[auto.PrintTableInfo(),
                                                      auto.LogEstimatedLatency(tsv)])
    ts.tune(options(16, verbose=1), [CurvePolicy(t, SLOW) for t in tasks])
    out = capsys.readouterr().out
    assert out.count("Estimated total latency") == 4
    assert '["steps_test_matmul", 16, 16, 16]' in out and "Weight" in out
    lines = tsv.read_text().splitlines()
    assert len(lines) == 4 and lines[0].endswith("EstimatedLatency(ms)\tN/A\tTrials\t4")
    fields = lines[-1].split("\t")
    assert fields[0] == "ElapsedTime(s)" and fields[4:] == ["Trials", "16"]
    assert float(fields[3]) == pytest.approx(ts.cur_score * 1e3, rel=1e-3)
    table = format_table(ts, 1)
    assert "| Latency (ms) |" in table and f"{ts.best_costs[0] * 1e3:.3f}" in table


def test_default_callbacks_and_similarity_tags():
    a, b, c = (auto.SearchTask(func="steps_test_matmul", args=(16, 16, 16), desc=d)
               for d in ("fused_nn_dense_1", "fused_nn_dense_2", ""))
    ts = auto.TaskScheduler([a, b, c])
    assert [type(cb) for cb in ts.callbacks] == [auto.PrintTableInfo]
    assert derive_similarity_tag(a) == derive_similarity_tag(b) != ""
    assert derive_similarity_tag(c) == ""
    assert list(ts.group_task_ids.values()) == [[0, 1]]


# ---------------------------------------------------------------------- arguments
@pytest.mark.parametrize("kwargs, exc, match", [
    ({"tasks": []}, ValueError, r"tasks=\[\]: expected a non-empty list of SearchTask"),
    ({"tasks": [3]}, TypeError, r"tasks\[0\]=3: expected a SearchTask"),
    ({"task_weights": [1]}, ValueError, r"task_weights=\[1\]: expected 2 weights"),
    ({"task_weights": [1, -1]}, ValueError, r"task_weights\[1\]=-1: expected .* > 0"),
    ({"task_weights": [1, "x"]}, ValueError, r"task_weights\[1\]='x'"),
    ({"strategy": "greedy"}, ValueError, r"strategy='greedy': expected one of 'gradient', "
                                         r"'round-robin'"),
    ({"objective_func": 3}, TypeError, r"objective_func=3: expected a callable"),
    ({"alpha": 1.5}, ValueError, r"alpha=1.5: expected .* <= 1"),
    ({"backward_window_size": 0}, ValueError, r"backward_window_size=0"),
    ({"callbacks": [object()]}, TypeError, r"expected a TaskSchedulerCallback"),
    ({"load_log_file": 3}, TypeError, r"load_log_file=3: expected a path"),
    ({"seed": -1}, ValueError, r"seed=-1"),
])
def test_bad_constructor_arguments(kwargs, exc, match):
    args = {"tasks": tasks_of(8, 16), **kwargs}
    with pytest.raises(exc, match=match):
        auto.TaskScheduler(args.pop("tasks"), **args)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"tune_option": 5}, TypeError, r"tune_option=5: expected a TuningOptions"),
    ({"search_policy": "sketch.magic"}, ValueError,
     r"search_policy='sketch.magic': expected one of 'default'"),
    ({"search_policy": [None]}, ValueError, r"1 search policies for 2 tasks"),
    ({"search_policy": [None, None]}, TypeError, r"search_policy\[0\]=None"),
    ({"search_policy_params": 3}, TypeError, r"search_policy_params=3"),
    ({"per_task_early_stopping": 0}, ValueError, r"per_task_early_stopping=0"),
    ({"tune_option": options(8, measure_callbacks=[3])}, TypeError, r"callback 3 is neither"),
])
def test_bad_tune_arguments(kwargs, exc, match):
    ts = auto.TaskScheduler(tasks_of(8, 16), callbacks=[])
    opts = kwargs.pop("tune_option", options(8))
    with pytest.raises(exc, match=match):
        ts.tune(opts, **kwargs)
    if isinstance(opts, auto.TuningOptions):
        # refused before the builder was made, or closed after the measurer refused it
        made = bool(opts.measure_callbacks)
        assert opts.builder.closed == opts.runner.closed == made
    with pytest.raises(TypeError, match="log_file 3 must be a str"):
        auto.LogEstimatedLatency(3)


def test_custom_objective_drives_the_gradient():
    # objective = the slowest task: only the task that is currently the max is worth a round
    tasks = tasks_of(8, 16)
    policies = [CurvePolicy(tasks[0], lambda k: 3e-3 * 0.9 ** k), CurvePolicy(tasks[1], FLAT)]
    order = Order()
    ts = auto.TaskScheduler(tasks, objective_func=max, callbacks=[order])
    ts.tune(options(80), policies)
    assert ts.cur_score == max(ts.best_costs) == 1e-3
    # 3 ms * 0.9**k drops below FLAT's 1 ms at its 12th round; then FLAT is the max
    assert order.ids == [0, 1] + [0] * 11 + [1] * 7


def test_default_schedules_are_timed_first_and_count_in_the_estimate():
    """Built-in workloads have topi's schedule as their default: the scheduler times it
    with its own runner before the first round, and the estimate counts the better of
    tuned and default per task."""
    tasks = [auto.SearchTask(func="matmul", args=(16, 16, 16))]
    spy = Spy()
    ts = auto.TaskScheduler(tasks, [2], callbacks=[])
    ts.tune(auto.TuningOptions(num_measure_trials=4, num_measures_per_round=4,
                               builder=spy, runner=spy), search_policy="sketch.random")
    assert 1e-3 <= ts.default_costs[0] < 2e-3          # Spy's cost for the init state
    assert ts.estimated_latency == pytest.approx(2 * min(ts.best_costs[0],
                                                         ts.default_costs[0]))
    assert f"{ts.default_costs[0] * 1e3:.3f}" in format_table(ts, 0)
    assert len(spy.seen) == 4                            # defaults are built here, not by it


@pytest.mark.parametrize("prior, has_prior", [("builtin", True), (None, False)])
def test_the_shared_cost_model_gets_the_prior_asked_for(prior, has_prior):
    ts = auto.TaskScheduler(tasks_of(8, 16), cost_model_prior=prior, callbacks=[])
    ts.tune_option = options(8)
    policies = ts._make_policies("default", SMALL_SEARCH)
    assert policies[0].model is policies[1].model           # one model for all tasks
    assert policies[0].model.has_prior is has_prior


def test_retime_measures_the_best_states_and_the_default_state_side_by_side(tmp_path):
    """With ``retime_top_k`` the scheduler ends as ``tune`` does: per task, the best
    states and the default schedule's state are measured ``retime_rounds`` more times
    (not trials), logged, and each task's best cost becomes the ``retimed_cost`` of the
    state ``rank_records`` puts first (no confirmation rounds here: see
    test_tvm_autosched_api for those)."""
    log = str(tmp_path / "net.json")
    tasks = [auto.SearchTask(func="matmul", args=(n, n, n)) for n in (16, 32)]
    spy = Spy()
    ts = auto.TaskScheduler(tasks, [1, 2], callbacks=[])
    ts.tune(auto.TuningOptions(num_measure_trials=8, num_measures_per_round=4, verbose=0,
                               builder=spy, runner=spy, retime_top_k=2, retime_rounds=2,
                               confirm_rounds=0, measure_callbacks=[auto.RecordToFile(log)]),
            search_policy="sketch.random", search_policy_params=SMALL_SEARCH)
    # 2 best + the default's state (measured first in each task's round) per task; each
    # re-timed state is built once and its object run once per round
    assert ts.ct == 8 and ts.retimed == 2 * (len(spy.seen) - 8)
    assert 2 * 2 * 2 <= ts.retimed <= 2 * 3 * 2
    assert all(spy.ran.count(k) == 3 for k in spy.seen[8:])    # its trial + 2 rounds
    recs = list(load_records(log))
    assert len(recs) == 8 + ts.retimed
    for task, best in zip(tasks, ts.best_costs):
        mine = [r for r in recs if r.input.workload_key == task.workload_key]
        by_state: dict = {}
        for r in mine:
            by_state.setdefault(repr(r.input.steps), []).append(r.mean_cost)
        assert len([c for c in by_state.values() if len(c) >= 3]) >= 2
        first = rank_records(mine, auto.tuning.default_steps_repr(default_state(task)))[0]
        assert best == pytest.approx(retimed_cost(by_state[repr(first.input.steps)]))
    # the default's state competes: it is among the re-timed states of each task
    dflt = [auto.tuning.default_steps_repr(default_state(t)) for t in tasks]
    assert all(len([r for r in recs if repr(r.input.steps) == d]) >= 3 for d in dflt)


def test_adaptive_training_reaches_the_shared_model():
    """TVM's ``tuner.tune(..., adaptive_training=...)``: False retrains at every round."""
    ts = auto.TaskScheduler(tasks_of(8, 16), callbacks=[])
    ts.tune_option = options(8)
    eager = ts._make_policies("default", SMALL_SEARCH, adaptive_training=False)[0].model
    assert eager.params.retrain_ratio == 0.0
    default = ts._make_policies("default", SMALL_SEARCH)[0].model
    assert default.params.retrain_ratio > 0.0
