"""Per-step State behaviour: names, extents, attach-map updates, printing."""
import pytest
from autosched_helpers import (
    PAR,
    UNR,
    VEC,
    assert_mirrors_schedule,
    dag_of,
    lowered_pair,
    make,
    record_round_trip,
    run_and_compare,
    scenario_state,
)

from autosched import state as S
from autosched import steps as ST
from autosched.errors import InvalidStepError
from autosched.steps import apply_step, step_from_record


def test_init_state_mirrors_ops():
    state = make("matmul_relu")
    assert [st.name for st in state.stages] == ["A", "B", "C", "R"]
    assert [st.is_placeholder for st in state.stages] == [True, True, False, False]
    c = state.stages[2]
    assert [(it.name, it.extent, it.kind, it.annotation) for it in c.iters] == [
        ("i", 32, S.SPATIAL, S.ANN_NONE), ("j", 32, S.SPATIAL, S.ANN_NONE),
        ("k", 32, S.REDUCTION, S.ANN_NONE)]
    assert state.attach_map == {} and state.transform_steps == [] and state.concrete
    assert str(state) == ("Placeholder: A, B\n"
                          "for i (0,32)\n  for j (0,32)\n    for k (0,32)\n      C = ...\n"
                          "for i (0,32)\n  for j (0,32)\n    R = ...\n")
    assert state.stage_id("C") == 2 and state.stage_id(2) == 2
    assert state.stage_id(dag_of("matmul_relu").tensors[-1]) == 3
    with pytest.raises(KeyError, match="nope"):
        state.stage_id("nope")


def test_apply_step_returns_result_and_records_history():
    state = make("matmul")
    assert apply_step(state, ST.SplitStep(2, 0, 32, (4, 2), True)) == [0, 1, 2]
    assert apply_step(state, ST.FuseStep(2, (1, 2))) == 1
    assert len(state.transform_steps) == 2
    assert dag_of("matmul").state_from_steps(state.transform_steps) == state


def test_annotation_step_state():
    state = scenario_state("AN")
    c, r = state.stages[2], state.stages[3]
    assert [(it.name, it.annotation) for it in c.iters] == [
        ("i.0", PAR), ("i.1", S.ANN_NONE), ("j", S.ANN_NONE), ("k", UNR)]
    assert [(it.name, it.annotation) for it in r.iters] == [("i", S.ANN_NONE), ("j", VEC)]
    text = str(state)
    assert "parallel i.0 (0,4)" in text and "unroll k (0,32)" in text
    assert "vectorize j (0,32)" in text
    assert ST.AnnotationStep(2, 0, PAR).to_record() == ["AN", 2, 0, 3]


def test_annotation_step_prints_python():
    code, _, _ = lowered_pair("matmul_relu", scenario_state("AN"))
    assert "s[C].parallel(C_i_0)" in code
    assert "s[C].unroll(C_k)" in code
    assert "s[R].vectorize(R_j)" in code


def test_annotation_unroll_of_reduction_and_mixed_iterators_allowed():
    state = make("matmul", ST.FuseStep(2, (1, 2)))
    assert state.stages[2].iters[1].kind == S.MIXED
    apply_step(state, ST.AnnotationStep(2, 1, UNR))
    assert state.stages[2].iters[1].annotation == UNR


def test_fuse_step_state_and_attach_update():
    state = scenario_state("FU")
    r, c = state.stages[3], state.stages[2]
    assert [(it.name, it.extent, it.kind, it.annotation) for it in r.iters] == [
        ("i@j@", 1024, S.SPATIAL, PAR)]
    assert [(it.name, it.extent, it.kind) for it in c.iters] == [
        ("i@j@", 1024, S.SPATIAL), ("k", 32, S.REDUCTION)]
    assert state.attach_map == {2: (3, 0)}
    assert str(state) == ("Placeholder: A, B\nparallel i@j@ (0,1024)\n"
                          "  for i@j@ (0,1024)\n    for k (0,32)\n      C = ...\n  R = ...\n")
    mixed = make("matmul", ST.FuseStep(2, (1, 2)))
    assert [(it.name, it.extent, it.kind) for it in mixed.stages[2].iters] == [
        ("i", 32, S.SPATIAL), ("j@k@", 1024, S.MIXED)]
    _, a, b = lowered_pair("matmul", mixed)
    assert a == b


def test_fuse_remaps_attach_points_of_fused_and_later_iterators():
    # attached at the inner fused iterator -> the fused one
    s1 = make("matmul_relu", ST.ComputeAtStep(2, 3, 1), ST.FuseStep(3, (0, 1)))
    assert s1.attach_map == {2: (3, 0)}
    # attached after the fused range -> shifted left
    s2 = make("matmul_relu", ST.SplitStep(3, 0, 32, (4,), True), ST.ComputeAtStep(2, 3, 2),
              ST.FuseStep(3, (0, 1)))
    assert s2.attach_map == {2: (3, 1)}
    assert [it.name for it in s2.stages[3].iters] == ["i.0@i.1@", "j"]
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(s2)
    assert_mirrors_schedule(s2, sch)
    run_and_compare("matmul_relu", s2)


def test_fuse_prints_python():
    code, _, _ = lowered_pair("matmul_relu", scenario_state("FU"))
    assert "R_i_j = s[R].fuse(R_i, R_j)" in code
    assert "s[R].parallel(R_i_j)" in code


def test_pragma_step_state_and_schedule():
    state = scenario_state("PR")
    assert state.stages[2].auto_unroll_max_step == 16
    assert "# auto_unroll_max_step=16\n" in str(state)
    sch, _ = dag_of("matmul").apply_steps_from_state(state)
    stage = sch.stages[2]
    assert stage.pragmas[stage.leaf_iter_vars[0]] == [
        ("pragma_auto_unroll_max_step", 16), ("pragma_unroll_explicit", True)]
    code, _, _ = lowered_pair("matmul", state)
    assert 's[C].pragma(C_i, "auto_unroll_max_step", 16)' in code
    assert 's[C].pragma(C_i, "unroll_explicit", True)' in code
    assert ST.PragmaStep(2, 0, "auto_unroll_max_step$16").to_record() == [
        "PR", 2, 0, "auto_unroll_max_step$16"]


def test_reorder_step_state():
    state = scenario_state("RE")
    assert [(it.name, it.kind) for it in state.stages[2].iters] == [
        ("k", S.REDUCTION), ("i", S.SPATIAL), ("j", S.SPATIAL)]
    assert str(state).startswith("Placeholder: A, B\nfor k (0,32)\n  for i (0,32)\n")
    code, _, _ = lowered_pair("matmul", state)
    assert "s[C].reorder(C_k, C_i, C_j)" in code


def test_reorder_remaps_attach_point():
    state = make("matmul_relu", ST.ComputeAtStep(2, 3, 0), ST.ReorderStep(3, (1, 0)))
    assert state.attach_map == {2: (3, 1)}
    assert str(state).index("for i (0,32)\n    for i (0,32)") > 0   # C under R's i, now inner
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)
    run_and_compare("matmul_relu", state)


def test_split_step_state():
    state = scenario_state("SP")
    assert [(it.name, it.extent, it.kind) for it in state.stages[2].iters] == [
        ("i.0", 4, S.SPATIAL), ("i.1", 4, S.SPATIAL), ("i.2", 2, S.SPATIAL),
        ("j.0", 2, S.SPATIAL), ("j.1", 4, S.SPATIAL), ("j.2", 4, S.SPATIAL),
        ("k.0", 7, S.REDUCTION), ("k.1", 5, S.REDUCTION)]
    assert state.concrete


def test_split_prints_python():
    code, _, _ = lowered_pair("matmul", scenario_state("SP"))
    assert "C_i_o1, C_i_2 = s[C].split(C_i, factor=2)" in code
    assert "C_i_0, C_i_1 = s[C].split(C_i_o1, factor=4)" in code
    assert "C_j_0, C_j_i0 = s[C].split(C_j, nparts=2)" in code
    assert "C_j_1, C_j_2 = s[C].split(C_j_i0, nparts=4)" in code
    assert "C_k_0, C_k_1 = s[C].split(C_k, factor=5)" in code


def test_split_remaps_attach_point_to_innermost_part():
    state = make("matmul_relu", ST.ComputeAtStep(2, 3, 1), ST.SplitStep(3, 1, 32, (4,), True))
    assert state.attach_map == {2: (3, 2)}
    apply_step(state, ST.SplitStep(3, 0, 32, (8,), True))     # iterator before: shift
    assert state.attach_map == {2: (3, 3)}
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)
    run_and_compare("matmul_relu", state)


def test_split_with_unknown_lengths_is_a_sketch():
    state = make("matmul", ST.SplitStep(2, 2, 32, (None, 4), True))
    assert not state.concrete
    assert [(it.name, it.extent) for it in state.stages[2].iters][2:] == [
        ("k.0", None), ("k.1", None), ("k.2", 4)]
    assert "for k.0 (0,?)" in str(state)
    assert state.transform_steps[0].to_record() == ["SP", 2, 2, 32, [0, 4], 1]
    assert step_from_record(["SP", 2, 2, 32, [0, 4], 1]) == state.transform_steps[0]
    with pytest.raises(InvalidStepError, match="unknown lengths"):
        dag_of("matmul").apply_steps_from_state(state)
    assert state.copy().concrete is False


def test_split_record_with_zero_extent_means_unknown_extent():
    step = step_from_record(["SP", 2, 0, 0, [4], 1])
    assert step == ST.SplitStep(2, 0, None, (4,), True)
    state = make("matmul", step)
    assert [it.extent for it in state.stages[2].iters] == [8, 4, 32, 32]


def test_follow_split_step_state():
    state = scenario_state("FSP")
    assert [(it.name, it.extent) for it in state.stages[3].iters] == [
        ("i.0", 4), ("i.1", 4), ("i.2", 2), ("j", 32)]
    # n_split 2 -> (4, 2): same extents as the followed split
    assert [(it.name, it.extent) for it in state.stages[2].iters][:3] == [
        ("i.0", 4), ("i.1", 4), ("i.2", 2)]
    # n_split 3 = len(lengths) + 1 -> (4, 2, 1), as TVM's ExtractSplitLengths
    assert [(it.name, it.extent) for it in state.stages[2].iters][3:] == [
        ("j.0", 4), ("j.1", 4), ("j.2", 2), ("j.3", 1), ("k", 32)]
    assert state.transform_steps[1].lengths(state.transform_steps) == (4, 2)
    assert state.transform_steps[2].lengths(state.transform_steps) == (4, 2, 1)
    assert ST.FollowSplitStep(2, 0, 0, 1).lengths(state.transform_steps) == (8,)
    assert state.attach_map == {2: (3, 1)}


def test_follow_split_prints_concrete_factors():
    code, _, _ = lowered_pair("matmul_relu", scenario_state("FSP"))
    assert "C_i_o1, C_i_2 = s[C].split(C_i, factor=2)" in code
    assert "C_j_o2, C_j_3 = s[C].split(C_j, factor=1)" in code


def test_follow_fused_split_step_state():
    state = scenario_state("FFSP")
    assert [(it.name, it.extent) for it in state.stages[3].iters] == [
        ("i.0@j.0@", 16), ("i.1", 4), ("j.1", 4), ("i.2", 2), ("j.2", 2)]
    c = state.stages[2].iters
    # level 0: 4 * 4 = 16 as a factor; then level 1: 2 * 2 = 4 as nparts
    assert [(it.name, it.extent, it.kind) for it in c] == [
        ("i@j@.0.0", 4, S.SPATIAL), ("i@j@.0.1", 16, S.SPATIAL), ("i@j@.1", 16, S.SPATIAL),
        ("k", 32, S.REDUCTION)]
    steps = state.transform_steps
    assert steps[5].length(steps) == 16 and steps[6].length(steps) == 4
    code, _, _ = lowered_pair("matmul_relu", state)
    assert "C_i_j__0, C_i_j__1 = s[C].split(C_i_j, factor=16)" in code
    assert "C_i_j__0_0, C_i_j__0_1 = s[C].split(C_i_j__0, nparts=4)" in code


def test_follow_split_with_unknown_source_lengths():
    state = make("matmul", ST.SplitStep(2, 0, 32, (None, 4), True),
                 ST.FollowSplitStep(2, 3, 0, 1), ST.FollowFusedSplitStep(2, 5, (0,), 0, True))
    assert [it.extent for it in state.stages[2].iters][3:] == [None, None, None, None]
    assert not state.concrete


def test_storage_align_step_state_and_schedule():
    state = scenario_state("SA")
    assert state.stages[2].storage_offset == 1
    assert str(state) == str(make("matmul_relu"))           # not shown in the loop nest
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    st = sch.stages[2]
    assert st.storage_aligns == {st.op.axis[0]: (8, 1)}
    code, _, _ = lowered_pair("matmul_relu", state)
    assert "s[C].storage_align(C_i, 8, 1)" in code
    assert ST.StorageAlignStep(2, 0, 8, 1).to_record() == ["SA", 2, 0, 8, 1]


def test_compute_at_step_state():
    state = scenario_state("CA")
    assert state.stages[1].compute_at == S.ITER
    assert state.attach_map == {1: (3, 2)}
    assert str(state) == (
        "Placeholder: data, kernel\n"
        "for n (0,1)\n  for f (0,4)\n    for y (0,8)\n"
        "      for n (0,1)\n        for c (0,4)\n          for y (0,10)\n"
        "            for x (0,10)\n              pad = ...\n"
        "      for x (0,8)\n        for rc (0,4)\n          for rh (0,3)\n"
        "            for rw (0,3)\n              conv = ...\n")
    code, _, _ = lowered_pair("conv", state)
    assert "s[pad].compute_at(s[conv], conv_y)" in code


def test_compute_inline_step_state():
    state = scenario_state("CI")
    assert [st.compute_at for st in state.stages] == [S.ROOT, S.INLINED, S.INLINED, S.ROOT]
    assert str(state) == "Placeholder: A\nfor i (0,8)\n  for j (0,16)\n    G = ...\n"
    code, _, _ = lowered_pair("chain", state)
    assert "s[E].compute_inline()" in code and "s[F].compute_inline()" in code
    conv = scenario_state("CI-conv")
    assert conv.stages[1].compute_at == S.INLINED and "pad" not in str(conv)


def test_compute_inline_of_attached_stage_drops_attach_entry():
    state = make("chain", ST.ComputeAtStep(1, 3, 0), ST.ComputeInlineStep(1))
    assert state.attach_map == {} and state.stages[1].compute_at == S.INLINED
    run_and_compare("chain", state)


def test_compute_root_step_state():
    state = scenario_state("CR")
    assert state.attach_map == {2: (3, 1)}
    assert [st.compute_at for st in state.stages] == [S.ROOT, S.ROOT, S.ITER, S.ROOT]
    assert str(state) == ("Placeholder: A\nfor i (0,8)\n  for j (0,16)\n    E = ...\n"
                          "for i (0,8)\n  for j (0,16)\n    for i (0,8)\n      for j (0,16)\n"
                          "        F = ...\n    G = ...\n")
    code, _, _ = lowered_pair("chain", state)
    assert "s[E].compute_root()" in code
    # a CA undone by CR prints as the initial state but keeps its history
    undone = make("chain", ST.ComputeAtStep(1, 3, 0), ST.ComputeRootStep(1))
    assert str(undone) == str(make("chain")) and len(undone.transform_steps) == 2


def test_compute_at_then_inline_and_root_records():
    assert ST.ComputeAtStep(1, 3, 2).to_record() == ["CA", 1, 3, 2]
    assert ST.ComputeInlineStep(1).to_record() == ["CI", 1]
    assert ST.ComputeRootStep(1).to_record() == ["CR", 1]


def test_cache_read_step_inserts_stage_after_source():
    state = make("matmul")
    assert apply_step(state, ST.CacheReadStep(0, "shared", (2,))) == 1
    assert [st.name for st in state.stages] == ["A", "A.shared", "B", "C"]
    new = state.stages[1]
    assert not new.is_placeholder and new.compute_at == S.ROOT
    assert [(it.name, it.extent, it.kind) for it in new.iters] == [
        ("ax0", 32, S.SPATIAL), ("ax1", 32, S.SPATIAL)]
    assert {t.op.name for t in state.stages[3].op.input_tensors} == {"A.shared", "B"}
    assert "A.shared = ..." in str(state)


def test_cache_read_renumbers_attach_map():
    state = make("matmul_relu", ST.SplitStep(3, 0, 32, (4,), True), ST.ComputeAtStep(2, 3, 1))
    apply_step(state, ST.CacheReadStep(0, "shared", (2,)))
    assert [st.name for st in state.stages] == ["A", "A.shared", "B", "C", "R"]
    assert state.attach_map == {3: (4, 1)}
    assert [it.name for it in state.stages[4].iters] == ["i.0", "i.1", "j"]  # loops kept
    apply_step(state, ST.ComputeAtStep(1, 3, 0))
    assert state.attach_map == {3: (4, 1), 1: (3, 0)}
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)
    run_and_compare("matmul_relu", state)
    back = record_round_trip("matmul_relu", state)
    assert str(back) == str(state)
    _, a, b = lowered_pair("matmul_relu", state)
    assert a == b


def test_cache_read_prints_python():
    code, _, _ = lowered_pair("matmul", scenario_state("CHR"))
    assert 'A_shared = s.cache_read(A, "shared", [C])' in code
    assert "s[A_shared].compute_at(s[C], C_i_1)" in code
    assert ST.CacheReadStep(0, "shared", (2,)).to_record() == ["CHR", 0, "shared", [2]]


def test_cache_write_step_inserts_stage_before_original():
    state = make("matmul_relu")
    assert apply_step(state, ST.CacheWriteStep(2, "local")) == 2
    assert [st.name for st in state.stages] == ["A", "B", "C.local", "C", "R"]
    assert [(it.name, it.kind) for it in state.stages[2].iters] == [
        ("i_c", S.SPATIAL), ("j_c", S.SPATIAL), ("k_c", S.REDUCTION)]
    assert [(it.name, it.kind) for it in state.stages[3].iters] == [
        ("i", S.SPATIAL), ("j", S.SPATIAL)]
    assert state.stages[3].op.reduce_axis == () or not state.stages[3].op.reduce_axis
    code, _, _ = lowered_pair("matmul_relu", state)
    assert 'C_local = s.cache_write(C, "local")' in code
    assert ST.CacheWriteStep(2, "local").to_record() == ["CHW", 2, "local"]


def test_cache_write_renumbers_attach_map():
    state = make("matmul_relu", ST.CacheReadStep(0, "shared", (2,)),
                 ST.ComputeAtStep(1, 3, 1))
    assert state.attach_map == {1: (3, 1)}
    apply_step(state, ST.CacheWriteStep(4, "local"))      # R: inserted before R, after C
    assert [st.name for st in state.stages] == ["A", "A.shared", "B", "C", "R.local", "R"]
    assert state.attach_map == {1: (3, 1)}
    apply_step(state, ST.ComputeAtStep(4, 5, 1))
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)
    run_and_compare("matmul_relu", state)
    # attached stage and target both after the inserted stage: both renumbered
    state = make("matmul_relu", ST.CacheReadStep(2, "shared", (3,)),
                 ST.ComputeAtStep(3, 4, 1))
    assert [st.name for st in state.stages] == ["A", "B", "C", "C.shared", "R"]
    apply_step(state, ST.CacheWriteStep(2, "local"))
    assert [st.name for st in state.stages] == ["A", "B", "C.local", "C", "C.shared", "R"]
    assert state.attach_map == {4: (5, 1)}
    assert [st.compute_at for st in state.stages[2:]] == [S.ROOT, S.ROOT, S.ITER, S.ROOT]
    apply_step(state, ST.ComputeAtStep(2, 3, 0))
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)
    run_and_compare("matmul_relu", state)
    assert str(record_round_trip("matmul_relu", state)) == str(state)
    _, a, b = lowered_pair("matmul_relu", state)
    assert a == b


def test_rfactor_step_state():
    state = make("rowsum", ST.SplitStep(1, 1, 64, (8,), True))
    assert apply_step(state, ST.RfactorStep(1, 2, 1)) == 1
    assert [st.name for st in state.stages] == ["A", "S.rf", "S"]
    assert [(it.name, it.extent, it.kind) for it in state.stages[1].iters] == [
        ("i", 16, S.SPATIAL), ("k_inner", 8, S.SPATIAL), ("k_outer", 8, S.REDUCTION)]
    assert [(it.name, it.extent, it.kind) for it in state.stages[2].iters] == [
        ("i", 16, S.SPATIAL), ("k_inner_v", 8, S.REDUCTION)]
    rf = make("rowsum", ST.SplitStep(1, 1, 64, (8,), True), ST.RfactorStep(1, 1, 0))
    assert [(it.name, it.extent, it.kind) for it in rf.stages[1].iters] == [
        ("k_outer", 8, S.SPATIAL), ("i", 16, S.SPATIAL), ("k_inner", 8, S.REDUCTION)]
    assert ST.RfactorStep(1, 2, 1).to_record() == ["RF", 1, 2, 1]


def test_rfactor_renumbers_attach_map():
    state = make("matmul_relu", ST.CacheReadStep(2, "shared", (3,)),
                 ST.ComputeAtStep(3, 4, 1), ST.SplitStep(2, 2, 32, (4,), True))
    assert apply_step(state, ST.RfactorStep(2, 3, 0)) == 2
    assert [st.name for st in state.stages] == ["A", "B", "C.rf", "C", "C.shared", "R"]
    assert state.attach_map == {4: (5, 1)}
    assert [(it.name, it.kind) for it in state.stages[2].iters] == [
        ("k_inner", S.SPATIAL), ("i", S.SPATIAL), ("j", S.SPATIAL), ("k_outer", S.REDUCTION)]
    apply_step(state, ST.ComputeAtStep(2, 3, 1))
    sch, _ = dag_of("matmul_relu").apply_steps_from_state(state)
    assert_mirrors_schedule(state, sch)
    run_and_compare("matmul_relu", state)
    assert str(record_round_trip("matmul_relu", state)) == str(state)
    _, a, b = lowered_pair("matmul_relu", state)
    assert a == b


def test_rfactor_prints_python():
    code, _, _ = lowered_pair("rowsum", scenario_state("RF"))
    assert "S_rf = s.rfactor(S, S_k_1, 1)" in code
    assert "s[S_rf].compute_at(s[S], S_i)" in code
    assert "s[S].parallel(S_i)" in code


def test_full_sketch_state_text():
    state = scenario_state("sketch")
    assert str(state) == (
        "Placeholder: A, B\n"
        "parallel i.0@j.0@ (0,4)\n"
        "  for i.1 (0,2)\n"
        "    for j.1 (0,2)\n"
        "      for i_c.0 (0,2)\n        for j_c.0 (0,2)\n          for i_c.1 (0,2)\n"
        "            for j_c.1 (0,2)\n              for k_c.0 (0,8)\n"
        "                for i_c.2 (0,4)\n                  for j_c.2 (0,4)\n"
        "                    for k_c.1 (0,4)\n                      for i_c.3 (0,2)\n"
        "                        vectorize j_c.3 (0,2)\n"
        "                          C.local = ...\n"
        "      for i.2 (0,8)\n        vectorize j.2 (0,8)\n"
        "          # auto_unroll_max_step=16\n          C = ...\n")
    assert state.attach_map == {2: (3, 2)}


def test_states_differing_only_in_loop_steps_share_their_ops():
    # ops are keyed by the dataflow steps (and the loops of the stage they rewrite), so
    # per-op analyses (features) stay cached across tile-size mutations
    a = make("matmul", ST.CacheWriteStep(2, "local"), ST.SplitStep(3, 0, 32, (8,), True))
    b = make("matmul", ST.CacheWriteStep(2, "local"), ST.SplitStep(3, 0, 32, (4,), True))
    assert all(x.op is y.op for x, y in zip(a.stages, b.stages))
    c = make("rowsum", ST.SplitStep(1, 1, 64, (8,), True), ST.RfactorStep(1, 2, 1))
    d = make("rowsum", ST.SplitStep(1, 1, 64, (8,), True), ST.RfactorStep(1, 2, 1),
             ST.SplitStep(2, 0, 16, (4,), True))
    e = make("rowsum", ST.SplitStep(1, 1, 64, (4,), True), ST.RfactorStep(1, 2, 1))
    assert c.stages[1].op is d.stages[1].op
    assert c.stages[1].op is not e.stages[1].op          # another factor: another op
    assert [it.extent for it in e.stages[1].iters] == [16, 4, 16]
