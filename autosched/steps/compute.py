"""Compute-location and dataflow steps: CA, CI, CR, CHR, CHW, RF.

Dataflow steps (CHR, CHW, RF) change the ops and insert a stage, so their effect on the
State is computed by replaying the steps on a te Schedule (``dag.replay``, cached by
step prefix) and reading the new stages back.  Stage numbering follows Ansor: a cache-read
stage is inserted right after its source, a cache-write or rfactor stage right before
the stage it came from.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from compiler.errors import CompilerError
from compiler.tir.expr import IterVar

from .. import state as S
from ..errors import InvalidStepError
from ..extents import static_extent
from .loop import SplitStep, _iter, _stage, te_leaf


def _reads(op, other) -> bool:
    """True if ``op`` (transitively) reads the output of ``other``."""
    todo, seen = [op], set()
    while todo:
        cur = todo.pop()
        for t in cur.input_tensors:
            if t.op is other:
                return True
            if id(t.op) not in seen:
                seen.add(id(t.op))
                todo.append(t.op)
    return False


def _check_target(state, sid, tid, code):
    st = _stage(state, sid, code)
    if not isinstance(tid, int) or not 0 <= tid < len(state.stages) or tid == sid:
        raise InvalidStepError(f"{code}: bad target stage {tid} for stage {st.name}")
    tgt = state.stages[tid]
    if tgt.is_placeholder or tgt.compute_at == S.INLINED:
        raise InvalidStepError(f"{code}: target stage {tgt.name} is inlined or a placeholder")
    if _reads(st.op, tgt.op):
        raise InvalidStepError(f"{code}: target stage {tgt.name} is a producer of {st.name}; "
                               "attaching would make a cycle")
    t = tid
    while t in state.attach_map:
        t = state.attach_map[t][0]
        if t == sid:
            raise InvalidStepError(f"{code}: attaching {st.name} to {tgt.name} makes a cycle")
    return st, tgt


def scope_violation(state):
    """A message if some attached stage is read outside the loop it is computed in.

    A stage computed at ``(target, it)`` exists only inside that loop, so every reader
    (looking through inlined stages) must run there: it is the target itself, or it is
    attached, directly or through other attached stages, to the target at ``it`` or a
    deeper loop.  Lowering refuses anything else; the State checks it first so that a
    state it accepts also lowers.  It depends on the structure alone, so the answer is
    kept in the state's ``struct_memo`` (a search round asks it of every state).
    """
    memo = state.struct_memo()
    if "scope" not in memo:
        memo["scope"] = _scope_violation(state)
    return memo["scope"]


def _scope_violation(state):
    by_op = {st.op: i for i, st in enumerate(state.stages)}
    readers: dict = {}
    for c, st in enumerate(state.stages):
        if not st.is_placeholder:
            for t in st.op.input_tensors:
                p = by_op.get(t.op)
                if p is not None:
                    readers.setdefault(p, []).append(c)
    for sid, (tid, it) in state.attach_map.items():
        todo, seen = list(readers.get(sid, ())), set()
        while todo:
            c = todo.pop()
            if c in seen:
                continue
            seen.add(c)
            if state.stages[c].compute_at == S.INLINED:
                todo.extend(readers.get(c, ()))
            elif not _runs_inside(state, c, tid, it):
                return (f"{state.stages[sid].name} is computed at {state.stages[tid].name}."
                        f"{state.stages[tid].iters[it].name} but read by "
                        f"{state.stages[c].name} outside that loop")
    return None


def _runs_inside(state, c, tid, it) -> bool:
    """True if stage ``c``'s computation is inside loop ``it`` of stage ``tid``."""
    seen = set()
    while c != tid:
        if c in seen or c not in state.attach_map:
            return False
        seen.add(c)
        c, j = state.attach_map[c]
        if c == tid:
            return j >= it
    return True


@dataclass(frozen=True)
class ComputeAtStep:
    stage_id: int
    target_stage_id: int
    target_iter_id: int
    CODE = "CA"

    def apply_to_state(self, state):
        st, tgt = _check_target(state, self.stage_id, self.target_stage_id, self.CODE)
        _iter(tgt, self.target_iter_id, self.CODE)
        state.set_stage(self.stage_id, S.replace(st, compute_at=S.ITER))
        state.attach_map[self.stage_id] = (self.target_stage_id, self.target_iter_id)

    def apply_to_schedule(self, sch):
        iv = te_leaf(sch, self.target_stage_id, self.target_iter_id, self.CODE)
        sch.stages[self.stage_id].compute_at(sch.stages[self.target_stage_id], iv)

    def to_record(self):
        return [self.CODE, self.stage_id, self.target_stage_id, self.target_iter_id]

    def print_python(self, names):
        target = names.tensor(self.target_stage_id)
        return [f"s[{names.tensor(self.stage_id)}].compute_at(s[{target}], "
                f"{names.iter(self.target_stage_id, self.target_iter_id)})"]


def is_output(state, sid) -> bool:
    op = state.stages[sid].op
    return not any(t.op is op for st in state.stages if not st.is_placeholder
                   for t in st.op.input_tensors)


@dataclass(frozen=True)
class ComputeInlineStep:
    stage_id: int
    CODE = "CI"

    def apply_to_state(self, state):
        st = _stage(state, self.stage_id, self.CODE)
        if state.attached_to(self.stage_id):
            raise InvalidStepError(f"CI: stages are attached to {st.name}; cannot inline it")
        if st.op.reduce_axis or is_output(state, self.stage_id):
            raise InvalidStepError(f"CI: {st.name} is a reduction or an output; cannot inline")
        state.set_stage(self.stage_id, S.replace(st, compute_at=S.INLINED))
        state.attach_map.pop(self.stage_id, None)

    def apply_to_schedule(self, sch):
        sch.stages[self.stage_id].compute_inline()

    def to_record(self):
        return [self.CODE, self.stage_id]

    def print_python(self, names):
        return [f"s[{names.tensor(self.stage_id)}].compute_inline()"]


@dataclass(frozen=True)
class ComputeRootStep:
    stage_id: int
    CODE = "CR"

    def apply_to_state(self, state):
        st = _stage(state, self.stage_id, self.CODE)
        state.set_stage(self.stage_id, S.replace(st, compute_at=S.ROOT))
        state.attach_map.pop(self.stage_id, None)

    def apply_to_schedule(self, sch):
        sch.stages[self.stage_id].compute_root()

    def to_record(self):
        return [self.CODE, self.stage_id]

    def print_python(self, names):
        return [f"s[{names.tensor(self.stage_id)}].compute_root()"]


def stage_from_te(te_stage) -> S.StageState:
    """A fresh StageState for a te stage (used for stages a dataflow step creates)."""
    iters = []
    for iv in te_stage.leaf_iter_vars:
        kind = {IterVar.DataPar: S.SPATIAL, IterVar.CommReduce: S.REDUCTION}.get(
            iv.iter_type, S.MIXED)
        iters.append(S.Iterator(iv.var.name, static_extent(iv), kind))
    return S.StageState(te_stage.op, tuple(iters))


def _placeholder_lengths(step):
    """Sketches have unknown split lengths; replay them with 1 to read back the new ops
    (only the structure matters until the lengths are sampled and the state replayed)."""
    if isinstance(step, SplitStep) and any(x is None for x in step.lengths):
        return replace(step, lengths=tuple(x or 1 for x in step.lengths))
    return step


def _dataflow_key(state, step) -> tuple:
    """What decides the ops after ``step`` (and whether the schedule accepts it): the
    dataflow steps so far and the placement and loops of the stage ``step`` rewrites (an
    rfactor's new axes are that stage's split loops; a cache_write refuses a split or
    inlined stage).  Loop steps of other stages change no op, so states that differ only
    in them (every tile-size mutation) share one te replay and hence the same ops."""
    st = state.stages[step.stage_id]
    loops = (st.compute_at, tuple([(it.name, it.extent, it.kind) for it in st.iters]))
    return state.dataflow_key + ((step.CODE, S.freeze(step.to_record()), loops),)


def apply_dataflow(state, step, insert_at: int, touched: set) -> None:
    """Refresh ``state`` after dataflow ``step`` inserted a stage at ``insert_at``.

    Only the ops and the loops of the ``touched`` stages (all fresh from their op's axes)
    are read back from the replayed schedule, and both depend on the dataflow key alone
    (which includes ``step``, hence ``touched``), so they are cached by that key
    (``ComputeDAG.dataflow_result``); the fresh StageStates are immutable and shared."""
    key = _dataflow_key(state, step)

    def read_back():
        steps = [_placeholder_lengths(s) for s in state.transform_steps + [step]]
        sch = state.dag.replay(steps)
        return (tuple(te_st.op for te_st in sch.stages),
                {i: stage_from_te(sch.stages[i]) for i in touched})

    try:
        ops, fresh_stages = state.dag.dataflow_result(key, read_back)
    except CompilerError as err:
        raise InvalidStepError(f"{step.CODE}: {err}") from None
    old = state.stages
    new = []
    for i, op in enumerate(ops):
        fresh = fresh_stages.get(i)
        if fresh is not None:
            if i > insert_at:   # the stage the new one came from keeps its placement
                fresh = S.replace(fresh, compute_at=old[i - 1].compute_at)
            new.append(fresh)
        else:
            prev = old[i if i < insert_at else i - 1]
            new.append(S.replace(prev, op=op))
    state.shift_stage_ids(insert_at)
    state.stages = new
    state.dataflow_key = key
    state.invalidate()


@dataclass(frozen=True)
class CacheReadStep:
    stage_id: int
    scope_name: str
    reader_stage_ids: tuple
    CODE = "CHR"

    def apply_to_state(self, state):
        st = state.stages[self.stage_id] if 0 <= self.stage_id < len(state.stages) else None
        if st is None:
            raise InvalidStepError(f"CHR: stage id {self.stage_id} out of range")
        for r in self.reader_stage_ids:
            if not isinstance(r, int) or not 0 <= r < len(state.stages) or \
                    not any(t.op is st.op for t in state.stages[r].op.input_tensors):
                raise InvalidStepError(f"CHR: stage {r} is not a reader of {st.name}")
        apply_dataflow(state, self, self.stage_id + 1, {self.stage_id + 1})
        return self.stage_id + 1

    def apply_to_schedule(self, sch):
        src = sch.stages[self.stage_id].op.output(0)
        readers = [sch.stages[r].op for r in self.reader_stage_ids]
        sch.cache_read(src, self.scope_name, readers)

    def to_record(self):
        return [self.CODE, self.stage_id, self.scope_name, list(self.reader_stage_ids)]

    def print_python(self, names):
        readers = ", ".join(names.tensor(r) for r in self.reader_stage_ids)
        new = names.new_tensor(self.stage_id + 1)
        return [f"{new} = s.cache_read({names.tensor(self.stage_id)}, \"{self.scope_name}\", "
                f"[{readers}])"] + names.axes_lines(self.stage_id + 1)


@dataclass(frozen=True)
class CacheWriteStep:
    stage_id: int
    scope_name: str
    CODE = "CHW"

    def apply_to_state(self, state):
        st = _stage(state, self.stage_id, self.CODE)
        if st.op.num_outputs != 1:
            raise InvalidStepError(f"CHW: multi-output stage {st.name} is not supported")
        if state.attached_to(self.stage_id):
            raise InvalidStepError(f"CHW: stages are attached to {st.name}; cache it first")
        apply_dataflow(state, self, self.stage_id, {self.stage_id, self.stage_id + 1})
        return self.stage_id

    def apply_to_schedule(self, sch):
        sch.cache_write(sch.stages[self.stage_id].op.output(0), self.scope_name)

    def to_record(self):
        return [self.CODE, self.stage_id, self.scope_name]

    def print_python(self, names):
        new = names.new_tensor(self.stage_id)
        return ([f"{new} = s.cache_write({names.tensor(self.stage_id)}, \"{self.scope_name}\")"]
                + names.axes_lines(self.stage_id) + names.axes_lines(self.stage_id + 1))


@dataclass(frozen=True)
class RfactorStep:
    stage_id: int
    iter_id: int
    factor_iter_id: int
    CODE = "RF"

    def apply_to_state(self, state):
        st = _stage(state, self.stage_id, self.CODE)
        it = _iter(st, self.iter_id, self.CODE)
        if it.kind != S.REDUCTION:
            raise InvalidStepError(f"RF: {st.name}.{it.name} is not a reduction iterator")
        if state.attached_to(self.stage_id):
            raise InvalidStepError(f"RF: stages are attached to {st.name}; rfactor it first")
        apply_dataflow(state, self, self.stage_id, {self.stage_id, self.stage_id + 1})
        return self.stage_id

    def apply_to_schedule(self, sch):
        iv = te_leaf(sch, self.stage_id, self.iter_id, self.CODE)
        sch.rfactor(sch.stages[self.stage_id].op.output(0), iv, self.factor_iter_id)

    def to_record(self):
        return [self.CODE, self.stage_id, self.iter_id, self.factor_iter_id]

    def print_python(self, names):
        new = names.new_tensor(self.stage_id)
        return ([f"{new} = s.rfactor({names.tensor(self.stage_id)}, "
                 f"{names.iter(self.stage_id, self.iter_id)}, {self.factor_iter_id})"]
                + names.axes_lines(self.stage_id) + names.axes_lines(self.stage_id + 1))
