"""Mutations for the evolutionary search, TVM's four: tile size, auto-unroll, compute
location and the granularity of the parallel fuse.

A mutation edits the step list of a State and replays it from the initial state, so the
child is always consistent; a child whose steps no longer apply is discarded (None).

The tile-size mutation (nine in ten mutations) changes only the lengths of one split;
when ``retile.retiled`` can build the child from its parent's structure, it is not
replayed.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from .. import state as S
from ..errors import InvalidStepError
from ..steps import registry as ST
from ..steps.loop import make_split_step
from ..steps.registry import apply_step
from .init_rules import (
    AUTO_UNROLL_CONFIGS,
    MAX_INNERMOST_FACTOR,
    divisors,
    location_candidates,
)
from .retile import retiled, reunrolled

# steps that add stages: a later one would need its stage numbers rewritten
_ADDS_STAGES = (ST.CacheReadStep, ST.CacheWriteStep, ST.RfactorStep)


def replay(dag, steps):
    state = dag.init_state()
    try:
        for st in steps:
            apply_step(state, st)
    except InvalidStepError:
        return None
    return state


def replay_sharing(state, change, steps):
    """``replay(state.dag, steps)`` for a mutation ``change`` of ``state`` (a hashable
    description of it), giving every child that the same change makes from
    ``state``'s structure one struct memo (``State.struct_memo``).

    Why: a child's structure is its parent's with the change applied, so children of
    one change share it; a replayed child started a structure of its own, whose
    printout walk, loop model plan and step analyses were derived again for it and
    for each of its re-tiled descendants' first uses (a compute-location or parallel
    mutation is one in seventeen)."""
    child = replay(state.dag, steps)
    if child is None:
        return None
    made = state.struct_memo().get("replayed_structs")
    if made is None:
        made = state.struct_memo()["replayed_structs"] = {}
    shared = made.get(change)
    if shared is None:
        made[change] = child.struct_memo()
    else:
        child._struct = shared
    return child


def mutate_tile_size(state, rng):
    """Move a factor d from one level of a split to another level."""
    memo = state.struct_memo()      # the structure decides the candidates
    cands = memo.get("tile_splits")
    if cands is None:
        cands = memo["tile_splits"] = [
            k for k, s in enumerate(state.transform_steps)
            if isinstance(s, ST.SplitStep) and s.extent and len(s.lengths) >= 1
            and None not in s.lengths]
    if not cands:
        return None
    k = rng.choice(cands)
    sp = state.transform_steps[k]
    outer = sp.extent // _prod(sp.lengths)
    levels = [outer, *sp.lengths] if sp.inner_to_outer else [*sp.lengths, outer]
    src = [i for i, v in enumerate(levels) if v > 1]
    if not src:
        return None
    i = rng.choice(src)
    # the draws are those of the lists these tuples stand for: the same stream
    d = rng.choice(divisors(levels[i])[1:])         # ascending, 1 first: those above 1
    j = rng.choice(_other_levels(len(levels), i))
    levels[i] //= d
    levels[j] *= d
    lengths = tuple(levels[1:]) if sp.inner_to_outer else tuple(levels[:-1])
    if lengths[-1] > MAX_INNERMOST_FACTOR:
        return None
    steps = list(state.transform_steps)
    steps[k] = make_split_step(sp.stage_id, sp.iter_id, sp.extent, lengths,
                               sp.inner_to_outer)
    child = retiled(state, k, steps, (k,))
    return child if child is not None else replay(state.dag, steps)


@lru_cache(maxsize=256)
def _other_levels(n: int, i: int) -> tuple:
    return tuple(x for x in range(n) if x != i)


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def mutate_auto_unroll(state, rng):
    cands = [k for k, s in enumerate(state.transform_steps) if isinstance(s, ST.PragmaStep)]
    if not cands:
        return None
    k = rng.choice(cands)
    pr = state.transform_steps[k]
    cur = pr.pragma_type.partition("$")[2]
    vals = [v for v in AUTO_UNROLL_CONFIGS if str(v) != cur]
    steps = list(state.transform_steps)
    v = rng.choice(vals)
    if v == 0:
        del steps[k]
    else:
        child = reunrolled(state, k, v)
        if child is not None:
            return child
        steps[k] = ST.PragmaStep(pr.stage_id, pr.iter_id, f"auto_unroll_max_step${v}")
    return replay_sharing(state, ("unroll", k, v), steps)


def mutate_compute_location(state, rng):
    cands = [k for k, s in enumerate(state.transform_steps) if isinstance(s, ST.ComputeAtStep)]
    if not cands:
        return None
    k = rng.choice(cands)
    ca = state.transform_steps[k]
    places = _places_before(state, k)
    if places is None:
        return None
    locs = [loc for loc in places if loc != (ca.target_stage_id, ca.target_iter_id)]
    if not locs:
        return None
    steps = list(state.transform_steps)
    loc = rng.choice(locs)
    steps[k] = ST.ComputeAtStep(ca.stage_id, *loc)
    return replay_sharing(state, ("compute_at", k, loc), steps)


def _places_before(state, k: int):
    """Where step ``k`` (a ComputeAtStep) could compute its stage, as the state before
    it offers (``location_candidates``); None when those steps do not replay.  Only
    the structure decides it (consumers, iterator kinds), so it is kept in the
    struct_memo: a replay of the steps before ``k`` per structure, not per mutation."""
    memo = state.struct_memo()
    key = ("compute_at_places", k)
    if key not in memo:
        before = replay(state.dag, state.transform_steps[:k])
        memo[key] = None if before is None else \
            location_candidates(before, state.transform_steps[k].stage_id)
    return memo[key]


def mutate_parallel(state, rng, num_cores: int = 0):
    """TVM's MutateParallel: change how many outer loops the fuse before a parallel
    annotation joins.  A candidate is a parallel annotation of iterator 0 right after
    a fuse of iterators 0..n of the same stage; the new fuse joins iterators 0..m, m
    drawn below the first reduce, annotated or attached-at iterator of the stage as
    the steps before the fuse leave it.  Later steps of that stage are shifted to the
    new loop positions: annotations and pragmas as TVM's, fuses too (our vectorization
    fuses inner loops, which TVM's rule would give up on); any other later step of the
    stage, or one that adds stages, declines it (None), as TVM's does, and so does a
    later compute-at into the stage (TVM would keep its old loop number).  ``num_cores``
    is unused (the signature of the other rules)."""
    steps = state.transform_steps
    cands = [k for k in range(1, len(steps)) if _is_fused_parallel(steps, k)]
    if not cands:
        return None
    k = rng.choice(cands)
    fuse = steps[k - 1]
    sid = fuse.stage_id
    n_fusable = _fusable_before(state, k - 1)
    if not n_fusable:
        return None
    last = rng.randrange(n_fusable)
    offset = fuse.fused_ids[-1] - last
    if offset == 0:
        return None
    new = list(steps[:k - 1]) + [ST.FuseStep(sid, tuple(range(last + 1))), steps[k]]
    for step in steps[k + 1:]:
        if isinstance(step, _ADDS_STAGES) or \
                isinstance(step, ST.ComputeAtStep) and step.target_stage_id == sid:
            return None         # stage numbers or a place in the stage would move
        if step.stage_id == sid:
            step = _shifted(step, offset)
            if step is None:
                return None
        new.append(step)
    return replay_sharing(state, ("parallel", k, last), new)


def _is_fused_parallel(steps, k: int) -> bool:
    ann, fuse = steps[k], steps[k - 1]
    return isinstance(ann, ST.AnnotationStep) and ann.annotation == S.ANN_PARALLEL and \
        ann.iter_id == 0 and isinstance(fuse, ST.FuseStep) and \
        fuse.stage_id == ann.stage_id and fuse.fused_ids[0] == 0


def _fusable_before(state, k: int) -> int:
    """How many leading iterators of the stage of step ``k`` (a FuseStep) a fuse may
    join, as the steps before it leave the stage (0: none, or they do not replay).
    Only the structure decides it, so it is kept in the struct_memo."""
    memo = state.struct_memo()
    key = ("fusable_before", k)
    if key not in memo:
        before = replay(state.dag, state.transform_steps[:k])
        memo[key] = 0 if before is None else \
            _fusable_prefix(before, state.transform_steps[k].stage_id)
    return memo[key]


def _fusable_prefix(state, sid: int) -> int:
    """Leading iterators of stage ``sid`` up to the first reduce or annotated one, and
    before one that a stage is attached at."""
    attached = {it for t, it in state.attach_map.values() if t == sid}
    n = 0
    for it in state.stages[sid].iters:
        if it.kind == S.REDUCTION or it.annotation != S.ANN_NONE or n in attached:
            break
        n += 1
    return n


def _shifted(step, offset: int):
    """``step`` (of the re-fused stage) with its iterator positions moved by
    ``offset``; iterator 0 (the parallel loop) stays.  None: a step kind that cannot
    follow the change, or a loop the new fuse swallowed (a position that would land
    on the parallel loop or before it)."""
    if isinstance(step, (ST.AnnotationStep, ST.PragmaStep)):
        if step.iter_id == 0:
            return step
        return replace(step, iter_id=step.iter_id + offset) \
            if step.iter_id + offset > 0 else None
    if isinstance(step, ST.FuseStep) and step.fused_ids[0] + offset > 0 and \
            step.fused_ids[0] > 0:
        return replace(step, fused_ids=tuple(i + offset for i in step.fused_ids))
    return None


MUTATIONS = (("tile_size", 0.90), ("auto_unroll", 0.04), ("compute_location", 0.05),
             ("parallel", 0.01))


def mutate(state, rng, num_cores: int, weights=MUTATIONS):
    """Apply one randomly chosen mutation; None if it produced nothing valid."""
    r, acc = rng.random() * sum(w for _, w in weights), 0.0
    name = weights[-1][0]
    for n, w in weights:
        acc += w
        if r < acc:
            name = n
            break
    if name == "tile_size":
        return mutate_tile_size(state, rng)
    if name == "auto_unroll":
        return mutate_auto_unroll(state, rng)
    if name == "compute_location":
        return mutate_compute_location(state, rng)
    return mutate_parallel(state, rng, num_cores)


__all__ = ["mutate", "replay", "MUTATIONS", "S"]
