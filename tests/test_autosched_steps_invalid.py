"""Steps that do not apply raise InvalidStepError; malformed records are refused."""
import pytest
from autosched_helpers import (
    PAR,
    UNR,
    VEC,
    assert_mirrors_schedule,
    dag_of,
    lowered_pair,
    make,
    run_and_compare,
)

from autosched import state as S
from autosched import steps as ST
from autosched.errors import InvalidStepError
from autosched.steps import apply_step, step_from_record
from compiler import lower
from records import validate_step

INVALID = [
    # (workload, prefix steps, bad step, message regex)
    ("matmul", [], ST.AnnotationStep(7, 0, PAR), r"AN: stage id 7 out of range \[0, 3\)"),
    ("matmul", [], ST.AnnotationStep(-1, 0, PAR), r"stage id -1 out of range"),
    ("matmul", [], ST.AnnotationStep(0, 0, PAR), r"stage 0 \(A\) is a placeholder"),
    ("matmul", [], ST.AnnotationStep(2, 3, PAR), r"iterator id 3 out of range for stage C"),
    ("matmul", [], ST.AnnotationStep(2, 2, VEC), r"cannot vectorize C\.k: it is not a spatial"),
    ("matmul", [], ST.AnnotationStep(2, 2, PAR), r"cannot parallel C\.k"),
    ("matmul", [ST.FuseStep(2, (1, 2))], ST.AnnotationStep(2, 1, VEC),
     r"cannot vectorize C\.j@k@"),
    ("matmul", [ST.AnnotationStep(2, 0, UNR)], ST.AnnotationStep(2, 0, PAR),
     r"C\.i is already annotated unroll"),
    ("matmul", [], ST.AnnotationStep(2, 0, 9), r"unsupported annotation 9"),
    ("matmul", [], ST.FuseStep(2, (0, 2)), r"FU: iterators \[0, 2\] of stage C are not "
     "consecutive"),
    ("matmul", [], ST.FuseStep(2, (1, 0)), r"not consecutive"),
    ("matmul", [], ST.FuseStep(2, ()), r"not consecutive"),
    ("matmul", [], ST.FuseStep(2, (2, 3)), r"iterator id 3 out of range"),
    ("matmul", [], ST.FuseStep(5, (0, 1)), r"FU: stage id 5 out of range"),
    ("matmul", [], ST.PragmaStep(2, 0, "unroll_explicit$1"), r"PR: unsupported pragma"),
    ("matmul", [], ST.PragmaStep(2, 0, "auto_unroll_max_step$x"), r"unsupported pragma"),
    ("matmul", [], ST.PragmaStep(2, 0, "auto_unroll_max_step"), r"unsupported pragma"),
    ("matmul", [], ST.PragmaStep(2, 4, "auto_unroll_max_step$4"), r"iterator id 4"),
    ("matmul", [], ST.ReorderStep(2, (0, 0, 1)), r"RE: \[0, 0, 1\] is not a permutation of "
     "the 3 iterators of stage C"),
    ("matmul", [], ST.ReorderStep(2, (0, 1)), r"not a permutation"),
    ("matmul", [], ST.ReorderStep(2, (0, 1, 2, 3)), r"not a permutation"),
    ("matmul", [], ST.ReorderStep(9, (0,)), r"RE: stage id 9 out of range"),
    ("matmul", [], ST.SplitStep(2, 0, 64, (4,), True), r"SP: iterator i has extent 32, the "
     "step expects 64"),
    ("matmul", [], ST.SplitStep(2, 0, 32, (0,), True), r"must be positive ints"),
    ("matmul", [], ST.SplitStep(2, 0, 32, (4, -2), True), r"must be positive ints"),
    ("matmul", [], ST.SplitStep(2, 0, 32, (2.5,), True), r"must be positive ints"),
    ("matmul", [], ST.SplitStep(2, 3, 32, (4,), True), r"iterator id 3 out of range"),
    ("matmul", [], ST.SplitStep(1, 0, 32, (4,), True), r"placeholder"),
    ("matmul", [ST.ReorderStep(2, (1, 0, 2))], ST.FollowSplitStep(2, 0, 0, 1),
     r"FSP: step 0 is not a split step"),
    ("matmul", [], ST.FollowSplitStep(2, 0, 0, 1), r"FSP: step 0 is not a split step"),
    ("matmul", [ST.SplitStep(2, 0, 32, (4,), True)], ST.FollowSplitStep(2, 2, 0, 3),
     r"FSP: n_split 3 out of range"),
    ("matmul", [ST.SplitStep(2, 0, 32, (4,), True)], ST.FollowSplitStep(2, 2, 0, 0),
     r"n_split 0 out of range"),
    ("matmul", [ST.FuseStep(2, (0, 1))], ST.FollowFusedSplitStep(2, 0, (0,), 0, True),
     r"FFSP: step 0 is not a split with level 0"),
    ("matmul", [ST.SplitStep(2, 0, 32, (4,), True)],
     ST.FollowFusedSplitStep(2, 0, (0,), 1, True), r"not a split with level 1"),
    ("matmul", [], ST.StorageAlignStep(2, 0, 0, 0), r"SA: need factor >= 1"),
    ("matmul", [], ST.StorageAlignStep(2, 0, 4, 4), r"0 <= offset < factor"),
    ("matmul", [], ST.StorageAlignStep(2, 5, 4, 1), r"iterator id 5"),
    ("matmul_relu", [], ST.ComputeAtStep(2, 2, 0), r"CA: bad target stage 2 for stage C"),
    ("matmul_relu", [], ST.ComputeAtStep(2, 4, 0), r"bad target stage 4"),
    ("matmul_relu", [], ST.ComputeAtStep(2, 0, 0), r"target stage A is inlined or a "
     "placeholder"),
    ("matmul_relu", [], ST.ComputeAtStep(2, 3, 2), r"iterator id 2 out of range for stage R"),
    ("matmul_relu", [ST.ComputeAtStep(2, 3, 0)], ST.ComputeAtStep(3, 2, 0),
     r"CA: target stage C is a producer of R"),
    ("chain", [ST.ComputeAtStep(1, 2, 0), ST.ComputeAtStep(2, 3, 0)],
     ST.ComputeAtStep(3, 1, 0), r"target stage E is a producer of G"),
    ("chain", [ST.ComputeInlineStep(2)], ST.ComputeAtStep(1, 2, 0),
     r"target stage F is inlined"),
    ("matmul_relu", [], ST.ComputeInlineStep(3), r"CI: R is a reduction or an output"),
    ("matmul_relu", [], ST.ComputeInlineStep(2), r"CI: C is a reduction"),
    ("chain", [ST.ComputeAtStep(1, 2, 0)], ST.ComputeInlineStep(2),
     r"CI: stages are attached to F; cannot inline it"),
    ("chain", [], ST.ComputeInlineStep(0), r"placeholder"),
    ("chain", [], ST.ComputeInlineStep(4), r"CI: stage id 4 out of range"),
    ("chain", [], ST.ComputeRootStep(4), r"CR: stage id 4 out of range"),
    ("matmul", [], ST.CacheReadStep(3, "shared", (2,)), r"CHR: stage id 3 out of range"),
    ("matmul", [], ST.CacheReadStep(-1, "shared", (2,)), r"CHR: stage id -1 out of range"),
    ("matmul_relu", [], ST.CacheReadStep(0, "shared", (3,)),
     r"CHR: stage 3 is not a reader of A"),
    ("matmul", [], ST.CacheWriteStep(0, "local"), r"CHW: stage 0 \(A\) is a placeholder"),
    ("matmul", [], ST.CacheWriteStep(3, "local"), r"CHW: stage id 3 out of range"),
    ("matmul", [ST.SplitStep(2, 0, 32, (4,), True)], ST.CacheWriteStep(2, "local"),
     r"CHW.*must be applied before the stage is split"),
    ("matmul", [], ST.RfactorStep(2, 0, 0), r"RF: C\.i is not a reduction iterator"),
    ("matmul", [], ST.RfactorStep(2, 3, 0), r"RF: iterator id 3 out of range"),
    ("rowsum", [], ST.RfactorStep(1, 1, 5), r"RF: .*factor_axis 5 out of range"),
    ("rowsum", [], ST.RfactorStep(0, 0, 0), r"RF: stage 0 \(A\) is a placeholder"),
]


@pytest.mark.parametrize("name,prefix,bad,pattern", INVALID,
                         ids=[f"{k}-{case[2].CODE}" for k, case in enumerate(INVALID)])
def test_invalid_step_raises_and_leaves_state_unchanged(name, prefix, bad, pattern):
    state = make(name, *prefix)
    before = (str(state), list(state.stages), dict(state.attach_map),
              list(state.transform_steps))
    with pytest.raises(InvalidStepError, match=pattern):
        apply_step(state, bad)
    assert (str(state), list(state.stages), dict(state.attach_map),
            list(state.transform_steps)) == before


def test_invalid_step_error_is_a_value_error():
    with pytest.raises(ValueError):
        apply_step(make("matmul"), ST.ReorderStep(2, (0,)))


def test_replaying_a_step_that_no_longer_applies_raises_invalid_step():
    """A record whose split does not fit the replayed schedule (e.g. the workload
    changed): replay reports InvalidStepError, not a raw ScheduleError."""
    sch = dag_of("matmul").replay([ST.SplitStep(2, 0, 32, (4,), True)])
    with pytest.raises(InvalidStepError, match="SP: stage 2 iterator 9 does not exist"):
        ST.apply_to_schedule(ST.SplitStep(2, 9, 32, (4,), True), sch, [])
    with pytest.raises(InvalidStepError, match="SA: storage_align on stage C"):
        ST.apply_to_schedule(ST.StorageAlignStep(2, 0, 8, 1), sch, [])  # i.0: not a root axis


MALFORMED = [
    (["XX", 1], r"unknown step record \['XX', 1\]; expected one of \['AN', 'CA'"),
    ([], r"unknown step record"),
    ("SP", r"unknown step record"),
    (None, r"unknown step record"),
    (["SP", 2, 0], r"malformed SP step record"),
    (["CI"], r"malformed CI step record"),
    (["CI", 2, 5], r"malformed CI step record"),
    (["AN", 2, 0], r"malformed AN step record"),
    (["CA", 1, 2, 3, 4], r"malformed CA step record"),
    (["FU", 2, 3], r"FU: fused ids must be a list of ints"),
    (["FU", 2, [0, True]], r"FU: fused ids must be a list of ints"),
    (["RE", 2, "012"], r"RE: order must be a list of ints"),
    (["CHR", 0, "shared", 2], r"CHR: readers must be a list of ints"),
    (["FFSP", 2, 0, [0.5], 0, 1], r"FFSP: src steps must be a list of ints"),
    (["SP", 2, 0, 32, 4, 1], r"malformed SP step record"),
]


@pytest.mark.parametrize("rec,pattern", MALFORMED)
def test_malformed_step_record_raises(rec, pattern):
    with pytest.raises(InvalidStepError, match=pattern):
        step_from_record(rec)


def test_step_from_record_decodes_every_code():
    recs = [["AN", 2, 0, 3], ["FU", 2, [0, 1]], ["PR", 2, 0, "auto_unroll_max_step$64"],
            ["RE", 2, [1, 0, 2]], ["SP", 2, 0, 32, [4, 2], 0], ["FSP", 2, 1, 0, 2],
            ["FFSP", 2, 0, [0, 1], 1, 0], ["SA", 2, 0, 16, 3], ["CA", 2, 3, 1], ["CI", 2],
            ["CR", 2], ["CHR", 0, "shared", [2, 3]], ["CHW", 2, "local"], ["RF", 2, 2, 0]]
    expected = [ST.AnnotationStep(2, 0, 3), ST.FuseStep(2, (0, 1)),
                ST.PragmaStep(2, 0, "auto_unroll_max_step$64"), ST.ReorderStep(2, (1, 0, 2)),
                ST.SplitStep(2, 0, 32, (4, 2), False), ST.FollowSplitStep(2, 1, 0, 2),
                ST.FollowFusedSplitStep(2, 0, (0, 1), 1, False), ST.StorageAlignStep(2, 0, 16, 3),
                ST.ComputeAtStep(2, 3, 1), ST.ComputeInlineStep(2), ST.ComputeRootStep(2),
                ST.CacheReadStep(0, "shared", (2, 3)), ST.CacheWriteStep(2, "local"),
                ST.RfactorStep(2, 2, 0)]
    assert [step_from_record(r) for r in recs] == expected
    assert [s.to_record() for s in expected] == recs
    assert {r[0] for r in recs} == set(ST.STEP_CLASSES)


def test_bug_annotation_none_is_rejected_or_a_no_op():
    state = make("matmul")
    try:
        apply_step(state, ST.AnnotationStep(2, 0, S.ANN_NONE))
    except InvalidStepError:
        return                                           # rejected: fine
    _, a, b = lowered_pair("matmul", state)               # TVM: kNone is a no-op
    assert a == b


def test_bug_compute_at_onto_producer_is_rejected():
    state = make("matmul_relu")
    with pytest.raises(InvalidStepError, match="CA"):
        apply_step(state, ST.ComputeAtStep(3, 2, 0))     # R (reads C) at C


def test_bug_compute_at_replay_error_is_invalid_step():
    sch = dag_of("matmul_relu").replay([])
    with pytest.raises(InvalidStepError):
        ST.apply_to_schedule(ST.ComputeAtStep(3, 2, 0), sch, [])


@pytest.mark.parametrize("step", [ST.CacheWriteStep(2, "local"), ST.RfactorStep(2, 2, 0)])
def test_bug_dataflow_step_keeps_compute_at_of_attached_stage(step):
    state = make("matmul_relu", ST.ComputeAtStep(2, 3, 1), step)
    assert state.attach_map == {3: (4, 1)}
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)


def test_bug_cache_read_bad_reader_is_invalid_step():
    with pytest.raises(InvalidStepError):
        apply_step(make("matmul"), ST.CacheReadStep(0, "shared", (9,)))


def test_bug_split_with_empty_lengths():
    state = make("matmul")
    try:
        apply_step(state, ST.SplitStep(2, 0, 32, (), True))
    except InvalidStepError:
        return                                           # rejected: fine
    apply_step(state, ST.AnnotationStep(2, 0, PAR))
    _, a, b = lowered_pair("matmul", state)               # NameError: C_i_0
    assert a == b


def test_bug_storage_align_on_reduction_iterator_is_rejected_by_state():
    with pytest.raises(InvalidStepError):
        apply_step(make("matmul"), ST.StorageAlignStep(2, 2, 8, 1))


@pytest.mark.parametrize("rec", [["SP", 2, 0, 32, [4], 1, 99], ["FU", 2, [0, 1], 5],
                                 ["RE", 2, [1, 0], 0], ["CHR", 0, "shared", [2], 1],
                                 ["FFSP", 2, 0, [0], 0, 1, 1]])
def test_bug_step_record_with_extra_fields_is_rejected(rec):
    with pytest.raises(InvalidStepError, match="malformed"):
        step_from_record(rec)


def test_bug_step_from_record_accepts_validated_record_tuples():
    rec = validate_step(["FU", 2, [0, 1]], 0)
    assert rec == ("FU", 2, (0, 1))
    assert step_from_record(rec) == ST.FuseStep(2, (0, 1))


def test_bug_mixed_fuse_of_reduction_stage_builds():
    run_and_compare("matmul", make("matmul", ST.FuseStep(2, (1, 2))))


def test_bug_cache_write_of_stage_with_attached_stages():
    state = make("matmul_relu", ST.CacheReadStep(0, "shared", (2,)), ST.ComputeAtStep(1, 3, 1))
    try:
        apply_step(state, ST.CacheWriteStep(3, "local"))
    except InvalidStepError:
        return                                           # rejected: fine
    sch, args = dag_of("matmul_relu").apply_steps_from_state(state)
    lower(sch, args, name="f")                            # or it must at least lower
