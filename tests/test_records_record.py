"""Record dataclasses and the JSON line layout (TVM auto-scheduler v0.6)."""
import json

import pytest

from records import (
    FAILURE_COST,
    STEP_CODES,
    ErrorNo,
    MeasureInputRecord,
    MeasureResultRecord,
    Record,
    RecordError,
    RecordFieldError,
    RecordSyntaxError,
)

# One hand-written line following TVM's layout (as TVM's own tests and tutorials show it).
TVM_LINE = (
    '{"i": [["[\\"matmul\\", 512, 512, 512, \\"float32\\"]", '
    '"llvm -keys=cpu -mcpu=core-avx2", [16, 64, 64, 0, 0, 0, 0, 0], "", 1, []], '
    '[[], [["CHW", 2, "local"], ["SP", 2, 0, 512, [1, 64, 8], 1], '
    '["SP", 2, 4, 64, [2, 32, 1], 1], ["RE", 2, [0, 4, 1, 5, 8, 2, 6, 9, 3, 7]], '
    '["FSP", 3, 0, 1, 2], ["CA", 2, 3, 3], ["FU", 3, [0, 1, 2, 3]], ["AN", 3, 0, 3], '
    '["PR", 2, 0, "auto_unroll_max_step$64"], ["AN", 2, 9, 2]]]], '
    '"r": [[0.00198047, 0.0019683], 0, 0.130737, 1714270206], "v": "v0.6"}'
)

# One example per step code, fields as TVM writes them.
STEP_EXAMPLES = [
    ["AN", 3, 0, 3], ["AN", 1, 2, "vectorize"], ["FU", 3, [0, 1, 2]],
    ["PR", 2, 0, "auto_unroll_max_step$16"], ["RE", 2, [0, 2, 1, 3]],
    ["SP", 2, 0, 512, [8, 8, 1], 1], ["SP", 2, 0, None, [4], 0],
    ["FSP", 3, 0, 1, 2], ["FFSP", 6, 0, [4, 3, 2, 1], 1, 1], ["SA", 2, 1, 16, 1],
    ["CA", 2, 3, 3], ["CI", 1], ["CR", 1], ["CHR", 0, "shared", [2, 3]],
    ["CHW", 2, "local"], ["RF", 2, 1, 2],
]


def make_input(**kw):
    args = dict(workload_key='["matmul", 64, 64, 64]', target="llvm -mcpu=znver4",
                hardware_params=[2, 64, 64, 0, 0, 0, 0, 0])
    args.update(kw)
    return MeasureInputRecord(**args)


def make_record(costs=(0.001,), error_no=0, **kw):
    return Record(make_input(**kw), MeasureResultRecord(list(costs), error_no, 0.5, 1700000000.25))


def test_every_step_code_has_an_example():
    assert sorted({s[0] for s in STEP_EXAMPLES}) == sorted(STEP_CODES)


@pytest.mark.parametrize("step", STEP_EXAMPLES, ids=lambda s: "-".join(map(str, s[:1] + [len(s)])))
def test_step_round_trip(step):
    rec = make_record(steps=[step])
    line = rec.to_json()
    back = Record.from_json(line)
    assert back == rec
    assert json.loads(line)["i"][1][1] == [step]
    assert back.to_json() == line
    assert back.to_json(compact=True) == rec.to_json(compact=True)
    assert Record.from_json(rec.to_json(compact=True)) == rec


def test_tvm_line_parses_and_reprints_byte_for_byte():
    rec = Record.from_json(TVM_LINE)
    assert rec.workload_key == '["matmul", 512, 512, 512, "float32"]'
    assert rec.target == "llvm -keys=cpu -mcpu=core-avx2"
    assert rec.input.hardware_params == (16, 64, 64, 0, 0, 0, 0, 0)
    assert rec.input.target_host is None
    assert rec.input.layout_rewrite_option == 1
    assert rec.input.steps[1] == ("SP", 2, 0, 512, (1, 64, 8), 1)
    assert len(rec.input.steps) == 10
    assert rec.result.costs == (0.00198047, 0.0019683)
    assert rec.result.timestamp == 1714270206 and isinstance(rec.result.timestamp, int)
    assert rec.mean_cost == pytest.approx((0.00198047 + 0.0019683) / 2)
    assert rec.is_valid and rec.seed is None
    assert rec.to_json() == TVM_LINE
    inp, res = rec
    assert inp is rec.input and res is rec.result


def test_older_tvm_task_layout_is_read_with_defaults():
    line = ('{"i": [["[\\"mm\\", 8]", "llvm", [6, 64, 64, 0, 0, 0, 0, 0], "", 1], '
            '[[], []]], "r": [[0.1], 0, 0.2, 1], "v": "v0.6"}')
    rec = Record.from_json(line)
    assert rec.input.task_input_names == () and rec.input.steps == ()
    assert json.loads(rec.to_json())["i"][0][5] == []


def test_seed_is_stored_in_trailing_list_and_round_trips():
    rec = make_record(seed=1234, task_input_names=["weight_layout"])
    obj = json.loads(rec.to_json())
    assert obj["i"][0][5] == ["weight_layout", "autosched.seed=1234"]
    back = Record.from_json(rec.to_json())
    assert back.seed == 1234 and back.input.task_input_names == ("weight_layout",)
    assert back == rec


def test_target_host_none_is_empty_string_in_json():
    rec = make_record(target_host="")
    assert rec.input.target_host is None
    assert json.loads(rec.to_json())["i"][0][3] == ""
    host = make_record(target_host="llvm -mtriple=x86_64")
    assert Record.from_json(host.to_json()).input.target_host == "llvm -mtriple=x86_64"


def test_failed_record_costs_failure_and_is_invalid():
    rec = make_record(costs=[FAILURE_COST], error_no=ErrorNo.RUN_TIMEOUT)
    assert not rec.is_valid
    assert rec.mean_cost == FAILURE_COST == 1e10
    assert rec.result.error is ErrorNo.RUN_TIMEOUT
    assert json.loads(rec.to_json())["r"][1] == 7
    assert [e.value for e in ErrorNo] == list(range(9))


def _mutated(path, value):
    obj = json.loads(TVM_LINE)
    node = obj
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return json.dumps(obj)


# (where to put the bad value, the bad value, field named, the offending element, expected)
BAD_FIELDS = [
    (("r", 1), 9, "error_no (r[1])", 9, "an integer in 0..8"),
    (("r", 1), -1, "error_no (r[1])", -1, "an integer in 0..8"),
    (("r", 1), True, "error_no (r[1])", True, "an integer in 0..8"),
    (("r", 0, 0), -0.5, "costs (r[0])[0]", -0.5, "a finite number >= 0"),
    (("r", 2), "1.0", "all_cost (r[2])", "1.0", "a finite number >= 0"),
    (("r",), [[0.1], 0, 0.2], "result (r)", [[0.1], 0, 0.2], "a list of 4 elements"),
    (("i", 0, 0), 17, "workload_key (i[0][0])", 17, "a non-empty string"),
    (("i", 0, 2), [1, "x"], "hardware_params (i[0][2])[1]", "x", "an integer"),
    (("i", 0, 4), 5, "layout_rewrite_option (i[0][4])", 5, "an integer in 0..2"),
    (("i", 1, 0), [["x"]], "stages (i[1][0])", [["x"]], "a list of <= 0 elements"),
    (("i", 1, 1, 0), ["XX", 1], "steps i[1][1][0][0] (step code)", "XX", "one of AN, FU"),
    (("i", 1, 1, 1), ["SP", 2, 0, 512, [1, 64, 8]], "steps i[1][1][1]",
     ["SP", 2, 0, 512, [1, 64, 8]], "6 elements, it has 5"),
    (("i", 1, 1, 1, 4), [1, 0, 8], "steps i[1][1][1][4] (SP lengths)[1]", 0, "an integer >= 1"),
    (("i", 1, 1, 1, 5), True, "steps i[1][1][1][5] (SP inner_to_outer)", True,
     "an integer in 0..1"),
    (("i", 1, 1, 0, 1), -2, "steps i[1][1][0][1] (CHW stage)", -2, "an integer >= 0"),
    (("i", 0, 5), ["autosched.seed=abc"], "task_input_names (i[0][5])[0]",
     "autosched.seed=abc", "followed by an integer"),
]


@pytest.mark.parametrize("path, value, field, bad, expected", BAD_FIELDS)
def test_bad_field_is_named(path, value, field, bad, expected):
    with pytest.raises(RecordFieldError) as info:
        Record.from_json(_mutated(path, value))
    err = info.value
    assert err.field == field and err.value == bad and type(err.value) is type(bad)
    assert str(err) == f"{field}: got {bad!r}, expected {err.expected}"
    assert expected in err.expected
    assert isinstance(err, ValueError) and isinstance(err, RecordError)


def test_unknown_or_missing_keys_are_rejected():
    obj = json.loads(TVM_LINE)
    obj["x"] = 1
    with pytest.raises(RecordFieldError, match='exactly the keys "i", "r" and "v"'):
        Record.from_json(json.dumps(obj))
    del obj["x"], obj["v"]
    with pytest.raises(RecordFieldError, match=r"\['i', 'r'\]"):
        Record.from_json(json.dumps(obj))


def test_bad_json_and_non_finite_numbers_are_syntax_errors():
    with pytest.raises(RecordSyntaxError, match="invalid JSON: .* at column"):
        Record.from_json(TVM_LINE[:80])
    with pytest.raises(RecordSyntaxError, match="non-finite number NaN"):
        Record.from_json(TVM_LINE.replace("0.130737", "NaN"))


def test_constructor_validates_and_normalizes():
    with pytest.raises(RecordFieldError, match="at least one cost when error_no is 0"):
        MeasureResultRecord([], 0, 0.0, 0.0)
    assert MeasureResultRecord([], 2, 0.0, 0.0).costs == ()
    with pytest.raises(RecordFieldError, match="pass the seed as seed="):
        make_input(task_input_names=["autosched.seed=3"])
    with pytest.raises(RecordFieldError, match="a MeasureResultRecord"):
        Record(make_input(), (0.1,))
    rec = make_record(steps=[["FU", 0, [0, 1]]])
    assert rec.input.steps == (("FU", 0, (0, 1)),)
    assert hash(rec) == hash(make_record(steps=(("FU", 0, (0, 1)),)))
    with pytest.raises(AttributeError):
        rec.version = "v0.5"


def test_long_bad_values_are_shortened_in_messages():
    with pytest.raises(RecordFieldError) as info:
        make_input(steps=[["RE", 0, list(range(1000)), 1]])
    message = str(info.value)
    assert message.startswith("steps i[1][1][0]: got ['RE', 0, [0, 1, 2")
    assert ", ..., expected ['RE', stage, order]" in message and len(message) < 200
