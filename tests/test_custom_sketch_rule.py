"""TVM's ``PreloadCustomSketchRule`` (issue 12, item 1): a user's sketch rule, written as
in TVM's custom-sketch tutorial (``loop_state.State(state, dag)``, loop-state methods,
``state.state_object``), is tried before the built-in rules, its sketches are what the
search samples -- in helper islands too, which get them as steps -- and bad results
are errors that name the rule.
"""
import warnings

import autosched_helpers  # noqa: F401  (registers the steps_test_* workloads)
import pytest
from autosched_helpers import Fine

import autosched as auto
from autosched import loop_state
from autosched.errors import AutoSchedError, InvalidStepError
from autosched.search.evolution import SearchParams
from records import load_records

Rule = auto.PreloadCustomSketchRule
ISLANDS = SearchParams(evolutionary_search_population=96, evolutionary_search_num_iters=2,
                       sample_init_min_population=32, parallel_min_population=64,
                       search_workers=1)


def make_task():
    return auto.SearchTask(func="steps_test_matmul_relu", args=(32, 32, 32))


def meet_matmul(kind=Rule.APPLY_AND_SKIP_REST):
    def meet(search_policy, state, stage_id):
        state = loop_state.State(state, search_policy.search_task.compute_dag)
        return kind if state.stages[stage_id].op.name == "C" else Rule.PASS
    return meet


def tile_2x2(search_policy, state, stage_id):
    """The tutorial's shape: wrap, split, reorder, return [[state_object, next]]."""
    s = loop_state.State(state, search_policy.search_task.compute_dag)
    C = s.stage_ops[stage_id]
    i, j, k = s[C].iters
    i0, i1 = s.split(C, i, [None])
    j0, j1 = s.split(C, j, [None])
    s.reorder(C, [i0, j0, k, i1, j1])
    return [[s.state_object, stage_id - 1]]


def policy_with(*rules, params=None, verbose=0):
    return auto.SketchPolicy(make_task(), auto.RandomModel(0), params=params, seed=0,
                             verbose=verbose, init_search_callbacks=list(rules))


def codes(state) -> list:
    return [s.to_record()[:2] for s in state.transform_steps]


def test_a_rule_that_skips_the_rest_gives_the_only_sketch_of_its_stage(capsys):
    policy = policy_with(Rule(meet_matmul(), tile_2x2, "Tile2x2"), verbose=1)
    assert 'Custom sketch rule "Tile2x2" added.' in capsys.readouterr().out
    sketches = policy.generate_sketches()
    assert len(sketches) == 1
    assert codes(sketches[0]) == [["SP", 2], ["SP", 2], ["RE", 2]]
    assert [it.name for it in sketches[0].stages[2].iters][2] == "k"
    assert len(policy_with().generate_sketches()) > 1      # the built-in rules' own


def test_a_rule_that_applies_adds_its_sketch_to_the_built_in_ones():
    builtin = policy_with().generate_sketches()
    both = policy_with(Rule(meet_matmul(Rule.APPLY), tile_2x2)).generate_sketches()
    assert len(both) == len(builtin) + 1
    assert [str(s) for s in both[1:]] == [str(s) for s in builtin]
    assert codes(both[0]) == [["SP", 2], ["SP", 2], ["RE", 2]]




def test_tuning_samples_only_the_custom_sketch_in_every_island(tmp_path):
    log = tmp_path / "custom.json"
    policy = policy_with(Rule(meet_matmul(), tile_2x2, "Tile2x2"), params=ISLANDS)
    fine = Fine()
    opts = auto.TuningOptions(num_measure_trials=24, num_measures_per_round=12, verbose=0,
                              builder=fine, runner=fine, retime_top_k=0,
                              measure_callbacks=[auto.RecordToFile(str(log))])
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no island may fail
        stats = policy.task.tune(opts, policy)
    assert stats.trials == 24
    recs = list(load_records(log))
    # the default schedule's state is measured first (seed_default_schedule); every
    # other state comes from the custom sketch, whichever island evolved it
    custom = [r for r in recs if [list(s[:2]) for s in r.input.steps[:3]] ==
              [["SP", 2], ["SP", 2], ["RE", 2]]]
    assert len(custom) >= len(recs) - 1 and len(custom) > 12


@pytest.mark.parametrize("meet, apply, message", [
    (lambda p, s, i: True, tile_2x2, r"meet_condition_func returned True for stage 3"),
    (lambda p, s, i: 7, tile_2x2,
     r"meet_condition_func returned 7 for stage 3; expected PASS \(0\)"),
    (lambda p, s, i: Rule.APPLY, lambda p, s, i: [[s.state_object, i]],
     r"apply_func returned next stage 3 for stage 3; expected -1 to 2, or 3 with a state "
     r"that has new steps"),
    (lambda p, s, i: Rule.APPLY, lambda p, s, i: [["state", i - 1]],
     r"apply_func returned \['state', 2\] for stage 3; expected \[state, next_stage_id\]"),
])
def test_bad_rule_results_are_errors_naming_the_rule(meet, apply, message):
    policy = policy_with(Rule(meet, apply, "Bad"))
    with pytest.raises(AutoSchedError, match="custom sketch rule 'Bad': " + message):
        policy.generate_sketches()


def test_bad_rules_and_policies_are_refused_when_made():
    with pytest.raises(TypeError, match="apply_func=3: expected a function"):
        Rule(meet_matmul(), 3)

    class Plain:
        verbose = 0
    with pytest.raises(TypeError, match="Plain has no sketch rules"):
        Rule(meet_matmul(), tile_2x2).callback(Plain())


def test_loop_state_constructor_and_attributes_as_tvm_spells_them():
    task = make_task()
    init = task.compute_dag.init_state()
    s = loop_state.State(init, task.compute_dag)
    assert s.state_object is s and [op.name for op in s.stage_ops] == ["A", "B", "C", "R"]
    s.split("C", 0, [4])
    assert len(init.transform_steps) == 0          # a copy: the original is unchanged
    with pytest.raises(InvalidStepError, match="belongs to another ComputeDAG"):
        loop_state.State(init, make_task().compute_dag)
    with pytest.raises(TypeError, match="expected a State, got str"):
        loop_state.State("state")
