"""Mutations for the evolutionary search: tile size, auto-unroll, compute location and
parallel/vectorize annotations.

A mutation edits the step list of a State and replays it from the initial state, so the
child is always consistent; a child whose steps no longer apply is discarded (None).

The tile-size mutation (nine in ten mutations) changes only the lengths of one split;
when ``retile.retiled`` can build the child from its parent's structure, it is not
replayed.
"""
from __future__ import annotations

from .. import state as S
from ..errors import InvalidStepError
from ..steps import registry as ST
from ..steps.registry import apply_step
from .init_rules import (
    AUTO_UNROLL_CONFIGS,
    MAX_INNERMOST_FACTOR,
    divisors,
    init_parallel,
    init_unroll,
    init_vectorization,
    location_candidates,
)
from .retile import retiled

_TAIL = (ST.FuseStep, ST.AnnotationStep, ST.PragmaStep)


def replay(dag, steps):
    state = dag.init_state()
    try:
        for st in steps:
            apply_step(state, st)
    except InvalidStepError:
        return None
    return state


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
    d = rng.choice([x for x in divisors(levels[i]) if x > 1])
    j = rng.choice([x for x in range(len(levels)) if x != i])
    levels[i] //= d
    levels[j] *= d
    lengths = tuple(levels[1:]) if sp.inner_to_outer else tuple(levels[:-1])
    if lengths[-1] > MAX_INNERMOST_FACTOR:
        return None
    steps = list(state.transform_steps)
    steps[k] = ST.SplitStep(sp.stage_id, sp.iter_id, sp.extent, lengths, sp.inner_to_outer)
    child = retiled(state, k, steps)
    return child if child is not None else replay(state.dag, steps)


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
        steps[k] = ST.PragmaStep(pr.stage_id, pr.iter_id, f"auto_unroll_max_step${v}")
    return replay(state.dag, steps)


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
    steps[k] = ST.ComputeAtStep(ca.stage_id, *rng.choice(locs))
    return replay(state.dag, steps)


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


def _strip_tail(steps) -> list:
    n = len(steps)
    while n and isinstance(steps[n - 1], _TAIL):
        n -= 1
    return list(steps[:n])


def mutate_parallel(state, rng, num_cores: int):
    """Re-derive the annotations with a different parallel granularity."""
    base = replay(state.dag, _strip_tail(state.transform_steps))
    if base is None:
        return None
    degree = num_cores * rng.choice((1, 2, 4, 8, 16, 64))
    init_parallel(base, num_cores, max_degree=degree)
    init_vectorization(base, rng)
    return init_unroll(base, rng)


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
