"""Loop nests of a State's stages, derived from its steps without lowering.

Role: give the feature extractor, for every computed (non-inlined) stage, the loops that
run its store, outermost first: the loops of the stages it is attached into (down to the
attach point) followed by its own leaf loops, each with an extent, an annotation and
how one step / the whole loop moves every root axis of the stage.  This replaces
replaying the steps on a te Schedule and lowering (5-20 ms) by ~0.1 ms of arithmetic.

Model (an approximation of ``compiler.schedule.bound``):
- every leaf loop is a tuple of *atoms* ``(root axis, stride, extent)``, outer first:
  the root axis moves by ``stride`` per step of the atom.  Splits carve atoms from the
  inner end (a non-dividing split rounds up), fuses concatenate them.  Atoms are built
  by mirroring the split/fuse/reorder/dataflow steps in ``state.transform_steps``
  (tests check the result against bound inference on sampled and mutated states); a
  stage whose number of mirrored loops disagrees with its State iterators falls back to
  one atom per iterator, matched to a root axis by name;
- a stage attached with compute_at covers, per output dimension, the range its reader
  (the attach target, inlined stages substituted) touches inside the attach point:
  ``max(hi) - min(lo) + 1`` over the reader's access tuples, where an affine index moves
  by ``|coef| * span`` of the reader's inner loops (whole dimension when not affine);
  the shrunk root range is passed down the atoms innermost first as
  ``min(extent, remaining)`` (what bound inference does through splits);
- the loops enclosing the attach point act on the attached stage through the reader's
  index map: a step of such a loop moves the stage's root ``d`` by ``coef_d . step``
  (``regions.py`` computes both for an attached stage).

The mirrored leaves are memoized on the State (``leaves_of``; a state that
``search.retile`` built arrives with them), and ``leaves_agree`` says whether they match
the State's iterators, which is when ``search.retile`` may build on them.

Invariants: extents are actual (bound-inferred) extents; ``span[l, r]`` is how far loop
``l`` moves root ``r`` over its whole range (>= 0), ``step[l, r]`` how far one iteration
moves it; stage order is the State's, and consumers are processed before producers.
"""
from __future__ import annotations

import functools
from math import prod

import numpy as np

from compiler.te.tensor import ComputeOp

from .. import state as S
from ..extents import static_extent
from ..steps.compute import CacheReadStep, CacheWriteStep, RfactorStep
from ..steps.loop import (
    FollowFusedSplitStep,
    FollowSplitStep,
    FuseStep,
    ReorderStep,
    SplitStep,
    split_chain_extents,
)
from .body import body_info
from .regions import enclosing, reader

# annotation position codes (Ansor's AnnotationPosType)
POS_NONE, POS_INNER_SPATIAL, POS_MIDDLE_SPATIAL, POS_OUTER_SPATIAL = 0, 1, 2, 3
POS_INNER_REDUCE, POS_MIDDLE_REDUCE, POS_OUTER_REDUCE, POS_MIXED = 4, 5, 6, 7


class Nest:
    """The loops around one stage's store (see the module docstring)."""
    __slots__ = ("sid", "info", "ext", "ann", "pos", "span", "step", "n_outer",
                 "root_ext", "max_unroll", "attached")

    def __init__(self, sid, info, ext, ann, pos, span, step, n_outer, root_ext, max_unroll,
                 attached):
        self.sid, self.info, self.ext, self.ann, self.pos = sid, info, ext, ann, pos
        self.span, self.step, self.n_outer = span, step, n_outer
        self.root_ext, self.max_unroll, self.attached = root_ext, max_unroll, attached


# ---------------------------------------------------------------------- step mirroring
# The pure per-op / per-atom arithmetic below is memoized (``_memo``): a search round
# mirrors ~10^4 states made of a few hundred distinct (atoms, lengths) splits, so the hit
# rate is >99%.  Arguments are immutable (ops and body infos hash by identity, atoms are
# tuples), and the memoized lists and arrays are shared: callers never mutate them.
_memo = functools.lru_cache(maxsize=16384)


@_memo
def _root_atoms(op) -> tuple:
    exts = [static_extent(iv) for iv in op.axis + op.reduce_axis]
    return tuple([((r, 1, e),) if e > 1 else () for r, e in enumerate(exts)])


def _root_leaves(op) -> list:
    return list(_root_atoms(op))


def _carve(atoms, inner_exts) -> list:
    """Split a leaf's atoms into pieces; ``inner_exts`` are the extents of all pieces but
    the outermost (outer to inner), which takes what is left."""
    rest = list(atoms)
    pieces = []
    for f in reversed(inner_exts):
        piece = []
        f = f or 1
        while f > 1 and rest:
            r, s, e = rest[-1]
            if e <= f:
                piece.append(rest.pop())
                f = -(-f // e)
            else:
                piece.append((r, s, f))
                rest[-1] = (r, s * f, -(-e // f))
                f = 1
        piece.reverse()
        pieces.append(tuple(piece))
    pieces.append(tuple(rest))
    pieces.reverse()
    return pieces


def _fuse(leaves) -> tuple:
    out: list = []
    for atoms in leaves:
        for a in atoms:
            if out and out[-1][0] == a[0] and out[-1][1] == a[1] * a[2]:
                out[-1] = (a[0], a[1], a[2] * out[-1][2])
            else:
                out.append(a)
    return tuple(out)


_fused = _memo(_fuse)    # on a tuple of leaves


def _split_atoms(step, steps, atoms) -> tuple:
    """The pieces a split step makes of a leaf's atoms (as ``split_state`` makes them),
    memoized on (atoms, lengths, direction)."""
    t = type(step)
    if t is SplitStep:
        lengths, i2o = step.lengths, step.inner_to_outer
    elif t is FollowSplitStep:
        lengths, i2o = step.lengths(steps), True
    else:
        lengths, i2o = (step.length(steps),), step.factor_or_nparts
    return _carved(atoms, tuple(lengths), i2o)


@_memo
def _carved(atoms: tuple, lengths: tuple, i2o) -> tuple:
    exts = [x or 1 for x in lengths]
    if not i2o:
        ext = prod(a[2] for a in atoms) if atoms else 1
        exts = split_chain_extents(ext, exts, False)[1:]
    return tuple(_carve(atoms, exts))


def _final_positions(steps, n0) -> dict:
    ids, nxt = list(range(n0)), n0
    for st in steps:
        t = type(st)
        if t is CacheReadStep:
            ids.insert(st.stage_id + 1, nxt)
            nxt += 1
        elif t is CacheWriteStep or t is RfactorStep:
            ids.insert(st.stage_id, nxt)
            nxt += 1
    return {ident: pos for pos, ident in enumerate(ids)}


_DATAFLOW = (CacheReadStep, CacheWriteStep, RfactorStep)
_LEAF_STEPS = (SplitStep, FollowSplitStep, FollowFusedSplitStep, FuseStep, ReorderStep)


def mirror_leaves(state, check_splits: bool = False, stop: int | None = None) -> list | None:
    """Per stage, the atoms of each leaf loop (see the module docstring), after the
    first ``stop`` steps (all by default).  With ``check_splits``: None when a split
    step's recorded extent is not its loop's (the check ``SplitStep`` makes when it is
    applied)."""
    steps, stages = state.transform_steps, state.stages
    ops = state.dag.ops
    leaves = [_root_leaves(op) if isinstance(op, ComputeOp) else [] for op in ops]
    memo = state.struct_memo()      # the steps' kinds decide the final positions
    final = memo.get("final_positions")
    if final is None:
        dataflow = any(type(s) in _DATAFLOW for s in steps)
        final = memo["final_positions"] = _final_positions(steps, len(ops)) \
            if dataflow else {}
    ids, nxt = list(range(len(ops))), len(ops)
    for step in steps if stop is None else steps[:stop]:
        t = type(step)
        if t in _LEAF_STEPS:
            lv = _leaf_step(step, t, steps, leaves[step.stage_id], check_splits)
            if lv is None:
                return None
            leaves[step.stage_id] = lv
        elif t in _DATAFLOW:
            at = step.stage_id + 1 if t is CacheReadStep else step.stage_id
            ids.insert(at, nxt)
            leaves.insert(at, _root_leaves(stages[final[nxt]].op))
            nxt += 1
            if t is not CacheReadStep:
                leaves[at + 1] = _root_leaves(stages[final[ids[at + 1]]].op)
    return leaves


def _leaf_step(step, t, steps, lv: list, check_splits: bool) -> list | None:
    """A stage's leaves after one split, fuse or reorder step (``lv`` may be reused);
    None when the split check fails (``mirror_leaves``)."""
    if t is ReorderStep:
        return [lv[i] for i in step.after_ids]
    if t is FuseStep:
        ids_ = step.fused_ids
        lv[ids_[0]:ids_[-1] + 1] = [_fused(tuple([lv[i] for i in ids_]))]
        return lv
    iid = step.iter_id
    if check_splits and t is SplitStep and step.extent is not None and \
            step.extent != leaf_extent(lv[iid]):
        return None
    lv[iid:iid + 1] = _split_atoms(step, steps, lv[iid])
    return lv


def extended_leaves(leaves: list, steps, start: int) -> list | None:
    """``mirror_leaves`` of a state whose steps are ``steps``, given ``leaves``, the
    (unchecked) mirrored leaves of ``steps[:start]``: the later split, fuse and
    reorder steps applied to them (the lists they change are copies; the others are
    shared, read-only); None when a later step is a dataflow step (stages move).

    Why: a sampled state is a re-tiled fill, whose leaves are known, followed by
    compute-location, fuse and annotation steps; mirroring all its steps again was
    a tenth of featurizing a random sample."""
    out = None
    for step in steps[start:]:
        t = type(step)
        if t in _DATAFLOW:
            return None
        if t in _LEAF_STEPS:
            if out is None:
                out = list(leaves)
            sid = step.stage_id
            out[sid] = _leaf_step(step, t, steps, list(out[sid]), False)
    return leaves if out is None else out


def remirror_leaves(parent, child, changed) -> list | None:
    """``mirror_leaves(child, check_splits=True)``, for a ``child`` whose steps are its
    ``parent``'s but for the splits at indices ``changed``, all after the last dataflow
    step (``search.retile``'s case): only the stages those splits, and the follow-splits
    reading them, act on are mirrored again -- from their leaves at the last dataflow
    step, which the structure decides when no earlier step split them -- and the
    others are the parent's (shared, read-only).  Any other case mirrors in full."""
    plan = _remirror_plan(parent)
    steps = child.transform_steps
    if tuple(steps[:len(plan[4])]) != plan[4]:      # shares the struct, not the prefix
        return mirror_leaves(child, check_splits=True)
    affected: set = set()
    for j in changed:
        affected.add(steps[j].stage_id)
        affected.update(plan[2].get(j, ()))
    if not affected <= plan[0]:
        return mirror_leaves(child, check_splits=True)
    pristine, own_steps, _, base, _ = plan
    leaves = list(leaves_of(parent))
    for sid in affected:
        lv = list(base[sid])
        for j in own_steps.get(sid, ()):
            step = steps[j]
            nxt = _leaf_step(step, type(step), steps, lv, True)
            if nxt is None:
                return None
            lv = nxt
        leaves[sid] = lv
    return leaves


def last_dataflow_step(state) -> int:
    """Index of the state's last dataflow step (cache_read, cache_write, rfactor; -1
    without one): the structure decides it, so it is kept in the struct_memo."""
    memo = state.struct_memo()
    last = memo.get("last_dataflow")
    if last is None:
        last = memo["last_dataflow"] = max(
            (i for i, s in enumerate(state.transform_steps) if type(s) in _DATAFLOW),
            default=-1)
    return last


def _remirror_plan(state) -> tuple:
    """(stages no step splits, fuses or reorders up to the last dataflow step, each
    stage's such steps after it, the stages following each split step, the first
    set's leaves at the last dataflow step, the steps up to it): decided by the
    structure and those steps, so kept in the struct_memo (the states that share it
    share those steps; ``remirror_leaves`` checks)."""
    memo = state.struct_memo()
    plan = memo.get("remirror_plan")
    if plan is not None:
        return plan
    steps = state.transform_steps
    last = last_dataflow_step(state)
    ids, nxt, touched = list(range(len(state.dag.ops))), len(state.dag.ops), set()
    for step in steps[:last + 1]:
        t = type(step)
        if t in _LEAF_STEPS:
            touched.add(ids[step.stage_id])
        elif t in _DATAFLOW:
            ids.insert(step.stage_id + 1 if t is CacheReadStep else step.stage_id, nxt)
            nxt += 1
    pristine = frozenset(p for p, ident in enumerate(ids) if ident not in touched)
    own: dict = {}
    followers: dict = {}
    for j in range(last + 1, len(steps)):
        step, t = steps[j], type(steps[j])
        if t in _LEAF_STEPS:
            own.setdefault(step.stage_id, []).append(j)
        if t is FollowSplitStep:
            followers.setdefault(step.src_step_id, set()).add(step.stage_id)
        elif t is FollowFusedSplitStep:
            for src in step.src_step_ids:
                followers.setdefault(src, set()).add(step.stage_id)
    prefix = mirror_leaves(state, stop=last + 1)
    assert prefix is not None                # unchecked mirroring never declines
    base = {p: tuple(prefix[p]) for p in pristine}
    plan = memo["remirror_plan"] = (pristine, own, followers, base, tuple(steps[:last + 1]))
    return plan


def leaf_extent(atoms) -> int:
    """A leaf loop's extent: the product of its atoms' extents."""
    e = 1
    for a in atoms:
        e *= a[2]
    return e


def leaves_of(state) -> list:
    """``mirror_leaves(state)``, memoized on the state (``State.invalidate`` clears it
    whenever a step is applied); the shared lists are read-only."""
    memo = state._leaves
    if memo is None:
        memo = state._leaves = [mirror_leaves(state), None]
    return memo[0]


def leaves_agree(state) -> bool:
    """Whether the mirrored leaves have the number and extents of the State's
    iterators, stage by stage (memoized with them): then the loop model is exact for
    this state's structure."""
    leaves = leaves_of(state)
    memo = state._leaves
    if memo[1] is None:
        memo[1] = all(
            len(lv) == len(st.iters) and all(leaf_extent(a) == it.extent
                                             for a, it in zip(lv, st.iters))
            for st, lv in zip(state.stages, leaves) if not st.is_placeholder)
    return memo[1]


def _checked(atoms_list, stage) -> list:
    """The mirrored leaves, or a name-based guess if their number disagrees with the
    State's iterators (the extents agree by construction; tests check them)."""
    its = stage.iters
    if len(atoms_list) == len(its):
        return atoms_list
    op = stage.op
    names = {iv.var.name: r for r, iv in enumerate(op.axis + op.reduce_axis)}
    out = []
    for it in its:
        r = names.get(it.name.split("@")[0].split(".")[0], 0)
        out.append(((r, 1, it.extent),) if (it.extent or 1) > 1 else ())
    return out


def _shrink(atoms_list, root_ext, nominal) -> dict:
    """Actual extent of every atom of a root r that only spans root_ext[r] < its
    nominal extent, keyed by the atom (the others keep theirs): the range is passed
    down the root's atoms innermost (smallest stride) first."""
    short: dict = {r: [] for r, (x, n) in enumerate(zip(root_ext, nominal)) if x < n}
    for atoms in atoms_list:
        for a in atoms:
            lst = short.get(a[0])
            if lst is not None:
                lst.append(a)
    act = {}
    for r, lst in short.items():
        rem = root_ext[r]
        lst.sort()              # one root: by stride, then extent
        for a in lst:
            e = a[2]
            act[a] = e if e < rem else rem
            rem = -(-rem // e)
    return act


@_memo
def _single_root_positions(n_sp: int, n_root: int) -> tuple:
    """Per root ``r``, the position code of a loop moving only ``r`` (a loop moving
    several roots is ``POS_MIXED``)."""
    out = []
    for r in range(n_root):
        if r < n_sp:
            out.append(POS_INNER_SPATIAL if r == n_sp - 1 else (
                POS_OUTER_SPATIAL if r == 0 else POS_MIDDLE_SPATIAL))
        else:
            out.append(POS_INNER_REDUCE if r == n_root - 1 else (
                POS_OUTER_REDUCE if r == n_sp else POS_MIDDLE_REDUCE))
    return tuple(out)


@_memo
def _loop_geometry(atoms_list: tuple, info, root_ext: tuple):
    """(ext, pos, span, step) of a stage's own loops: they depend only on (op body,
    atoms, root extents), so they are memoized on those (about half the stages of a
    search round recur).  The shared arrays are read-only."""
    n, R, n_sp = len(atoms_list), info.n_root, info.n_spatial
    act = None if list(root_ext) == info.root_ext else \
        _shrink(atoms_list, root_ext, info.root_ext)
    # spans then steps, loop-major, in one list made into one array: the two are its
    # halves (one conversion instead of two)
    out, steps_at = [0.0] * (2 * n * R), n * R
    # a loop without atoms (extent 1; about half of them) keeps these defaults
    ext, pos = [1] * n, [POS_OUTER_SPATIAL] * n
    single = _single_root_positions(n_sp, R)
    for l, atoms in enumerate(atoms_list):
        if not atoms:
            continue
        if len(atoms) == 1:          # most loops: one atom, one root, nothing to mix
            r, s, e = atoms[0]
            a = e if act is None else act.get(atoms[0], e)
            if a > 1:
                out[l * R + r] = s * (a - 1)
                out[steps_at + l * R + r] = s
                ext[l] = a
                pos[l] = single[r]
            continue
        # the loop's moving atoms: their extents' product, the last one's step, and
        # whether they move one root (its position) or several (mixed)
        x, base, last_r, last_s, first, mixed = 1, l * R, -1, 0, -1, False
        for atom in atoms:
            r, s, e = atom
            a = e if act is None else act.get(atom, e)
            if a > 1:
                x *= a
                out[base + r] += s * (a - 1)
                last_r, last_s = r, s
                if first < 0:
                    first = r
                elif r != first:
                    mixed = True
        if last_r >= 0:
            out[steps_at + base + last_r] = last_s
            ext[l] = x
            pos[l] = POS_MIXED if mixed else single[first]
    both = np.array(out, dtype=np.float64).reshape(2, n, R)
    both.flags.writeable = False          # and so are its halves, which are shared
    return ext, pos, both[0], both[1]


def _nest_plan(state) -> tuple:
    """(stage id, body info, attach point or None, its iterators' annotations, the
    stages whose bodies read it there) of every computed stage, consumers first: the
    structure alone decides it, so it is kept in the state's struct_memo (the
    annotation lists are shared: read-only).

    The readers of an attached stage: its attach target if that reads it, and the
    stages attached inside the target that read it.  Usually the target is the one
    reader; TVM also computes a stage at a loop of its consumer's attach target, and
    at a loop of the root its several consumers share."""
    memo = state.struct_memo()
    plan = memo.get("nest_plan")
    if plan is None:
        stages, amap = state.stages, state.attach_map
        inlined = frozenset(st.op for st in stages if st.compute_at == S.INLINED)
        rows = [(sid, body_info(st.op, inlined),
                 amap.get(sid) if st.compute_at == S.ITER else None,
                 [it.annotation for it in st.iters])
                for sid, st in reversed(list(enumerate(stages)))
                if not st.is_placeholder and st.compute_at != S.INLINED]
        infos = {sid: info for sid, info, _, _ in rows}
        plan = memo["nest_plan"] = tuple(
            (sid, info, att, ann, () if att is None else tuple(
                r for r, rinfo in infos.items()
                if (r == att[0] or _inside(r, att[0], amap))
                and reader(rinfo, info.op)[0] is not None))
            for sid, info, att, ann in rows)
    return plan


def _inside(sid: int, target: int, attach_map) -> bool:
    """Whether stage ``sid`` is attached, directly or through others, inside
    ``target``."""
    while sid in attach_map:
        sid = attach_map[sid][0]
        if sid == target:
            return True
    return False


def build_nests(state) -> list:
    """``Nest`` of every computed stage of ``state``, in stage order."""
    stages = state.stages
    leaves = leaves_of(state)
    nests: dict = {}
    for sid, info, att, ann, readers in _nest_plan(state):
        st = stages[sid]
        parent = nests.get(att[0]) if att else None
        root_ext, k = info.root_ext, 0
        if parent is not None and att is not None:
            k = parent.n_outer + att[1] + 1
            root_ext, outer_span, outer_step = enclosing(info, parent, k, readers, nests)
        atoms = _checked(leaves[sid], st)
        # on the body's structure, not the op: ops a dataflow step rebuilt share entries
        ext, pos, span, step = _loop_geometry(tuple(atoms), info.proto, tuple(root_ext))
        max_unroll = st.auto_unroll_max_step
        if parent is not None:
            ext = parent.ext[:k] + ext
            ann = parent.ann[:k] + ann
            pos = [POS_OUTER_SPATIAL] * k + pos
            span = np.concatenate((outer_span, span))   # 2-D: a vstack
            step = np.concatenate((outer_step, step))
            max_unroll = max_unroll or parent.max_unroll
        nests[sid] = Nest(sid, info, ext, ann, pos, span, step, k, root_ext, max_unroll,
                          parent is not None)
    return [nests[s] for s in sorted(nests)]
