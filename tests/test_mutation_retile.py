"""Re-tiling without replay (``search.retile.retiled``), as the tile-size mutation and
the random sampling of sketches use it: a State built from the loop model's mirrored
leaves must be the State its steps replay to -- same printout, iterators, ops, attach
map and dataflow key, same features -- and the fast path must decline (so the steps are
replayed) wherever that could differ."""
import pickle
import random

import numpy as np
import pytest

import autosched as auto
from autosched import catalog
from autosched import state as S
from autosched.errors import InvalidStepError
from autosched.features.extract import featurize_raw
from autosched.features.nest import (
    _nest_plan,
    _remirror_plan,
    extended_leaves,
    leaves_agree,
    leaves_of,
    mirror_leaves,
    remirror_leaves,
)
from autosched.loop_state import LoopState
from autosched.search import init_rules, mutation_rules
from autosched.search.init_rules import location_candidates
from autosched.search.mutation_rules import mutate_compute_location, mutate_tile_size, replay
from autosched.search.retile import retiled, reunrolled
from autosched.steps import registry as ST
from autosched.steps.compute import scope_violation
from autosched.steps.registry import apply_step

# the workload families the fast paths are compared with replay on
FAMILIES = ["matmul", "conv2d_nchw", "dense_bias_relu", "depthwise_conv2d", "softmax",
            "conv2d_nhwc"]


def _task(name):
    spec = catalog.BUILTIN.get(name)
    return auto.SearchTask(func=name, args=spec.default_args if spec else (128, 96, 64))


def _tile_children(name, n_states=40, generations=2, seed=0):
    """(parent, child) pairs of tile-size mutations over a few generations."""
    task = _task(name)
    cur = auto.SketchPolicy(task, seed=seed, verbose=0).sample_initial_population(n_states)
    rng = random.Random(seed)
    pairs = []
    for _ in range(generations):
        nxt = []
        for _ in range(3 * n_states):
            parent = rng.choice(cur)
            child = mutate_tile_size(parent, rng)
            if child is not None:
                pairs.append((parent, child))
                nxt.append(child)
        cur = nxt or cur
    return pairs


def _fast(child) -> bool:
    """Whether ``child`` was built by the fast path (it leaves its mirrored leaves)."""
    return child._leaves is not None and child._leaves[1] is True


@pytest.mark.parametrize("name", FAMILIES)
def test_retiled_children_equal_their_replay(name):
    pairs = _tile_children(name)
    assert len(pairs) > 50
    n_fast = 0
    for _, child in pairs:
        n_fast += _fast(child)
        _assert_replays_to_itself(child)
    if name == "softmax":
        # its tiled reduction is split before the rfactor, whose op depends on the split
        assert n_fast < len(pairs)
    else:
        assert n_fast > 0.9 * len(pairs), (n_fast, len(pairs))


@pytest.mark.parametrize("name", ["matmul", "conv2d_nchw", "depthwise_conv2d"])
def test_a_retiled_childs_printout_extents_come_from_its_printed_parent(name):
    """As in the evolution, a parent is printed before it is mutated: its child then
    carries the template's extents (its parent's with the changed ones replaced), and
    its printout is the one a walk of its own iterators gives, over generations."""
    task = _task(name)
    cur = auto.SketchPolicy(task, seed=1, verbose=0).sample_initial_population(30)
    rng = random.Random(1)
    carried = 0
    for _ in range(3):
        nxt = []
        for _ in range(60):
            parent = rng.choice(cur)
            str(parent)
            child = mutate_tile_size(parent, rng)
            if child is None or not _fast(child):
                continue
            carried += child._fill is not None
            assert str(child) == S._print_state(child)
            nxt.append(child)
        cur = nxt or cur
    assert carried > 100


def _assert_replays_to_itself(st):
    again = replay(st.dag, st.transform_steps)
    assert again is not None
    assert str(again) == str(st)
    assert [s.iters for s in again.stages] == [s.iters for s in st.stages]
    assert [s.op for s in again.stages] == [s.op for s in st.stages]
    assert again.attach_map == st.attach_map
    assert again.dataflow_key == st.dataflow_key
    assert again.concrete == st.concrete
    assert np.array_equal(featurize_raw(again), featurize_raw(st))
    # what a shared struct_memo answers for ``st`` is what its own replay computes
    assert _structure_facts(again) == _structure_facts(st)


def _structure_facts(st) -> tuple:
    splits = None
    if mutate_tile_size(st, random.Random(0)) is not None:
        splits = tuple(st.struct_memo()["tile_splits"])
    return scope_violation(st), _nest_plan(st), splits


@pytest.mark.parametrize("name", FAMILIES)
def test_sampled_tile_sizes_equal_their_replay(name, monkeypatch):
    sketches = auto.SketchPolicy(_task(name), seed=0, verbose=0).generate_sketches()
    taken = []
    real = init_rules.retiled

    def spy(*args):
        out = real(*args)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(init_rules, "retiled", spy)
    rng = random.Random(0)
    for _ in range(60):
        _assert_replays_to_itself(init_rules.fill_tile_sizes(rng.choice(sketches), rng))
    if name == "softmax":       # split before its rfactor: always replayed
        assert not any(taken)
    else:
        assert len(taken) == 60 and all(taken)


def _split_twice(outer_len):
    """matmul C: i split by [16], then its inner piece i.1 (extent 16) split by [4];
    the first split's lengths replaced by ``outer_len``."""
    dag = _task("matmul").compute_dag
    st = dag.get_init_state()
    C = dag.tensors[-1]
    st.split(C, 0, [16])
    st.split(C, 1, [4])
    steps = list(st.transform_steps)
    first = steps[0]
    steps[0] = ST.SplitStep(first.stage_id, first.iter_id, first.extent, (outer_len,),
                            first.inner_to_outer)
    return st, steps


def test_retiled_declines_when_a_later_split_sees_another_extent():
    st, steps = _split_twice(8)          # i.1 becomes 8 long; the second split expects 16
    assert leaves_agree(st)
    assert replay(st.dag, steps) is None
    assert retiled(st, 0, steps) is None
    st2, same = _split_twice(16)          # unchanged lengths: the fast path applies
    child = retiled(st2, 0, same)
    assert child is not None and str(child) == str(replay(st2.dag, same))


def test_retiled_declines_before_a_dataflow_step():
    dag = _task("matmul").compute_dag
    st = dag.get_init_state()
    C = dag.tensors[-1]
    st.split(C, 0, [16])
    st.cache_read(dag.tensors[0], "local", [C])
    steps = list(st.transform_steps)
    steps[0] = ST.SplitStep(steps[0].stage_id, steps[0].iter_id, steps[0].extent, (8,),
                            steps[0].inner_to_outer)
    assert retiled(st, 0, steps) is None


def test_leaves_memo_is_cleared_when_a_step_is_applied():
    dag = _task("matmul").compute_dag
    st = dag.get_init_state()
    before = leaves_of(st)
    assert st._leaves is not None
    st.split(dag.tensors[-1], 0, [16])
    assert st._leaves is None
    assert len(leaves_of(st)[-1]) == len(before[-1]) + 1


def test_retiled_children_share_the_struct_memo_and_a_step_makes_a_new_one():
    pairs = _tile_children("matmul", n_states=10, generations=1)
    parent, child = next((p, c) for p, c in pairs if _fast(c))
    assert child.struct_memo() is parent.struct_memo()
    memo = parent.struct_memo()
    assert scope_violation(parent) is None and memo["scope"] is None
    memo["scope"] = "sentinel"                 # answered from the memo, not recomputed
    assert scope_violation(child) == "sentinel"
    again = replay(child.dag, child.transform_steps)
    assert again.struct_memo() is not memo and scope_violation(again) is None
    apply_step(child, ST.FuseStep(len(child.stages) - 1, (0, 1)))   # a new structure
    assert child.struct_memo() is not memo and "scope" not in child.struct_memo()
    assert scope_violation(child) is None


def test_retiled_states_of_one_structure_share_their_changed_iterators():
    """A changed iterator is decided by the structure and its extent: two re-tiled
    states of one structure hold the same object for it, equal to what a replay makes."""
    pairs = [(p, c) for p, c in _tile_children("matmul", n_states=20) if _fast(c)]
    seen: dict = {}
    reused = 0
    for parent, child in pairs:
        for sid, (st, pst) in enumerate(zip(child.stages, parent.stages)):
            for j, (it, pit) in enumerate(zip(st.iters, pst.iters)):
                if it.extent == pit.extent:
                    continue
                key = (id(child.struct_memo()), sid, j, it.extent)
                if key in seen:
                    assert seen[key] is it, key
                    reused += 1
                seen[key] = it
    assert reused > 10
    for _, child in pairs[:20]:
        _assert_replays_to_itself(child)


@pytest.mark.parametrize("name", ["matmul", "conv2d_nchw", "dense_bias_relu",
                                  "depthwise_conv2d", "conv2d_nhwc"])
def test_samples_with_the_same_annotation_tail_share_their_structure(name):
    sketches = auto.SketchPolicy(_task(name), seed=0, verbose=0).generate_sketches()
    rng = random.Random(0)
    samples = []
    for _ in range(80):
        try:
            samples.append(init_rules.sample_state(rng.choice(sketches), rng, 2))
        except InvalidStepError:        # a sample the rules refuse is skipped
            continue
    for st in samples:
        _assert_replays_to_itself(st)
    memos = {id(st._struct) for st in samples if st._struct is not None}
    assert len(memos) < len(samples)            # some samples share one


def test_a_pickled_state_leaves_its_memos_behind():
    st = _tile_children("matmul", n_states=5, generations=1)[0][1]
    rows = featurize_raw(st)
    assert "print_template" in st._struct and st._leaves is not None
    for cls in (type(st), LoopState):
        copy = pickle.loads(pickle.dumps(cls.of(st) if cls is LoopState else st))
        assert type(copy) is cls
        assert copy._struct is None and copy._leaves is None
        assert str(copy) == str(st) and copy.transform_steps == st.transform_steps
        assert np.array_equal(featurize_raw(copy), rows)


@pytest.mark.parametrize("name", ["matmul", "conv2d_nchw", "dense_bias_relu",
                                  "conv2d_nhwc"])
def test_compute_location_places_are_kept_per_structure(name):
    """The places a compute-at step may move to are memoized per structure (so per
    k): every state, sharing its memo or not, gets what its own prefix offers."""
    pairs = _tile_children(name, n_states=30, generations=1)
    states = [st for pair in pairs for st in pair]
    checked = 0
    for st in states:
        for k, step in enumerate(st.transform_steps):
            if isinstance(step, ST.ComputeAtStep):
                before = replay(st.dag, st.transform_steps[:k])
                assert mutation_rules._places_before(st, k) == \
                    location_candidates(before, step.stage_id)
                checked += 1
    assert checked >= len(states) // 2
    rng = random.Random(1)
    children = [mutate_compute_location(st, rng) for st in states[:40]]
    moved = [c for c in children if c is not None]
    # dense's compute-at stages have a single place, the one they are at
    assert bool(moved) == (name != "dense_bias_relu")
    for child in moved:
        _assert_replays_to_itself(child)


@pytest.mark.parametrize("name", ["matmul", "conv2d_nchw", "dense_bias_relu",
                                  "depthwise_conv2d", "conv2d_nhwc", "batch_matmul"])
def test_remirrored_leaves_equal_a_full_mirror_and_share_the_untouched_stages(name):
    pairs = _tile_children(name)
    n_shared = 0
    for parent, child in pairs:
        changed = [j for j, (a, b) in enumerate(zip(child.transform_steps,
                                                     parent.transform_steps)) if a is not b]
        if not changed or child._struct is not parent._struct:
            continue                     # replayed children: not retile's case
        full = mirror_leaves(child, check_splits=True)
        again = remirror_leaves(parent, child, changed)
        assert again == full, str(child)
        touched = {child.transform_steps[j].stage_id for j in changed}
        n_shared += sum(a is b for sid, (a, b) in enumerate(zip(again, leaves_of(parent)))
                        if sid not in touched)
    assert n_shared > 0


def test_remirror_plan_marks_stages_split_before_a_dataflow_step():
    # rfactor: the reduction is split, then factored out -- the stages that split acts
    # on are not the structure's alone, so re-mirroring them falls back to a full mirror
    dag = _task("matmul").compute_dag
    state = dag.init_state()
    apply_step(state, ST.SplitStep(2, 2, state.stages[2].iters[2].extent, (16,), True))
    apply_step(state, ST.RfactorStep(2, 3, 2))
    plan = _remirror_plan(state)
    assert 2 not in plan[0] or 3 not in plan[0]
    assert all(sid in plan[3] for sid in plan[0])
    assert plan[4] == tuple(state.transform_steps)


def _unroll_children(name, n_states=40, seed=0):
    """(parent, k, value, child) of auto-unroll mutations that keep a pragma (value > 0)
    of sampled and re-tiled states."""
    pairs = _tile_children(name, n_states=n_states, generations=1, seed=seed)
    states = [p for p, _ in pairs] + [c for _, c in pairs]
    out = []
    for st in states:
        for k, step in enumerate(st.transform_steps):
            if isinstance(step, ST.PragmaStep):
                cur = int(step.pragma_type.partition("$")[2])
                for v in init_rules.AUTO_UNROLL_CONFIGS:
                    if v and v != cur:
                        out.append((st, k, v, reunrolled(st, k, v)))
    return out


@pytest.mark.parametrize("name", FAMILIES)
def test_reunrolled_children_equal_their_replay(name):
    made = _unroll_children(name)
    assert len(made) > 50
    built = 0
    for parent, k, v, child in made:
        steps = list(parent.transform_steps)
        steps[k] = ST.PragmaStep(steps[k].stage_id, steps[k].iter_id,
                                 f"auto_unroll_max_step${v}")
        if child is None:
            continue
        built += 1
        assert child.transform_steps == steps
        str(parent)                     # the parent's printout extents were filled
        _assert_replays_to_itself(child)
        assert _nest_plan(child) == _nest_plan(parent)
        assert child.print_template() != parent.print_template()
    assert built > 0.9 * len(made), (built, len(made))


def test_reunrolled_declines_what_it_cannot_build_exactly():
    made = _unroll_children("matmul", n_states=10)
    parent, k, v, child = made[0]
    assert child is not None
    assert reunrolled(parent, k, 0) is None              # removing shifts the steps
    split = next(i for i, s in enumerate(parent.transform_steps)
                 if isinstance(s, ST.SplitStep))
    assert reunrolled(parent, split, v) is None          # not a pragma step


def test_reunrolled_children_of_one_change_share_a_struct_memo():
    made = [m for m in _unroll_children("conv2d_nchw", n_states=20) if m[3] is not None]
    by_change: dict = {}
    for parent, k, v, child in made:
        by_change.setdefault((id(parent.struct_memo()), k, v), []).append(child)
    shared = [kids for kids in by_change.values() if len(kids) > 1]
    assert shared
    for kids in shared:
        assert all(c.struct_memo() is kids[0].struct_memo() for c in kids)
    # what the parent's structure had derived before, the child has at once; the
    # printout's template it derives anew (its pragma line differs)
    parent, k, v, _ = made[0]
    parent = replay(parent.dag, parent.transform_steps)      # a structure of its own
    plan, template = _nest_plan(parent), parent.print_template()
    child = reunrolled(parent, k, v)
    assert _nest_plan(child) is plan
    assert "print_template" not in child.struct_memo()
    assert child.print_template() != template


@pytest.mark.parametrize("name", ["matmul", "conv2d_nchw", "depthwise_conv2d",
                                  "conv2d_nhwc", "softmax"])
def test_replayed_children_of_one_change_share_a_struct_memo(name):
    """Compute-location, parallel and pragma-removing mutations replay; the children one
    such change makes from states of one structure share one struct memo, and what it
    answers for each is what the child's own replay computes."""
    pairs = _tile_children(name, n_states=30, generations=1)
    states = [st for pair in pairs for st in pair]
    rng = random.Random(2)
    made: dict = {}
    for st in states:
        for rule in (mutate_compute_location, mutation_rules.mutate_parallel,
                     mutation_rules.mutate_auto_unroll):
            child = rule(st, rng)
            if child is None or child._struct is st._struct:
                continue
            changed = [(i, s) for i, s in enumerate(child.transform_steps)
                       if i >= len(st.transform_steps) or s is not st.transform_steps[i]]
            made.setdefault(id(child.struct_memo()), []).append(child)
            assert changed or len(child.transform_steps) != len(st.transform_steps)
    groups = [kids for kids in made.values() if len(kids) > 1]
    assert groups, "no change was made twice from one structure"
    for kids in groups:
        for child in kids[:4]:
            _assert_replays_to_itself(child)


# softmax's sketches have no split to fill: its samples are replayed, not re-tiled
@pytest.mark.parametrize("name", [f for f in FAMILIES if f != "softmax"] + ["batch_matmul"])
def test_sampled_states_carry_leaves_equal_to_a_full_mirror(name):
    # a sample is a re-tiled fill plus compute-location, fuse and annotation steps:
    # its leaves are the fill's extended by those steps, never mirrored again
    task = _task(name)
    pop = auto.SketchPolicy(task, seed=3, verbose=0).sample_initial_population(60)
    carried = [st for st in pop if st._leaves is not None]
    assert carried, "no sample carries its leaves"
    for st in carried:
        assert st._leaves[0] == mirror_leaves(st), str(st)
        assert leaves_agree(st)
        np.testing.assert_array_equal(featurize_raw(st),
                                      featurize_raw(replay(task.compute_dag,
                                                           st.transform_steps)))


def test_extended_leaves_share_untouched_stages_and_decline_a_dataflow_step():
    task = _task("matmul")
    st = task.compute_dag.init_state()
    apply_step(st, ST.SplitStep(2, 0, 256, (8,), True))
    base = mirror_leaves(st)
    n = len(st.transform_steps)
    apply_step(st, ST.FuseStep(2, (0, 1)))
    apply_step(st, ST.AnnotationStep(2, 0, S.ANN_PARALLEL))
    got = extended_leaves(base, st.transform_steps, n)
    assert got == mirror_leaves(st)
    assert got[0] is base[0] and got[2] is not base[2]      # copied only where changed
    assert extended_leaves(base, st.transform_steps, len(st.transform_steps)) is base
    apply_step(st, ST.CacheReadStep(0, "local", (2,)))         # stages move
    assert extended_leaves(base, st.transform_steps, n) is None
