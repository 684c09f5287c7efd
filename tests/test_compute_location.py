"""Compute-location candidates as TVM's GetComputeLocationCandidates: a tiled consumer
offers its outer reduce tiles, an untiled one stops at its first reduce loop, loops of
extent 1 are skipped (with the attachment that would end the scan), an attached
consumer skips its first-level tiles and offers the stage it is attached to; a stage
computed at any offered place computes what numpy does."""
import random

from autosched_helpers import make, run_and_compare, task_of

import autosched as auto
from autosched import state as S
from autosched.search.init_rules import (
    change_compute_location,
    location_candidates,
    location_scan,
    places_of_scan,
)
from autosched.search.mutation_rules import mutate_compute_location, replay
from autosched.steps import registry as ST

PAD, CONV = 1, 3        # steps_test_conv: data, pad, kernel, conv


def _pad_placements(n=40, seed=0):
    """(state, k, the state before step k) for every compute-at of the padding in a
    sampled population of the small conv."""
    pop = auto.SketchPolicy(task_of("conv"), seed=seed, verbose=0).sample_initial_population(n)
    out = []
    for st in pop:
        for k, step in enumerate(st.transform_steps):
            if isinstance(step, ST.ComputeAtStep) and step.stage_id == PAD:
                out.append((st, k, replay(st.dag, st.transform_steps[:k])))
    return out


def _kinds(state, places):
    return [state.stages[t].iters[i].kind for t, i in places]


def test_untiled_consumer_stops_at_its_reduce_loop_and_skips_extent_one():
    state = make("conv")
    # conv's loops: n (extent 1, skipped), f, y, x, then rc: the scan stops there
    assert location_candidates(state, PAD) == [(CONV, 1), (CONV, 2), (CONV, 3)]


def test_tiled_consumer_offers_its_outer_reduce_tiles():
    offered = 0
    for _, _, before in _pad_placements():
        places = location_candidates(before, PAD)
        for t in {t for t, _ in places}:
            kinds = [before.stages[t].iters[i].kind for tt, i in places if tt == t]
            # no spatial loop inside a reduce loop: the inner tiles are not offered
            first = kinds.index(S.REDUCTION) if S.REDUCTION in kinds else len(kinds)
            assert S.REDUCTION not in kinds[:first] and S.SPATIAL not in kinds[first:]
        offered += S.REDUCTION in _kinds(before, places)
    assert offered >= 5


def test_attached_consumer_skips_its_first_tiles_and_offers_its_root():
    nested = with_root = 0
    for _, _, before in _pad_placements():
        scan = location_scan(before, PAD)
        if not scan or before.stages[scan[0][0]].compute_at != S.ITER:
            continue
        nested += 1
        target = scan[0][0]
        root, at = before.attach_map[target]
        places = location_candidates(before, PAD)
        own = [before.stages[t].iters[i] for t, i in places if t == target]
        assert not any(it.kind == S.SPATIAL and it.name.endswith(".0") for it in own)
        outer = [i for t, i in places if t == root]
        # the root's loops outside the one the consumer is attached at (those of
        # extent > 1), all spatial
        assert all(i < at for i in outer)
        assert all(before.stages[root].iters[i].kind == S.SPATIAL for i in outer)
        with_root += bool(outer)
    assert nested >= 5 and with_root >= 3


def test_extent_one_loops_are_skipped_with_their_attachment():
    scan = [(3, 0, False), (3, 1, True), (3, 2, False), (4, 0, False)]
    assert places_of_scan(scan, lambda t, k: False) == [(3, 0), (3, 1), (4, 0)]
    # TVM skips a loop of extent 1 before it checks what is attached there
    assert places_of_scan(scan, lambda t, k: (t, k) == (3, 1)) == [(3, 0), (3, 2), (4, 0)]


def test_padding_computed_in_a_reduce_tile_computes_the_same():
    built = 0
    for st, k, before in _pad_placements():
        reduce_places = [p for p in location_candidates(before, PAD)
                         if before.stages[p[0]].iters[p[1]].kind == S.REDUCTION]
        if not reduce_places:
            continue
        steps = list(st.transform_steps)
        steps[k] = ST.ComputeAtStep(PAD, *reduce_places[-1])
        moved = replay(st.dag, steps)
        assert moved is not None
        run_and_compare("conv", moved)
        built += 1
        if built == 3:
            break
    assert built == 3


def test_mutation_moves_the_padding_only_to_offered_places():
    rng = random.Random(0)
    moved = 0
    for st, _, before in _pad_placements():
        child = mutate_compute_location(st, rng)
        if child is None:
            continue
        step = next(s for s in child.transform_steps
                    if isinstance(s, ST.ComputeAtStep) and s.stage_id == PAD)
        assert (step.target_stage_id, step.target_iter_id) in location_candidates(before, PAD)
        moved += 1
    assert moved >= 10


def test_init_places_but_never_inlines_a_stage_at_the_root():
    # TVM's InitChangeComputeLocation: the padding (at the root in the sketch) is
    # computed at a candidate or left at the root, each alike likely; never inlined
    pop = auto.SketchPolicy(task_of("conv"), seed=1, verbose=0).sample_initial_population(60)
    where = [st.stages[PAD].compute_at for st in pop]
    assert S.INLINED not in where
    assert where.count(S.ROOT) >= 5 and where.count(S.ITER) >= 20


def test_init_keeps_what_the_sketch_attached():
    state = make("conv", ST.ComputeAtStep(PAD, CONV, 2))
    for seed in range(20):
        st = change_compute_location(state.copy(), random.Random(seed))
        assert st.transform_steps == state.transform_steps
