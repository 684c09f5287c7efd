"""Re-tiling without replay: the State of a step list that differs from a known State's
only in split lengths, built from that State's structure.

Why: nine in ten mutations of the evolutionary search change the lengths of one split,
and every random sample fills a sketch's split lengths; replaying all the steps for
each was a fifth of a search round.  When the changed splits all come after every
dataflow step, the new State has the known one's structure -- its ops, its iterators'
names, kinds and annotations, its attach map, its dataflow key -- and only extents
change, so they are read from the loop model's mirrored leaves (``features.nest``),
at half the cost of a replay (only the stages the changed splits act on are mirrored
again: ``remirror_leaves``), and the printout (from the print template) and what the
structure alone decides from the known State's ``struct_memo``, which the two share.

``reunrolled`` does the same for the auto-unroll mutation (4% of mutations), whose
step list differs from the known State's only in one auto-unroll pragma's value: the
loops, extents and structure are the known State's, only one stage's
``auto_unroll_max_step`` and the printout's pragma line change.  Replaying the steps
for it, and deriving the new structure's memos again, cost several re-tilings each.

Invariants: exact where the loop model agrees with the known State's iterators
(``leaves_agree``); the split steps' extent checks (``SplitStep``) are made on the
mirrored leaves, so a step list whose replay would raise is declined, never built;
anything else is declined (None) and the caller replays.  Tests compare both ways on
sampled and mutated states of every workload family.
"""
from __future__ import annotations

from .. import state as S
from ..features.nest import (
    last_dataflow_step,
    leaf_extent,
    leaves_agree,
    leaves_of,
    remirror_leaves,
)
from ..steps.loop import PragmaStep

__all__ = ["may_retile", "retiled", "reunrolled"]


def may_retile(state, k: int) -> bool:
    """Whether ``retiled`` can build from ``state`` when its splits from index ``k`` on
    change (it may still decline when a split's extent check fails)."""
    return state.concrete and k > last_dataflow_step(state) and leaves_agree(state)


def retiled(state, k: int, steps: list, changed: tuple | None = None):
    """The State that ``steps`` -- ``state``'s steps with the lengths of some splits
    changed, the first at index ``k`` -- replay to, built from ``state``'s structure and
    the mirrored leaves of ``steps``; None when that is not exact (a dataflow step after
    ``k``, whose ops may depend on the split; a structure the loop model does not
    mirror) or a split step's extent check fails (the caller replays, which decides).
    ``changed``: the indices of the changed splits, when the caller knows them (else
    the steps that are not ``state``'s own objects); the child keeps ``steps``."""
    if not may_retile(state, k):
        return None
    child = S.State(state.dag, state.stages, state.attach_map, (), True,
                    state.dataflow_key)
    child.transform_steps = steps
    child._struct = state.struct_memo()
    if changed is None:
        old = state.transform_steps
        changed = tuple(j for j in range(k, len(steps)) if steps[j] is not old[j])
    leaves = remirror_leaves(state, child, changed)
    if leaves is None:
        return None
    stages = child.stages
    # an iterator is decided by the structure (name, kind, annotation) and its extent,
    # so the structure's states share one per (stage, position, extent): a search round
    # re-tiles ~10^4 states, and making each changed iterator anew was a tenth of it.
    # Per stage and position: those iterators by extent, and the position's slot in
    # the print template (-1: none)
    per_stage = child._struct.get("retile_memo")
    if per_stage is None:
        slot = S.template_slots(state)
        per_stage = child._struct["retile_memo"] = [
            ([{} for _ in st.iters], [slot.get((sid, j), -1) for j in range(len(st.iters))])
            for sid, st in enumerate(stages)]
    # the printout's extents: the parent's, with the changed iterators' replaced
    # (filling the template from every iterator was about 3% of a conv2d round)
    fill = None if state._fill is None else list(state._fill)
    # the parent's leaves agree with its iterators, and the memoized carving returns
    # the same atom tuples for the same splits: only leaves that are other objects can
    # have another extent (a stage whose leaf list compares equal has none)
    for sid, (lv, plv) in enumerate(zip(leaves, leaves_of(state))):
        if lv is plv or lv == plv:
            continue
        st = stages[sid]
        iters = st.iters
        made, slots = per_stage[sid]
        new = None
        for j, atoms in enumerate(lv):
            if atoms is plv[j]:
                continue
            e = atoms[0][2] if len(atoms) == 1 else leaf_extent(atoms)
            it = iters[j]
            if e != it.extent:
                if new is None:
                    new = list(iters)
                made_it = made[j].get(e)
                if made_it is None:
                    made_it = made[j][e] = S.replace(it, extent=e)
                new[j] = made_it
                if fill is not None and slots[j] >= 0:
                    fill[slots[j]] = e
        if new is not None:
            stages[sid] = S.replace(st, iters=tuple(new))
    child._leaves = [leaves, True]
    state.print_template()      # into the struct_memo the child shares: its printout
    if fill is not None:
        child._fill = tuple(fill)
    return child


UNROLL_PRAGMA = "auto_unroll_max_step$"


def reunrolled(state, k: int, value: int):
    """The State that ``state``'s steps replay to with step ``k`` -- an auto-unroll
    ``PragmaStep`` after every dataflow step -- set to ``value`` (> 0), built from
    ``state``; None when that is not exact (a removed pragma would shift the later
    steps' indices, which struct memos hold; before a dataflow step, its stage number
    would move) -- the caller replays."""
    steps = state.transform_steps
    pr = steps[k]
    if value <= 0 or not state.concrete or type(pr) is not PragmaStep or \
            not pr.pragma_type.startswith(UNROLL_PRAGMA) or \
            k <= last_dataflow_step(state) or not leaves_agree(state):
        return None
    new = PragmaStep(pr.stage_id, pr.iter_id, f"{UNROLL_PRAGMA}{value}")
    new_steps = list(steps)
    new_steps[k] = new
    # the stage keeps the value of its last pragma step
    final = value
    for later in new_steps[k + 1:]:
        if type(later) is PragmaStep and later.stage_id == pr.stage_id:
            final = later._value()
    stages = list(state.stages)
    st = stages[pr.stage_id]
    if st.auto_unroll_max_step != final:
        stages[pr.stage_id] = S.replace(st, auto_unroll_max_step=final)
    child = S.State(state.dag, stages, state.attach_map, new_steps, True,
                    state.dataflow_key)
    child._struct = _unrolled_struct(state.struct_memo(), k, value)
    child._leaves = [leaves_of(state), True]     # the same loops and extents
    # the printout's extents fill the same slots: only the pragma line's text differs
    child._fill = state._fill
    return child


def _unrolled_struct(memo: dict, k: int, value: int) -> dict:
    """The struct memo of ``memo``'s structure with pragma step ``k`` set to ``value``:
    ``memo``'s entries but those that print pragma values (``S.PRAGMA_DEPENDENT``),
    one per (k, value), kept in ``memo`` so the children share it."""
    made = memo.get("unrolled_structs")
    if made is None:
        made = memo["unrolled_structs"] = {}
    got = made.get((k, value))
    if got is None:
        got = made[(k, value)] = {key: v for key, v in memo.items()
                                  if key not in S.PRAGMA_DEPENDENT}
    return got
