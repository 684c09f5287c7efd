"""The parallel mutation (TVM's MutateParallel): it changes how many outer loops the fuse
before a parallel annotation joins, shifts the later steps of that stage to the new loop
positions, keeps every other step, and declines (None) what TVM's rule declines."""
import random

from autosched_helpers import make, run_and_compare, task_of

import autosched as auto
from autosched import state as S
from autosched.search.mutation_rules import (
    _fusable_before,
    _is_fused_parallel,
    mutate_parallel,
    replay,
)
from autosched.steps import registry as ST


def _population(name, n=60, seed=0):
    return auto.SketchPolicy(task_of(name), seed=seed, verbose=0).sample_initial_population(n)


def _candidates(state) -> list:
    steps = state.transform_steps
    return [k for k in range(1, len(steps)) if _is_fused_parallel(steps, k)]


def _shift(step, offset):
    """The expected later step of the re-fused stage."""
    if isinstance(step, ST.FuseStep):
        return ST.FuseStep(step.stage_id, tuple(i + offset for i in step.fused_ids))
    if step.iter_id == 0:
        return step
    if isinstance(step, ST.AnnotationStep):
        return ST.AnnotationStep(step.stage_id, step.iter_id + offset, step.annotation)
    return ST.PragmaStep(step.stage_id, step.iter_id + offset, step.pragma_type)


def _check_child(parent, child) -> int:
    """Assert ``child`` is ``parent`` with one parallel fuse changed; its new length."""
    old, new = parent.transform_steps, child.transform_steps
    assert len(old) == len(new)
    diff = [k for k, (a, b) in enumerate(zip(old, new)) if a != b]
    k = diff[0]
    fuse, ann = new[k], new[k + 1]
    assert isinstance(fuse, ST.FuseStep) and fuse.stage_id == old[k].stage_id
    assert ann == old[k + 1] and ann.annotation == S.ANN_PARALLEL
    assert _is_fused_parallel(old, k + 1)
    m = len(fuse.fused_ids)
    assert fuse.fused_ids == tuple(range(m)) and m != len(old[k].fused_ids)
    assert 1 <= m <= _fusable_before(parent, k)
    offset = len(old[k].fused_ids) - m
    for j in range(k + 2, len(old)):
        want = _shift(old[j], offset) if old[j].stage_id == fuse.stage_id else old[j]
        assert new[j] == want, j
    assert all(j in (k, *range(k + 2, len(old))) for j in diff)
    # the parallel loop is the product of the loops it now joins
    before = replay(parent.dag, old[:k])
    ext = 1
    for it in before.stages[fuse.stage_id].iters[:m]:
        ext *= it.extent
    par = child.stages[fuse.stage_id].iters[0]
    assert par.annotation == S.ANN_PARALLEL and par.extent == ext
    return m


def test_mutate_parallel_changes_only_the_parallel_fuse():
    for name in ("matmul_relu", "conv"):
        rng = random.Random(1)
        children = 0
        for parent in _population(name):
            child = mutate_parallel(parent, rng)
            if child is not None:
                _check_child(parent, child)
                children += 1
        assert children >= 10, name


def test_mutate_parallel_draws_every_granularity():
    parent = next(st for st in _population("matmul_relu")
                  if any(_fusable_before(st, k - 1) >= 3 for k in _candidates(st)))
    k = _candidates(parent)[0]
    n = _fusable_before(parent, k - 1)
    rng = random.Random(0)
    seen, declined = set(), 0
    for _ in range(40 * n):
        child = mutate_parallel(parent, rng)
        if child is None:
            declined += 1      # the draw was the parent's own granularity
        else:
            seen.add(_check_child(parent, child))
    old = len(parent.transform_steps[k - 1].fused_ids)
    assert seen == set(range(1, n + 1)) - {old}
    assert declined > 0


def test_mutated_parallel_kernels_compute_the_same():
    for name in ("matmul_relu", "conv"):
        rng = random.Random(2)
        built = 0
        for parent in _population(name, n=30):
            child = mutate_parallel(parent, rng)
            if child is not None:
                run_and_compare(name, child)
                built += 1
            if built == 3:
                break
        assert built == 3, name


def test_mutate_parallel_declines_what_it_cannot_follow():
    rng = random.Random(0)
    parent = next(st for st in _population("matmul_relu") if len(_candidates(st)) == 1)
    sid = parent.transform_steps[_candidates(parent)[0]].stage_id
    n = len(parent.stages[sid].iters)
    # a later step of the stage that is not an annotation, pragma or fuse
    other = replay(parent.dag, [*parent.transform_steps,
                                ST.ReorderStep(sid, tuple(range(n)))])
    assert other is not None
    assert all(mutate_parallel(other, rng) is None for _ in range(20))
    # no parallel annotation after a fuse of the outermost loops
    bare = replay(parent.dag, parent.transform_steps[:_candidates(parent)[0] - 1])
    assert not _candidates(bare)
    assert mutate_parallel(bare, rng) is None


def test_mutate_parallel_shifts_a_later_fuse_of_the_stage():
    # G = ((2A + 1))^2 over (8, 16): j split in three, the two outer loops fused and
    # parallel, the two inner ones fused and vectorized
    steps = [ST.SplitStep(3, 1, 16, (2, 2)), ST.FuseStep(3, (0, 1)),
             ST.AnnotationStep(3, 0, S.ANN_PARALLEL), ST.FuseStep(3, (1, 2)),
             ST.AnnotationStep(3, 1, S.ANN_VECTORIZE)]
    parent = make("chain", *steps)
    rng = random.Random(0)
    children = {str(c): c for c in (mutate_parallel(parent, rng) for _ in range(60)) if c}
    # joining 1 loop shifts the vectorized fuse out by one; joining 3 or 4 would swallow
    # a loop of that fuse, so those draws decline
    assert len(children) == 1
    (child,) = children.values()
    assert child.transform_steps == [
        steps[0], ST.FuseStep(3, (0,)), steps[2], ST.FuseStep(3, (2, 3)),
        ST.AnnotationStep(3, 2, S.ANN_VECTORIZE)]
    assert [it.extent for it in child.stages[3].iters] == [8, 4, 4]
    run_and_compare("chain", child)


def test_mutate_parallel_declines_a_later_compute_at_into_the_stage():
    # the fuse changes the stage's loop numbers; a compute-at step after it would keep
    # its old loop number (TVM's rule would apply it there regardless)
    steps = [ST.SplitStep(3, 1, 16, (4,)), ST.FuseStep(3, (0, 1)),
             ST.AnnotationStep(3, 0, S.ANN_PARALLEL), ST.ComputeAtStep(2, 3, 1)]
    parent = make("chain", *steps[:3])
    moved = replay(parent.dag, steps)
    assert moved is not None
    rng = random.Random(0)
    assert any(mutate_parallel(parent, rng) is not None for _ in range(20))
    assert all(mutate_parallel(moved, rng) is None for _ in range(20))
