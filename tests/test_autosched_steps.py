"""The auto-scheduler State and its 14 transform steps (AN FU PR RE SP FSP FFSP SA CA CI CR
CHR CHW RF).

For every step: its effect on the State (iterators, annotations, attach map, stage
insertion), replay on a te Schedule checked against numpy, the record round trip (step
record and a whole ``records.Record`` line), the printed schedule-API Python (it must lower
to exactly the replayed program), and the InvalidStepError raised when it does not apply.
Regression tests for bugs found by these tests are named ``test_bug_*``.
"""
import json
import re

import pytest
from autosched_helpers import (
    PY_CALL,
    SCENARIOS,
    assert_mirrors_schedule,
    dag_of,
    lowered_pair,
    record_round_trip,
    run_and_compare,
    scenario_state,
)

from autosched import steps as ST
from autosched.steps import step_from_record
from records import STEP_FIELDS, validate_step


def test_scenarios_cover_all_14_step_codes():
    codes = {s.CODE for _, steps in SCENARIOS.values() for s in steps}
    assert codes == set(ST.STEP_CLASSES) == set(STEP_FIELDS)
    assert len(codes) == 14


@pytest.mark.parametrize("sid", list(SCENARIOS))
def test_scenario_state_mirrors_replayed_schedule(sid):
    name, steps = SCENARIOS[sid]
    state = scenario_state(sid)
    assert state.transform_steps == steps
    sch, args = dag_of(name).apply_steps_from_state(state)
    assert args == dag_of(name).tensors
    assert_mirrors_schedule(state, sch)


@pytest.mark.parametrize("sid", list(SCENARIOS))
def test_scenario_replay_matches_numpy(sid):
    run_and_compare(SCENARIOS[sid][0], scenario_state(sid))


@pytest.mark.parametrize("sid", list(SCENARIOS))
def test_scenario_step_records_round_trip(sid):
    for step in scenario_state(sid).transform_steps:
        rec = step.to_record()
        assert rec[0] == step.CODE
        assert len(rec) == len(STEP_FIELDS[step.CODE]) + 1
        assert json.loads(json.dumps(rec)) == rec
        validate_step(rec, 0)                       # the records schema accepts it
        back = step_from_record(rec)
        assert back == step and type(back) is type(step)
        assert step_from_record(json.loads(json.dumps(rec))) == step


@pytest.mark.parametrize("sid", list(SCENARIOS))
def test_scenario_record_line_round_trip(sid):
    state = scenario_state(sid)
    back = record_round_trip(SCENARIOS[sid][0], state)
    assert str(back) == str(state)
    assert back.transform_steps == state.transform_steps
    assert back.attach_map == state.attach_map


@pytest.mark.parametrize("sid", list(SCENARIOS))
def test_scenario_python_code_lowers_identically(sid):
    name, steps = SCENARIOS[sid]
    code, from_code, from_state = lowered_pair(name, scenario_state(sid))
    assert from_code == from_state
    for step in steps:
        assert re.search(PY_CALL[step.CODE], code), (step.CODE, code)


@pytest.mark.parametrize("sid", ["AN", "SP", "CA", "CI", "CHW", "RF", "sketch"])
def test_scenario_changes_the_lowered_program(sid):
    """The Python-equivalence check is not vacuous: these schedules lower differently from
    the default one."""
    name = SCENARIOS[sid][0]
    _, _, scheduled = lowered_pair(name, scenario_state(sid))
    _, _, default = lowered_pair(name, dag_of(name).init_state())
    assert scheduled != default
