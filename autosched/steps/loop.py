"""Loop transform steps: AN, FU, PR, RE, SP, FSP, FFSP, SA.

Every step is frozen data with four behaviours: ``apply_to_state`` (mutates a State copy,
raises InvalidStepError if it does not apply), ``apply_to_schedule`` (replays it on a te
Schedule whose stage i is state stage i), ``to_record`` (the TVM record list) and
``print_python`` (schedule-API code, using ``names`` from ``PyNames``).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from math import prod

from compiler.errors import ScheduleError
from compiler.schedule.relations import split_extents

from .. import state as S
from ..errors import InvalidStepError

_ANN_TO_TE = {S.ANN_UNROLL: "unroll", S.ANN_VECTORIZE: "vectorize", S.ANN_PARALLEL: "parallel"}


def _stage(state, sid, code):
    if not isinstance(sid, int) or not 0 <= sid < len(state.stages):
        raise InvalidStepError(f"{code}: stage id {sid} out of range [0, {len(state.stages)})")
    st = state.stages[sid]
    if st.is_placeholder:
        raise InvalidStepError(f"{code}: stage {sid} ({st.name}) is a placeholder")
    return st


def _iter(st, iid, code):
    if not isinstance(iid, int) or not 0 <= iid < len(st.iters):
        raise InvalidStepError(f"{code}: iterator id {iid} out of range for stage {st.name} "
                               f"with {len(st.iters)} iterators")
    return st.iters[iid]


def te_leaf(sch, sid, iid, code):
    """The te IterVar of state (stage, iter), checked."""
    try:
        return sch.stages[sid].leaf_iter_vars[iid]
    except IndexError:
        raise InvalidStepError(f"{code}: stage {sid} iterator {iid} does not exist in the "
                               "replayed schedule") from None


@dataclass(frozen=True)
class AnnotationStep:
    stage_id: int
    iter_id: int
    annotation: int
    CODE = "AN"

    def apply_to_state(self, state):
        st = _stage(state, self.stage_id, self.CODE)
        it = _iter(st, self.iter_id, self.CODE)
        if self.annotation not in _ANN_TO_TE:
            raise InvalidStepError(f"AN: unsupported annotation {self.annotation}; expected one "
                                   f"of {sorted(_ANN_TO_TE)} (unroll, vectorize, parallel)")
        if self.annotation in (S.ANN_VECTORIZE, S.ANN_PARALLEL) and it.kind != S.SPATIAL:
            raise InvalidStepError(f"AN: cannot {S.ANN_NAMES[self.annotation]} {st.name}."
                                   f"{it.name}: it is not a spatial iterator")
        if it.annotation != S.ANN_NONE:
            raise InvalidStepError(f"AN: {st.name}.{it.name} is already annotated "
                                   f"{S.ANN_NAMES[it.annotation]}")
        iters = list(st.iters)
        iters[self.iter_id] = it.with_annotation(self.annotation)
        state.set_stage(self.stage_id, S.replace(st, iters=tuple(iters)))

    def apply_to_schedule(self, sch):
        iv = te_leaf(sch, self.stage_id, self.iter_id, self.CODE)
        getattr(sch.stages[self.stage_id], _ANN_TO_TE[self.annotation])(iv)

    def to_record(self):
        return [self.CODE, self.stage_id, self.iter_id, self.annotation]

    def print_python(self, names):
        return [f"s[{names.tensor(self.stage_id)}].{_ANN_TO_TE[self.annotation]}("
                f"{names.iter(self.stage_id, self.iter_id)})"]


@dataclass(frozen=True)
class FuseStep:
    stage_id: int
    fused_ids: tuple
    CODE = "FU"

    def apply_to_state(self, state):
        st = _stage(state, self.stage_id, self.CODE)
        ids = list(self.fused_ids)
        if not ids or ids != list(range(ids[0], ids[0] + len(ids))):
            raise InvalidStepError(f"FU: iterators {ids} of stage {st.name} are not consecutive")
        its = [_iter(st, i, self.CODE) for i in ids]
        kinds = {it.kind for it in its}
        ext = None if any(it.extent is None for it in its) else prod(it.extent for it in its)
        name = "@".join(it.name for it in its) + "@"
        fused = S.make_iterator(name, ext, kinds.pop() if len(kinds) == 1 else S.MIXED)
        iters = list(st.iters)
        iters[ids[0]:ids[-1] + 1] = [fused]
        if state.attach_map:
            remap = {i: ids[0] for i in ids}
            remap.update({i: i - len(ids) + 1 for i in range(ids[-1] + 1, len(st.iters))})
            state.update_attach_iters(self.stage_id, remap)
        state.set_stage(self.stage_id, S.replace(st, iters=tuple(iters)))
        return ids[0]

    def apply_to_schedule(self, sch):
        ivs = [te_leaf(sch, self.stage_id, i, self.CODE) for i in self.fused_ids]
        sch.stages[self.stage_id].fuse(*ivs)

    def to_record(self):
        return [self.CODE, self.stage_id, list(self.fused_ids)]

    def print_python(self, names):
        args = ", ".join(names.iter(self.stage_id, i) for i in self.fused_ids)
        return [f"{names.after_fuse(self.stage_id, self.fused_ids)} = "
                f"s[{names.tensor(self.stage_id)}].fuse({args})"]


@dataclass(frozen=True)
class PragmaStep:
    stage_id: int
    iter_id: int
    pragma_type: str
    CODE = "PR"

    def _value(self) -> int:
        key, _, val = self.pragma_type.partition("$")
        if key != "auto_unroll_max_step" or not val.isdigit():
            raise InvalidStepError(f"PR: unsupported pragma {self.pragma_type!r}; expected "
                                   "'auto_unroll_max_step$N'")
        return int(val)

    def apply_to_state(self, state):
        st = _stage(state, self.stage_id, self.CODE)
        _iter(st, self.iter_id, self.CODE)
        state.set_stage(self.stage_id, S.replace(st, auto_unroll_max_step=self._value()))

    def apply_to_schedule(self, sch):
        iv = te_leaf(sch, self.stage_id, self.iter_id, self.CODE)
        stage = sch.stages[self.stage_id]
        stage.pragma(iv, "auto_unroll_max_step", self._value())
        stage.pragma(iv, "unroll_explicit", True)

    def to_record(self):
        return [self.CODE, self.stage_id, self.iter_id, self.pragma_type]

    def print_python(self, names):
        t, it = names.tensor(self.stage_id), names.iter(self.stage_id, self.iter_id)
        return [f"s[{t}].pragma({it}, \"auto_unroll_max_step\", {self._value()})",
                f"s[{t}].pragma({it}, \"unroll_explicit\", True)"]


@dataclass(frozen=True)
class ReorderStep:
    stage_id: int
    after_ids: tuple
    CODE = "RE"

    def apply_to_state(self, state):
        st = _stage(state, self.stage_id, self.CODE)
        if sorted(self.after_ids) != list(range(len(st.iters))):
            raise InvalidStepError(f"RE: {list(self.after_ids)} is not a permutation of the "
                                   f"{len(st.iters)} iterators of stage {st.name}")
        its = st.iters
        iters = tuple([its[i] for i in self.after_ids])
        if state.attach_map:
            state.update_attach_iters(self.stage_id,
                                      {o: n for n, o in enumerate(self.after_ids)})
        state.set_stage(self.stage_id, S.replace(st, iters=iters))

    def apply_to_schedule(self, sch):
        ivs = [te_leaf(sch, self.stage_id, i, self.CODE) for i in self.after_ids]
        sch.stages[self.stage_id].reorder(*ivs)

    def to_record(self):
        return [self.CODE, self.stage_id, list(self.after_ids)]

    def print_python(self, names):
        args = ", ".join(names.iter(self.stage_id, i) for i in self.after_ids)
        return [f"s[{names.tensor(self.stage_id)}].reorder({args})"]


def split_state(state, code, sid, iid, lengths, inner_to_outer) -> list:
    """Split iterator ``iid`` by ``lengths``; returns the new iterators' ids."""
    st = _stage(state, sid, code)
    return _split_checked(state, code, sid, iid, st, _iter(st, iid, code), lengths,
                          inner_to_outer)


def _split_checked(state, code, sid, iid, st, it, lengths, inner_to_outer) -> list:
    """``split_state`` once stage ``sid`` (``st``) and its iterator ``iid`` (``it``)
    are known to exist."""
    if not lengths:
        raise InvalidStepError(f"{code}: split of {st.name}.{it.name} needs at least one length")
    for x in lengths:       # a loop, not any(<genexpr>): replays run this ~10^5 times a round
        if x is not None and (not isinstance(x, int) or x < 1):
            raise InvalidStepError(f"{code}: split lengths {list(lengths)} of "
                                   f"{st.name}.{it.name} must be positive ints")
    new = _split_iters(it, tuple(lengths), inner_to_outer)
    iters = st.iters[:iid] + new + st.iters[iid + 1:]
    n = len(new)
    if state.attach_map:    # attach points on the later iterators move by n - 1
        remap = {iid: iid + n - 1}
        remap.update({i: i + n - 1 for i in range(iid + 1, len(st.iters))})
        state.update_attach_iters(sid, remap)
    state.set_stage(sid, S.replace(st, iters=iters))
    if None in lengths:
        state.concrete = False
    return list(range(iid, iid + n))


def _split_iters(it, lengths: tuple, inner_to_outer) -> tuple:
    """The iterators replacing ``it`` when split by (checked) ``lengths``, outer first."""
    return _split_iters_of(it.name, it.extent, it.kind, lengths, inner_to_outer)


# A search round splits ~10^5 times but only a few hundred distinct ways (>99% hits), and
# Iterators are immutable, so states share them.
@functools.lru_cache(maxsize=16384)
def _split_iters_of(name, extent, kind, lengths: tuple, inner_to_outer) -> tuple:
    if None in lengths or extent is None:
        exts = [None, *lengths] if inner_to_outer else [*lengths, None]
    else:
        exts = split_chain_extents(extent, lengths, inner_to_outer)
    return tuple([S.make_iterator(f"{name}.{k}", e, kind) for k, e in enumerate(exts)])


def split_chain_extents(extent: int, lengths, inner_to_outer: bool) -> list:
    """Loop extents, outer to inner, of splitting ``extent`` by ``lengths`` exactly as
    ``split_schedule`` replays it (the compiler's ``split_extents`` at each split), so
    the State and the replayed schedule agree even when a length overshoots."""
    if inner_to_outer:
        inner, cur = [], extent
        for f in reversed(lengths):
            _, cur, i = split_extents(cur, f, None)
            inner.append(i)
        return [cur, *reversed(inner)]
    outer, cur = [], extent
    for n in lengths:
        _, o, cur = split_extents(cur, None, n)
        outer.append(o)
    return [*outer, cur]


def split_schedule(sch, code, sid, iid, lengths, inner_to_outer) -> None:
    stage = sch.stages[sid]
    iv = te_leaf(sch, sid, iid, code)
    if any(x is None for x in lengths):
        raise InvalidStepError(f"{code}: cannot replay a split with unknown lengths {lengths}")
    try:
        if inner_to_outer:
            for f in reversed(lengths):
                iv, _ = stage.split(iv, factor=f)
        else:
            for n in lengths:
                _, iv = stage.split(iv, nparts=n)
    except ScheduleError as err:
        raise InvalidStepError(f"{code}: {err}") from None


def split_python(names, code_sid, iid, lengths, inner_to_outer, out_names) -> list:
    t = names.tensor(code_sid)
    cur = names.iter(code_sid, iid)
    lines = []
    if inner_to_outer:
        outs = list(out_names)
        for k in range(len(lengths) - 1, -1, -1):
            outer = outs[0] if k == 0 else f"{cur}_o{k}"
            lines.append(f"{outer}, {outs[k + 1]} = s[{t}].split({cur}, factor={lengths[k]})")
            cur = outer
    else:
        for k, n in enumerate(lengths):
            inner = out_names[-1] if k == len(lengths) - 1 else f"{cur}_i{k}"
            lines.append(f"{out_names[k]}, {inner} = s[{t}].split({cur}, nparts={n})")
            cur = inner
    return lines


@dataclass(frozen=True)
class SplitStep:
    stage_id: int
    iter_id: int
    extent: int | None
    lengths: tuple
    inner_to_outer: bool = True
    CODE = "SP"

    def apply_to_state(self, state):
        st = _stage(state, self.stage_id, self.CODE)
        it = _iter(st, self.iter_id, self.CODE)
        if self.extent is not None and it.extent is not None and it.extent != self.extent:
            raise InvalidStepError(f"SP: iterator {it.name} has extent {it.extent}, the step "
                                   f"expects {self.extent}")
        return _split_checked(state, self.CODE, self.stage_id, self.iter_id, st, it,
                              self.lengths, self.inner_to_outer)

    def apply_to_schedule(self, sch):
        split_schedule(sch, self.CODE, self.stage_id, self.iter_id, self.lengths,
                       self.inner_to_outer)

    def to_record(self):
        return [self.CODE, self.stage_id, self.iter_id, self.extent,
                [0 if x is None else x for x in self.lengths], int(self.inner_to_outer)]

    def print_python(self, names):
        outs = names.after_split(self.stage_id, self.iter_id, len(self.lengths) + 1)
        return split_python(names, self.stage_id, self.iter_id, self.lengths,
                            self.inner_to_outer, outs)


def make_split_step(stage_id: int, iter_id: int, extent, lengths: tuple,
                    inner_to_outer: bool = True) -> SplitStep:
    """``SplitStep(...)`` without the frozen dataclass's ``__init__`` (one
    ``object.__setattr__`` per field): the search makes one per tile-size mutation and
    per sampled split, ~10^4 a round.  Equal (and equally hashed) to the one
    ``SplitStep(...)`` makes."""
    step = object.__new__(SplitStep)
    step.__dict__.update(stage_id=stage_id, iter_id=iter_id, extent=extent,
                         lengths=lengths, inner_to_outer=inner_to_outer)
    return step


def follow_lengths(steps, src_step_id, n_split) -> tuple:
    src = steps[src_step_id] if 0 <= src_step_id < len(steps) else None
    if not isinstance(src, SplitStep):
        raise InvalidStepError(f"FSP: step {src_step_id} is not a split step")
    if not 1 <= n_split <= len(src.lengths) + 1:
        raise InvalidStepError(f"FSP: n_split {n_split} out of range for step {src_step_id}")
    tail = src.lengths[n_split - 1:]
    return (*src.lengths[:n_split - 1], None if None in tail else prod(tail))


@dataclass(frozen=True)
class FollowSplitStep:
    stage_id: int
    iter_id: int
    src_step_id: int
    n_split: int
    CODE = "FSP"

    def lengths(self, steps) -> tuple:
        return follow_lengths(steps, self.src_step_id, self.n_split)

    def apply_to_state(self, state):
        return split_state(state, self.CODE, self.stage_id, self.iter_id,
                           self.lengths(state.transform_steps), True)

    def apply_to_schedule(self, sch, steps):
        split_schedule(sch, self.CODE, self.stage_id, self.iter_id, self.lengths(steps), True)

    def to_record(self):
        return [self.CODE, self.stage_id, self.iter_id, self.src_step_id, self.n_split]

    def print_python(self, names):
        lengths = self.lengths(names.steps)
        outs = names.after_split(self.stage_id, self.iter_id, len(lengths) + 1)
        return split_python(names, self.stage_id, self.iter_id, lengths, True, outs)


@dataclass(frozen=True)
class FollowFusedSplitStep:
    stage_id: int
    iter_id: int
    src_step_ids: tuple
    level: int
    factor_or_nparts: bool
    CODE = "FFSP"

    def length(self, steps):
        total = 1
        for sid in self.src_step_ids:
            src = steps[sid] if 0 <= sid < len(steps) else None
            if not isinstance(src, SplitStep) or not 0 <= self.level < len(src.lengths):
                raise InvalidStepError(f"FFSP: step {sid} is not a split with level {self.level}")
            if src.lengths[self.level] is None:
                return None
            total *= src.lengths[self.level]
        return total

    def apply_to_state(self, state):
        return split_state(state, self.CODE, self.stage_id, self.iter_id,
                           (self.length(state.transform_steps),), self.factor_or_nparts)

    def apply_to_schedule(self, sch, steps):
        split_schedule(sch, self.CODE, self.stage_id, self.iter_id, (self.length(steps),),
                       self.factor_or_nparts)

    def to_record(self):
        return [self.CODE, self.stage_id, self.iter_id, list(self.src_step_ids), self.level,
                int(self.factor_or_nparts)]

    def print_python(self, names):
        outs = names.after_split(self.stage_id, self.iter_id, 2)
        return split_python(names, self.stage_id, self.iter_id, (self.length(names.steps),),
                            self.factor_or_nparts, outs)


@dataclass(frozen=True)
class StorageAlignStep:
    stage_id: int
    iter_id: int
    factor: int
    offset: int
    CODE = "SA"

    def apply_to_state(self, state):
        st = _stage(state, self.stage_id, self.CODE)
        it = _iter(st, self.iter_id, self.CODE)
        # the schedule aligns a root data axis only; an iterator keeps its root's name
        # until it is split ("i.0") or fused ("i@j@"), so the name tells
        if it.kind != S.SPATIAL or it.name not in {iv.var.name for iv in st.op.axis}:
            raise InvalidStepError(f"SA: {st.name}.{it.name} must be an unsplit, unfused data "
                                   "axis of the stage")
        if self.factor < 1 or not 0 <= self.offset < self.factor:
            raise InvalidStepError(f"SA: need factor >= 1 and 0 <= offset < factor, got "
                                   f"{self.factor}, {self.offset}")
        state.set_stage(self.stage_id, S.replace(st, storage_offset=self.offset))

    def apply_to_schedule(self, sch):
        iv = te_leaf(sch, self.stage_id, self.iter_id, self.CODE)
        try:
            sch.stages[self.stage_id].storage_align(iv, self.factor, self.offset)
        except ScheduleError as err:
            raise InvalidStepError(f"SA: {err}") from None

    def to_record(self):
        return [self.CODE, self.stage_id, self.iter_id, self.factor, self.offset]

    def print_python(self, names):
        return [f"s[{names.tensor(self.stage_id)}].storage_align("
                f"{names.iter(self.stage_id, self.iter_id)}, {self.factor}, {self.offset})"]
