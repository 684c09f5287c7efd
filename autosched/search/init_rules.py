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
from ..steps import registry as ST
from ..steps.registry import apply_step
from .retile import may_retile, retiled
from .sketch_rules import consumers_resolved, is_output, needs_mlt

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
        steps[k] = ST.SplitStep(step.stage_id, step.iter_id, ext,
                                sample_lengths(ext, len(step.lengths), rng),
                                step.inner_to_outer)
    state = retiled(example, unknown[0], steps)
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
    """(target stage, iter) places where ``sid`` may be computed, as TVM's
    GetComputeLocationCandidates (``location_scan`` gives the rules), for this
    state's loop extents."""
    return places_of_scan(location_scan(state, sid),
                          lambda t, k: state.stages[t].iters[k].extent == 1)


def location_scan(state, sid) -> list:
    """The loops ``sid`` may be computed at, before the extent rule, as
    ``(stage, iter, last)`` in TVM's order (``places_of_scan`` applies the rest).

    The target is the single consumer (looking through inlined stages; several
    consumers count as one when they share a root stage).  Its loops are scanned from
    the outside in, skipping, when the target is itself attached, its first-level
    tiles (``.0``, extent 1 there), and stopping at an unrolled loop, at a reduce loop
    of an untiled target, at the first spatial loop inside a reduce loop (a tiled
    target offers its outer reduce tiles: a conv's padding computed per input-channel
    tile) and after a loop another stage is attached at (``last``).  An attached
    target also offers the stage it is attached to, from the outside in, up to its
    first reduce, unrolled or attached-at loop.  Only the structure decides the scan
    (kinds, annotations, names, attachments); loops of extent 1 are left out
    afterwards, together with their ``last`` (TVM skips them before that check)."""
    target = single_consumer(state, sid)
    if target is None:
        return []
    tst = state.stages[target]
    nested = tst.compute_at == S.ITER
    tiled = is_tiled(tst)
    attached = _attached_iters(state, target)
    out: list = []
    seen_reduce = False
    for k, it in enumerate(tst.iters):
        if it.kind == S.REDUCTION:
            seen_reduce = True
            if not tiled:
                break
        elif it.kind == S.SPATIAL and seen_reduce:
            break
        if it.annotation == S.ANN_UNROLL:
            break
        if not (nested and it.kind == S.SPATIAL and it.name.endswith(".0")):
            out.append((target, k, k in attached))
    if nested:
        outer = state.attach_map[target][0]
        outer_attached = _attached_iters(state, outer)
        for k, it in enumerate(state.stages[outer].iters):
            if it.kind == S.REDUCTION or k in outer_attached or \
                    it.annotation == S.ANN_UNROLL:
                break
            out.append((outer, k, False))
    return out


def places_of_scan(scan, extent_is_one) -> list:
    """The places of a ``location_scan``: loops of extent 1 skipped, the target's own
    loops ending at the first ``last`` one kept."""
    out: list = []
    done = None            # the target stage, once a ``last`` loop ended its scan
    for t, k, last in scan:
        if t == done or extent_is_one(t, k):
            continue
        out.append((t, k))
        if last:
            done = t
    return out


def single_consumer(state, sid):
    """TVM's GetSingleConsumerId: the one stage reading ``sid`` (through inlined
    stages), or the root stage all its readers share; None otherwise."""
    cons = consumers_resolved(state, sid)
    if len(cons) <= 1:
        return cons[0] if cons else None
    roots = {c if state.stages[c].compute_at == S.ROOT else state.attach_map[c][0]
             for c in cons}
    return roots.pop() if len(roots) == 1 else None


def _attached_iters(state, sid) -> set:
    return {it for t, it in state.attach_map.values() if t == sid}


def change_compute_location(state, rng):
    """TVM's InitChangeComputeLocation for the stages at the root.  Every such stage
    that is neither tiled nor in need of multi-level tiling (consumers first) draws one
    of its ``location_candidates``, or stays at the root (two of the ``n + 2`` draws:
    TVM's "root" and its "inline", which inlines only a stage the sketch attached).
    So a conv's padding is placed, never inlined, here.  Unlike TVM, a stage the
    sketch attached (or one with stages attached to it) keeps its place: custom sketch
    rules attach stages on purpose (the sparse 3x3 rule's im2col rows)."""
    for sid in range(len(state.stages) - 1, -1, -1):
        st = state.stages[sid]
        if st.is_placeholder or st.compute_at != S.ROOT or is_output(state, sid):
            continue
        if needs_mlt(state, sid) or is_tiled(st) or state.attached_to(sid):
            continue   # (is_tiled: e.g. an rfactor stage, tiled by the sketch)
        cands = location_candidates(state, sid)
        choice = rng.randrange(len(cands) + 2)
        if choice >= 2:
            try:
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


def is_tiled(st) -> bool:
    """Whether a stage's loops were split (TVM's IsTiled)."""
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
            if is_tiled(st) and n:
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
    state = change_compute_location(state, rng)
    # Mostly TVM's granularity (cores*16); sometimes coarser, which leaves the inner
    # loops of small or elementwise stages free to be vectorized.
    degree = num_cores * (16 if rng.random() < 0.7 else rng.choice((1, 2, 4)))
    state = init_parallel(state, num_cores, rng, max_degree=degree)
    state = init_vectorization(state, rng)
    state = init_unroll(state, rng)
    if base is not None:
        _share_structure(state, base, n_filled)
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
