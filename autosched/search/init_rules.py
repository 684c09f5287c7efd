"""Init-population rules: turn a sketch into a concrete, annotated State (Ansor's
SampleInitPopulation).

Order: fill split lengths (random factorizations, innermost factor <= 64), change compute
locations of untiled stages, parallelize outer loops (fuse up to cores*16 iterations),
vectorize the innermost loops (<= 64 lanes), pick an auto-unroll depth from {0,16,64,512}.
All randomness comes from the ``random.Random`` passed in, so a seed reproduces a run.
"""
from __future__ import annotations

import random
from functools import lru_cache

from .. import state as S
from ..errors import InvalidStepError
from ..features.nest import extended_leaves
from ..steps import registry as ST
from ..steps.loop import make_split_step
from ..steps.registry import apply_step
from .retile import may_retile, retiled
from .sketch_rules import consumers, is_output, needs_mlt

MAX_INNERMOST_FACTOR = 64
MAX_VECTORIZE_LANES = 64
AUTO_UNROLL_CONFIGS = (0, 16, 64, 512)


@lru_cache(maxsize=4096)
def divisors(n: int) -> tuple:
    """The divisors of ``n``, ascending (memoized: every tile-size mutation asks)."""
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return tuple(sorted(set(small + [n // d for d in small])))


@lru_cache(maxsize=4096)
def factorizations(extent: int, n: int, max_inner: int = MAX_INNERMOST_FACTOR) -> tuple:
    """All n-tuples of lengths (outer..inner, the outermost part excluded) whose product
    divides ``extent`` and whose innermost is <= ``max_inner``."""
    if n == 0:
        return ((),)
    out = []
    for d in divisors(extent):
        for rest in factorizations(extent // d, n - 1, max_inner):
            cand = (d, *rest)
            if cand[-1] <= max_inner:
                out.append(cand)
    return tuple(out)


def sample_lengths(extent: int, n: int, rng) -> tuple:
    if extent is None or extent < 1:
        return (1,) * n
    return rng.choice(factorizations(extent, n))


_FILLED: dict = {}      # id(sketch) -> (sketch, one filled state of it) for ``retiled``


def _filled_example(sketch):
    """One concrete state of ``sketch`` (its own seed, so callers' draws are not
    touched), or None when it cannot be filled; memoized per sketch."""
    hit = _FILLED.get(id(sketch))
    if hit is None or hit[0] is not sketch:
        if len(_FILLED) >= 256:
            _FILLED.clear()
        try:
            example = _replay_filled(sketch, random.Random(0))
        except InvalidStepError:
            example = None
        hit = _FILLED[id(sketch)] = (sketch, example)
    return hit[1]


def fill_tile_sizes(sketch, rng):
    """The sketch's steps with every unknown split length sampled.

    The lengths are drawn for the extents the splits have in a filled example of the
    sketch, and the state is made by ``retiled`` from that example; where it declines
    (the splits' extents depend on other splits, or a dataflow step follows them), the
    steps are replayed one by one, each length drawn for its split's actual extent."""
    steps = list(sketch.transform_steps)
    unknown = [k for k, s in enumerate(steps)
               if isinstance(s, ST.SplitStep) and None in s.lengths]
    example = _filled_example(sketch) if unknown else None
    if example is None or not may_retile(example, unknown[0]):
        return _replay_filled(sketch, rng)
    for k in unknown:
        step = steps[k]
        ext = example.transform_steps[k].extent
        steps[k] = make_split_step(step.stage_id, step.iter_id, ext,
                                   sample_lengths(ext, len(step.lengths), rng),
                                   step.inner_to_outer)
    state = retiled(example, unknown[0], steps, tuple(unknown))
    return state if state is not None else _replay_filled(sketch, rng)


def _replay_filled(sketch, rng):
    """Replay the sketch's steps, sampling every unknown split length."""
    state = sketch.dag.init_state()
    for step in sketch.transform_steps:
        if isinstance(step, ST.SplitStep) and None in step.lengths:
            ext = state.stages[step.stage_id].iters[step.iter_id].extent
            step = ST.SplitStep(step.stage_id, step.iter_id, ext,
                                sample_lengths(ext, len(step.lengths), rng), step.inner_to_outer)
        apply_step(state, step)
    return state


def location_candidates(state, sid) -> list:
    """(target stage, iter) places where ``sid`` may be computed: its single consumer's
    outer spatial loops, up to the first reduction loop."""
    cons = consumers(state, sid)
    if len(cons) != 1:
        return []
    c = cons[0]
    cst = state.stages[c]
    if cst.compute_at == S.INLINED:
        return []
    out = []
    for k, it in enumerate(cst.iters):
        if it.kind != S.SPATIAL:
            break
        out.append((c, k))
    return out


def change_compute_location(state, rng):
    for sid in range(len(state.stages) - 1, -1, -1):
        st = state.stages[sid]
        if st.is_placeholder or st.compute_at == S.INLINED or is_output(state, sid):
            continue
        if needs_mlt(state, sid) or state.attached_to(sid) or st.compute_at == S.ITER:
            continue
        if len(st.iters) != len(st.op.axis) + len(st.op.reduce_axis):
            continue   # already transformed by the sketch (e.g. an rfactor stage)
        cands = location_candidates(state, sid)
        choice = rng.randrange(len(cands) + 2)
        try:
            if choice == 0 and not st.op.reduce_axis:
                apply_step(state, ST.ComputeInlineStep(sid))
            elif choice >= 2:
                apply_step(state, ST.ComputeAtStep(sid, *cands[choice - 2]))
        except InvalidStepError:
            continue
    return state


def _annotate_parallel(state, sid, offset, max_degree) -> None:
    st = state.stages[sid]
    attached = {it for s, (t, it) in state.attach_map.items() if t == sid}
    to_fuse, degree, iid = [], 1, offset
    while iid < len(st.iters):
        it = st.iters[iid]
        if it.kind != S.SPATIAL or it.annotation != S.ANN_NONE or it.extent is None:
            break
        to_fuse.append(iid)
        degree *= it.extent
        if degree > max_degree or iid in attached:
            break
        iid += 1
    if degree == 1 and iid in attached:
        for s2, (t, it) in list(state.attach_map.items()):
            if t == sid and it == iid:
                _annotate_parallel(state, s2, 0, max_degree)
        _annotate_parallel(state, sid, iid + 1, max_degree)
        return
    if not to_fuse or degree == 1:
        return
    target = to_fuse[0]
    if len(to_fuse) > 1:
        target = apply_step(state, ST.FuseStep(sid, tuple(to_fuse)))
    apply_step(state, ST.AnnotationStep(sid, target, S.ANN_PARALLEL))


def init_parallel(state, num_cores: int, rng=None, max_degree=None):
    max_degree = max_degree or num_cores * 16
    for sid, st in enumerate(state.stages):
        if st.is_placeholder or st.compute_at != S.ROOT:
            continue
        _annotate_parallel(state, sid, 0, max_degree)
    return state


def _is_tiled(st) -> bool:
    return len(st.iters) != len(st.op.axis) + len(st.op.reduce_axis)


def init_vectorization(state, rng, max_lanes: int = MAX_VECTORIZE_LANES):
    for sid, st in enumerate(state.stages):
        if st.is_placeholder or st.compute_at == S.INLINED:
            continue
        attached = {it for s, (t, it) in state.attach_map.items() if t == sid}
        # reduce loops of extent 1 at the end vanish in lowering (a BSR block's column
        # loop when blocks are one column wide): the spatial loop before them is the
        # innermost one the kernel runs
        skip = 0
        while skip < len(st.iters) - 1 and st.iters[-1 - skip].kind == S.REDUCTION and \
                st.iters[-1 - skip].extent == 1 and len(st.iters) - 1 - skip not in attached:
            skip += 1
        n, prod_ = 0, 1
        while n + skip < len(st.iters):
            iid = len(st.iters) - 1 - skip - n
            it = st.iters[iid]
            if iid in attached or it.kind != S.SPATIAL or it.annotation != S.ANN_NONE:
                break
            if _is_tiled(st) and n:
                break
            prod_ *= it.extent or 1
            if prod_ > max_lanes:
                break
            n += 1
        if n > 1:
            n = 1 + rng.randrange(n)
        end = len(st.iters) - skip
        if n == 0 or (st.iters[end - 1].extent or 1) == 1 and n == 1:
            continue
        ids = tuple(range(end - n, end))
        target = ids[0] if n == 1 else apply_step(state, ST.FuseStep(sid, ids))
        apply_step(state, ST.AnnotationStep(sid, target, S.ANN_VECTORIZE))
    return state


def init_unroll(state, rng, configs=AUTO_UNROLL_CONFIGS):
    for sid, st in enumerate(state.stages):
        if st.is_placeholder or st.compute_at == S.INLINED or not st.iters:
            continue
        if not any(it.kind == S.REDUCTION for it in st.iters) and not needs_mlt(state, sid):
            continue
        value = rng.choice(configs)
        if value:
            apply_step(state, ST.PragmaStep(sid, 0, f"auto_unroll_max_step${value}"))
    return state


def sample_state(sketch, rng, num_cores: int):
    """One random concrete state from ``sketch`` (may raise InvalidStepError)."""
    state = fill_tile_sizes(sketch, rng)
    # a re-tiled fill shares its structure with the sketch's filled example (the memo)
    base = state._struct
    n_filled = len(state.transform_steps)
    # a re-tiled fill's leaves are known: the later steps extend them (below)
    filled_leaves = state._leaves[0] if state._leaves is not None else None
    state = change_compute_location(state, rng)
    # Mostly TVM's granularity (cores*16); sometimes coarser, which leaves the inner
    # loops of small or elementwise stages free to be vectorized.
    degree = num_cores * (16 if rng.random() < 0.7 else rng.choice((1, 2, 4)))
    state = init_parallel(state, num_cores, rng, max_degree=degree)
    state = init_vectorization(state, rng)
    state = init_unroll(state, rng)
    if base is not None:
        _share_structure(state, base, n_filled)
    if filled_leaves is not None and state._leaves is None:
        leaves = extended_leaves(filled_leaves, state.transform_steps, n_filled)
        if leaves is not None:
            state._leaves = [leaves, None]
    return state


_MAX_TAILS = 1024       # distinct annotation tails remembered per filled structure


def _share_structure(state, base: dict, n_filled: int) -> None:
    """Give ``state`` the print template and struct_memo of the earlier sample with the
    same steps after its fill: the same structure with the same steps applied is the
    same structure, so its printout walk and structure analyses are done once per
    (sketch structure, annotation tail) instead of once per sample.  The tails are
    remembered in the base structure's memo, so they live and die with it."""
    tails = base.setdefault("sample_tails", {})
    key = tuple(state.transform_steps[n_filled:])
    hit = tails.get(key)
    if hit is not None:
        state._struct = hit
    elif len(tails) < _MAX_TAILS:
        state.print_template()
        tails[key] = state.struct_memo()
