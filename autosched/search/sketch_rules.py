"""Sketch generation rules for CPUs (Ansor's derivation rules).

Sketches are built by visiting stages from the last to the first; at each stage every
applicable rule turns a (state, stage_id) into new (state, next_stage_id) pairs.  A
sketch has the loop structure fixed but split lengths unknown (None); the init rules
fill them.  Rules: skip, always-inline, add-rfactor, add-cache-write, multi-level tiling
"SSRSRS" with and without fusing the elementwise consumer.  Beyond Ansor, a cache stage
whose last spatial axis cannot fill the target's vectors gets a second tiling that
vectorizes another axis (``vector_axis``: a conv2d's output channels).  Custom rules (TVM's
``PreloadCustomSketchRule``, given to the policy as an init search callback) are tried
before these at every stage, as TVM's; what they return is checked here.
"""
from __future__ import annotations

from compiler.tir import dtype as DT
from compiler.tir.analysis import uses_var

from .. import state as S
from ..errors import AutoSchedError
from ..extents import is_data_dependent, static_extent
from ..layout_rewrite import layout_free_ops
from ..loop_state import LoopState
from ..steps import registry as ST
from ..steps.registry import apply_step

# condition kinds, as in Ansor
PASS, APPLY, APPLY_AND_SKIP_REST = 0, 1, 2

CPU_STRUCTURE = "SSRSRS"
FUSION_LEVELS = (1, 2)


def consumers(state, sid) -> list:
    """Ids of the (non-placeholder) stages reading stage ``sid``'s op, ascending."""
    return list(S.stage_consumers(state.stages)[sid])


def consumers_resolved(state, sid) -> list:
    """Consumers of ``sid``, looking through inlined stages."""
    out, todo, seen = [], [sid], set()
    while todo:
        s = todo.pop()
        for c in consumers(state, s):
            if c in seen:
                continue
            seen.add(c)
            if state.stages[c].compute_at == S.INLINED:
                todo.append(c)
            else:
                out.append(c)
    return out


def is_output(state, sid) -> bool:
    return not S.stage_consumers(state.stages)[sid]


def elementwise_consumer(state, sid):
    """The single consumer of ``sid`` that simply reads it elementwise, or None."""
    cons = consumers_resolved(state, sid)
    if len(cons) != 1:
        return None
    c = cons[0]
    cst, pst = state.stages[c], state.stages[sid]
    if cst.op.reduce_axis or len(cst.op.axis) != len(pst.op.axis):
        return None
    if any(static_extent(a) != static_extent(b)
           for a, b in zip(cst.op.axis, pst.op.axis)):
        return None
    if cst.compute_at != S.ROOT or any(it.kind != S.SPATIAL for it in cst.iters):
        return None
    reads = state.dag.access.info(cst.op).reads.get(pst.op.output(0))
    axes = tuple(iv.var for iv in cst.op.axis)
    if reads is not None and any(len(idx) != len(axes) or any(a is not b for a, b in
                                                              zip(idx, axes)) for idx in reads):
        return None
    if len(cst.iters) != len(cst.op.axis):
        return None   # already transformed
    return c


def needs_mlt(state, sid) -> bool:
    """Whether the stage gets multi-level tiling: not when a reduce loop's extent is read
    at the spatial axes (a sparse row's length), since tiling puts reduce loops outside
    spatial ones, where that extent is not defined (TVM's tutorial tiles such a stage
    with a custom rule that keeps the reduce loop inside)."""
    st = state.stages[sid]
    return not st.is_placeholder and state.dag.access.needs_multi_level_tiling(st.op) \
        and not any(is_data_dependent(iv) for iv in st.op.reduce_axis)


def multi_level_tiling(state, sid, structure=CPU_STRUCTURE, last_axis=None):
    """Split every iterator per ``structure`` and reorder; returns spatial split step ids.
    ``last_axis`` (an iterator id, see ``vector_axis``): that spatial axis's innermost
    tile moves behind the other innermost spatial tiles, so it is the one vectorized."""
    st = state.stages[sid]
    n_s, n_r = structure.count("S"), structure.count("R")
    levels: dict = {"S": [[] for _ in range(n_s)], "R": [[] for _ in range(n_r)]}
    spatial_steps = []
    iid, moved = 0, None
    for k_it, it in enumerate(list(st.iters)):
        kind = "S" if it.kind == S.SPATIAL else "R"
        n = n_s if kind == "S" else n_r
        if kind == "S":
            spatial_steps.append(len(state.transform_steps))
        if n > 1:
            apply_step(state, ST.SplitStep(sid, iid, it.extent, (None,) * (n - 1), True))
        for k in range(n):
            levels[kind][k].append(iid + k)
        if k_it == last_axis:
            moved = iid + n - 1
        iid += n
    if moved is not None:
        levels["S"][-1].remove(moved)
        levels["S"][-1].append(moved)
    order, cnt = [], {"S": 0, "R": 0}
    for ch in structure:
        order += levels[ch][cnt[ch]]
        cnt[ch] += 1
    apply_step(state, ST.ReorderStep(sid, tuple(order)))
    return spatial_steps


def vector_axis(state, sid, vector_bytes: int, rewrite_layout: bool):
    """The spatial iterator a stage about to be tiled should vectorize instead of its
    last one, or None (then it is Ansor's sketch alone).

    Ansor vectorizes the innermost tile of the last spatial axis.  When that axis's
    extent is no multiple of the vector lanes (a 56-wide image row on 16 float lanes)
    every vector is partly empty: a conv2d then stays at half the FMA peak.  Another
    spatial axis whose extent is a multiple (64 output channels) fills the vectors when
    every read is contiguous or constant along it: the axis is absent from the read's
    indices (a broadcast), it is the read's last index, or the tensor is a layout-free
    weight that the task rewrites into the kernel's loop order."""
    st = state.stages[sid]
    axes = st.op.axis
    if not vector_bytes or len(axes) < 2 or len(st.iters) != len(axes) + len(
            st.op.reduce_axis):
        return None
    lanes = vector_bytes * 8 // DT.bits(st.op.output(0).dtype)
    extents = [static_extent(iv) for iv in axes]
    if lanes < 2 or extents[-1] is None or extents[-1] % lanes == 0:
        return None
    free = layout_free_ops(state.dag) if rewrite_layout else frozenset()
    reads = state.dag.access.info(st.op).reads
    for k in reversed(range(len(axes) - 1)):
        if extents[k] is None or extents[k] % lanes:
            continue
        if all(_unit_or_no_stride(axes[k].var, t, idxs, free) for t, idxs in reads.items()):
            return k
    return None


def _unit_or_no_stride(var, tensor, idxs, free) -> bool:
    for idx in idxs:
        used = [d for d, ix in enumerate(idx) if uses_var(ix, var)]
        if not used:
            continue
        plain = all(idx[d] is var for d in used)
        if plain and (tensor.op in free or used == [len(idx) - 1]):
            continue
        return False
    return True


def follow_tiling(state, cid, split_steps, level) -> int:
    """Tile consumer ``cid`` like its producer up to ``level``; returns the attach iter id."""
    n_sp = len(split_steps)
    groups: list = [[] for _ in range(level + 1)]
    iid = 0
    for k in range(n_sp):
        apply_step(state, ST.FollowSplitStep(cid, iid, split_steps[k], level))
        for g in range(level + 1):
            groups[g].append(iid + g)
        iid += level + 1
    order = [i for g in groups for i in g]
    apply_step(state, ST.ReorderStep(cid, tuple(order)))
    return level * n_sp - 1


# ---------------------------------------------------------------------- rules
def rule_always_inline(state, sid):
    st = state.stages[sid]
    if st.is_placeholder or st.compute_at == S.INLINED or is_output(state, sid):
        return PASS, []
    if not state.dag.access.is_strictly_inlineable(st.op):
        return PASS, []
    s = state.copy()
    apply_step(s, ST.ComputeInlineStep(sid))
    return APPLY_AND_SKIP_REST, [(s, sid - 1)]


def rule_add_rfactor(state, sid, num_cores: int):
    """Factor a reduction when the data-parallel part alone cannot feed the cores (Ansor's
    NeedsRfactor: a tiled op only when its space is small; any other reduction longer
    than the core count)."""
    st = state.stages[sid]
    if st.is_placeholder or st.compute_at == S.INLINED or has_cache_write(state, sid):
        return PASS, []
    red = [k for k, it in enumerate(st.iters) if it.kind == S.REDUCTION]
    if not red or len(st.iters) != len(st.op.axis) + len(st.op.reduce_axis):
        return PASS, []
    sp = rd = 1
    for it in st.iters:
        if it.kind == S.SPATIAL:
            sp *= it.extent
        else:
            rd *= it.extent
    if needs_mlt(state, sid):
        if sp > rd or sp > num_cores * 16:
            return PASS, []
    elif rd <= num_cores:
        return PASS, []
    n_space = len(st.iters) - len(red)
    out = []
    for factor_level in (0, 1):
        s = state.copy()
        it_id = red[0]
        if len(red) > 1:
            it_id = apply_step(s, ST.FuseStep(sid, tuple(red)))
        apply_step(s, ST.SplitStep(sid, it_id, s.stages[sid].iters[it_id].extent, (None,), True))
        # the factored axis follows the space axes (as Ansor); with the inner part
        # factored it moves innermost, where it can be vectorized
        apply_step(s, ST.RfactorStep(sid, it_id + factor_level, n_space))
        if factor_level == 1:
            n = len(s.stages[sid].iters)
            order = tuple(k for k in range(n) if k != n_space) + (n_space,)
            if order != tuple(range(n)):
                apply_step(s, ST.ReorderStep(sid, order))
        out.append((s, sid - 1))
    return APPLY, out


def has_cache_write(state, sid) -> bool:
    """Whether stage ``sid`` is the cache stage of a cache_write (Ansor's HasCacheWriteStage)."""
    return any(isinstance(st, ST.CacheWriteStep) and st.stage_id == sid
               for st in state.transform_steps)


def rule_add_cache_write(state, sid):
    if not needs_mlt(state, sid) or elementwise_consumer(state, sid) is not None:
        return PASS, []
    if state.stages[sid].op.num_outputs != 1:
        return PASS, []
    s = state.copy()
    apply_step(s, ST.CacheWriteStep(sid, "local"))
    return APPLY, [(s, sid)]   # the cache stage now sits at sid; tile it next


def _last_axes(state, sid, vec) -> tuple:
    """Ansor's tiling (None), then the vector-axis variant when there is one.  Only a
    cache stage gets the variant: its local buffer is laid out in loop order, where an
    op written in place would store its vectors with a stride."""
    k = vector_axis(state, sid, *vec) if vec and has_cache_write(state, sid) else None
    return (None,) if k is None else (None, k)


def rule_mlt_with_fusion(state, sid, vec=None):
    if not needs_mlt(state, sid):
        return PASS, []
    cid = elementwise_consumer(state, sid)
    if cid is None:
        return PASS, []
    out = []
    for last in _last_axes(state, sid, vec):
        for level in FUSION_LEVELS:
            s = state.copy()
            steps = multi_level_tiling(s, sid, last_axis=last)
            at = follow_tiling(s, cid, steps, level)
            apply_step(s, ST.ComputeAtStep(sid, cid, at))
            out.append((s, sid - 1))
    # a cache stage is always fused; an op written in place also keeps a plain tiling
    # (the next rule), as Ansor's RuleMultiLevelTilingWithFusion
    return (APPLY_AND_SKIP_REST if has_cache_write(state, sid) else APPLY), out


def rule_mlt(state, sid):
    if not needs_mlt(state, sid):
        return PASS, []
    s = state.copy()
    multi_level_tiling(s, sid)
    return APPLY_AND_SKIP_REST, [(s, sid - 1)]


def custom_rule(rule, policy):
    """A built-in-style rule ``(state, sid) -> (kind, [(state, next sid)])`` running the
    user's ``rule.meet_condition_func`` and ``rule.apply_func`` on LoopState copies, with
    their results checked (an AutoSchedError names the rule and the bad value)."""
    name = rule.rule_name

    def run(state, sid):
        kind = rule.meet_condition_func(policy, LoopState.of(state), sid)
        if type(kind) is not int or kind not in (PASS, APPLY, APPLY_AND_SKIP_REST):
            raise AutoSchedError(
                f"custom sketch rule {name!r}: meet_condition_func returned {kind!r} for "
                f"stage {sid}; expected PASS (0), APPLY (1) or APPLY_AND_SKIP_REST (2)")
        if kind == PASS:
            return PASS, []
        got = rule.apply_func(policy, LoopState.of(state), sid)
        return kind, [_checked_pair(name, item, state, sid) for item in _pairs(got)]
    return run


def _pairs(got) -> list:
    """The [state, next stage id] items of an apply function's result; a single pair
    is accepted as it is (TVM's sparse tutorial returns one that way)."""
    if isinstance(got, (list, tuple)) and len(got) == 2 and isinstance(got[0], S.State):
        return [got]
    return list(got) if isinstance(got, (list, tuple)) else [got]


def _checked_pair(name: str, item, state, sid: int) -> tuple:
    ok = isinstance(item, (list, tuple)) and len(item) == 2 and \
        isinstance(item[0], S.State) and type(item[1]) is int
    if not ok:
        raise AutoSchedError(f"custom sketch rule {name!r}: apply_func returned {item!r} "
                             f"for stage {sid}; expected [state, next_stage_id] pairs")
    st, nxt = item
    if st.dag is not state.dag:
        raise AutoSchedError(f"custom sketch rule {name!r}: apply_func returned a state of "
                             "another ComputeDAG")
    if not -1 <= nxt <= sid or (nxt == sid and len(st.transform_steps) <= len(
            state.transform_steps)):
        raise AutoSchedError(
            f"custom sketch rule {name!r}: apply_func returned next stage {nxt} for stage "
            f"{sid}; expected -1 to {sid - 1}, or {sid} with a state that has new steps "
            "(else sketch generation would never end)")
    return st.copy(), nxt


def task_sketch_options(task) -> dict:
    """``generate_sketches``' target arguments for a SearchTask."""
    return {"vector_bytes": task.hardware_params.vector_unit_bytes,
            "rewrite_layout": int(getattr(task, "layout_rewrite_option", 0)) != 0}


def generate_sketches(init_state, num_cores: int, custom_rules=(), policy=None,
                      vector_bytes: int = 0, rewrite_layout: bool = False) -> list:
    """All sketches of ``init_state`` (deduplicated by their printed loop nest).
    ``custom_rules`` (PreloadCustomSketchRule objects) go first, called with ``policy``.
    ``vector_bytes`` (the target's vector unit; 0: Ansor's sketches alone) and
    ``rewrite_layout`` (the task rewrites its weights' layout) decide the vector-axis
    variants of the tiling rules (``vector_axis``)."""
    vec = (vector_bytes, rewrite_layout) if vector_bytes else None
    rules = [custom_rule(r, policy) for r in custom_rules] + [
        rule_always_inline, lambda s, i: rule_add_rfactor(s, i, num_cores),
        rule_add_cache_write, lambda s, i: rule_mlt_with_fusion(s, i, vec),
        rule_mlt]
    work = [(init_state, len(init_state.stages) - 1)]
    done, seen = [], set()
    while work:
        state, sid = work.pop()
        if sid < 0:
            key = str(state) + repr([s.to_record() for s in state.transform_steps])
            if key not in seen:
                seen.add(key)
                done.append(state)
            continue
        results = []
        for rule in rules:
            kind, new = rule(state, sid)
            if kind == PASS:
                continue
            results += new
            if kind == APPLY_AND_SKIP_REST:
                break
        else:
            results.append((state, sid - 1))   # skip rule
        work.extend(reversed(results))
    return done
