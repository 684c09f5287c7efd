"""The search State: a lightweight mirror of a schedule, cheap to copy and compare.

Invariants:
- ``State.stages[i]`` corresponds to ``schedule.stages[i]`` of the TE schedule obtained by
  replaying ``transform_steps`` (stage ids are indices, as in Ansor), and
  ``stage.iters[j]`` to that stage's j-th leaf loop.
- Iterators and stages are immutable; a step replaces them.  ``copy()`` is shallow, so
  copying a state costs a few list copies.
- ``attach_map`` maps an attached stage id to (target stage id, target iter id) and is
  kept up to date when the target iter is split, fused or reordered and when a
  dataflow step inserts a stage.
- ``str(state)`` is the loop-nest printout in TVM's format; it is also the dedup key.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.te.tensor import Operation

# iterator kinds (TVM's IteratorKind)
SPATIAL, REDUCTION, MIXED, SPECIAL = 0, 1, 2, 3
# annotations (TVM's IteratorAnnotation numbering; written into records)
ANN_NONE, ANN_UNROLL, ANN_VECTORIZE, ANN_PARALLEL = 0, 1, 2, 3
ANN_NAMES = {ANN_NONE: "for", ANN_UNROLL: "unroll", ANN_VECTORIZE: "vectorize",
             ANN_PARALLEL: "parallel"}
# compute-at kinds (TVM's ComputeAtKind)
ROOT, INLINED, ITER = 0, 1, 2


def freeze(x):
    """A record's nested lists as nested tuples (hashable, and ``repr``-equal to what
    the record reader makes of a logged step)."""
    if not isinstance(x, (list, tuple)):
        return x
    # recurse only into nested lists: dataflow keys freeze a step record per replay
    return tuple([freeze(v) if isinstance(v, (list, tuple)) else v for v in x])


def replace(obj, **changes):
    """``dataclasses.replace`` for the frozen Iterator and StageState, without running
    ``__init__`` (the search makes ~10^5 of these per round; the generic one was a tenth
    of the search time)."""
    fields = obj.__dataclass_fields__
    for k in changes:
        if k not in fields:
            raise TypeError(f"{type(obj).__name__} has no field {k!r}")
    new = object.__new__(type(obj))
    d = new.__dict__
    d.update(obj.__dict__)
    d.update(changes)
    return new


@dataclass(frozen=True)
class Iterator:
    name: str
    extent: int | None       # None while a sketch's split length is still unknown
    kind: int = SPATIAL
    annotation: int = ANN_NONE

    def with_annotation(self, ann: int) -> Iterator:
        return replace(self, annotation=ann)


def make_iterator(name: str, extent: int | None, kind: int) -> Iterator:
    """``Iterator(name, extent, kind)`` without the frozen dataclass's ``__init__`` (one
    ``object.__setattr__`` per field): replays make ~10^5 iterators a search round."""
    it = object.__new__(Iterator)
    it.__dict__.update(name=name, extent=extent, kind=kind, annotation=ANN_NONE)
    return it


@dataclass(frozen=True)
class StageState:
    op: Any                   # the te Operation of this stage (after dataflow rewrites)
    iters: tuple
    compute_at: int = ROOT
    is_placeholder: bool = False
    auto_unroll_max_step: int = 0
    storage_offset: int = 0

    @property
    def name(self) -> str:
        return self.op.name


# struct_memo entries that depend on the values of auto-unroll pragmas (the printout
# shows them, and the structures derived from this one keep them); every other entry
# must not (``State.struct_memo``)
PRAGMA_DEPENDENT = frozenset({"print_template", "template_slots", "sample_tails",
                              "unrolled_structs", "replayed_structs", "retile_memo"})


class State:
    """Stages + attach map + the transform steps that produced them."""
    __slots__ = ("stages", "attach_map", "transform_steps", "dag", "concrete", "_str",
                 "dataflow_key", "_leaves", "_struct", "_fill")

    def __init__(self, dag, stages, attach_map=None, steps=None, concrete=True,
                 dataflow_key=()):
        self.dag = dag
        self.stages = list(stages)
        self.attach_map = dict(attach_map or {})
        self.transform_steps = list(steps or [])
        self.concrete = concrete
        self._str = None
        # the extents the print template is filled with, in its slots' order (None
        # until printed): a re-tiled child copies its parent's and changes a few
        self._fill = None
        # the loop model's mirrored leaves (features.nest.leaves_of): derived from the
        # steps, so cleared with the printout whenever a step changes the state
        self._leaves = None
        self._struct = None         # struct_memo(): shared by states of the same structure
        # what decides the ops of the stages (steps.compute.apply_dataflow): states with
        # equal keys share the te ops, so per-op analyses stay cached across states
        self.dataflow_key = dataflow_key

    def copy(self) -> State:
        return State(self.dag, self.stages, self.attach_map, self.transform_steps,
                     self.concrete, self.dataflow_key)

    # memos derived in this process: a pickled State (a build job, a user's file) leaves
    # them out -- the struct memo holds body analyses keyed by the ids of this process's
    # ops, which mean nothing once unpickled -- and the copy derives them again
    _MEMOS = ("_leaves", "_struct", "_fill")

    def __getstate__(self):
        return None, {k: getattr(self, k) for k in State.__slots__ if k not in State._MEMOS}

    def __setstate__(self, state) -> None:
        for k in State._MEMOS:
            setattr(self, k, None)
        for k, v in state[1].items():
            setattr(self, k, v)

    def invalidate(self) -> None:
        self._str = None
        self._fill = None
        self._leaves = None
        self._struct = None

    def struct_memo(self) -> dict:
        """A memo of what the state's structure alone decides -- its stages' ops,
        compute-at kinds, iterators' names, kinds and annotations, its attach map and
        the kinds of its steps, but not its extents -- filled by the analyses that
        depend on nothing else (print template, scope check, body infos, split
        candidates, the places a compute-at step may move to).  States of
        the same structure may share one (``search.retile`` gives a re-tiled state its
        parent's); a step makes a new one.  Only the entries named in
        ``PRAGMA_DEPENDENT`` may depend on the auto-unroll pragmas' values: a state
        whose one pragma value changed gets the others (``retile.reunrolled``)."""
        memo = self._struct
        if memo is None:
            memo = self._struct = {}
        return memo

    # ------------------------------------------------------------------ helpers
    def stage_id(self, stage_or_id) -> int:
        """Accept a stage id, a stage name, a te Tensor or an op."""
        if isinstance(stage_or_id, int):
            return stage_or_id
        # a tensor or an op names its stage by identity: two ops may share a name (two
        # ReLUs are both "T_relu"); only a plain name is looked up by name
        op = stage_or_id if isinstance(stage_or_id, Operation) else getattr(
            stage_or_id, "op", None)
        if op is not None:
            for i, st in enumerate(self.stages):
                if st.op is op:
                    return i
        name = getattr(stage_or_id, "name", stage_or_id)
        for i, st in enumerate(self.stages):
            if st.op.name == name:
                return i
        raise KeyError(f"no stage named {name!r} in this state")

    def set_stage(self, sid: int, stage: StageState) -> None:
        self.stages[sid] = stage
        self.invalidate()

    def attached_to(self, sid: int) -> list:
        """Stage ids attached to some iterator of stage ``sid``."""
        return [s for s, (t, _) in self.attach_map.items() if t == sid]

    def update_attach_iters(self, sid: int, old_to_new: dict) -> None:
        """Remap attach points on stage ``sid`` after its iterators changed."""
        for s, (t, it) in list(self.attach_map.items()):
            if t == sid and it in old_to_new:
                self.attach_map[s] = (t, old_to_new[it])

    def shift_stage_ids(self, at: int) -> None:
        """A stage was inserted at index ``at``: renumber attach entries."""
        fix = {}
        for s, (t, it) in self.attach_map.items():
            fix[s + 1 if s >= at else s] = (t + 1 if t >= at else t, it)
        self.attach_map = fix

    # ------------------------------------------------------------------ printing
    def __str__(self) -> str:
        if self._str is None:
            memo = self._struct
            tmpl = None if memo is None else memo.get("print_template")
            self._str = _print_state(self) if tmpl is None else _fill_template(self, tmpl)
        return self._str

    def print_template(self) -> tuple:
        """(format, (stage id, iterator id) of each ``%d`` in it): the printout of a
        concrete state with its iterators' extents left out, memoized.  A state with
        the same structure (stages, iterators' names, kinds and annotations, attach
        map: e.g. a tile-size mutation's child) shares it through the struct_memo, and
        its printout is then the format filled with its own extents, without a walk."""
        memo = self.struct_memo()
        tmpl = memo.get("print_template")
        if tmpl is None:
            slots: list = []
            text = _print_state(self, slots).replace("%", "%%").replace("\x00", "%d")
            tmpl = memo["print_template"] = (text, tuple(slots))
        return tmpl

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, State) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))


_CONSUMERS: dict = {}


def stage_consumers(stages) -> tuple:
    """Per stage id, the ids of the (non-placeholder) stages reading its op, ascending.

    Memoized on the stages' ops (they decide it alone): the search asks at every sampled
    state and the features at every featurized one.  An entry keeps its ops alive, so
    their ids cannot be reused while it exists."""
    key = tuple([id(st.op) for st in stages])
    hit = _CONSUMERS.get(key)
    if hit is None:
        where: dict = {}
        for sid, st in enumerate(stages):
            where.setdefault(id(st.op), []).append(sid)
        out: list = [[] for _ in stages]
        for cid, st in enumerate(stages):
            if st.is_placeholder:
                continue
            for opid in dict.fromkeys(id(t.op) for t in st.op.input_tensors):
                for sid in where.get(opid, ()):
                    out[sid].append(cid)
        if len(_CONSUMERS) >= 4096:
            _CONSUMERS.clear()
        hit = _CONSUMERS[key] = (tuple([st.op for st in stages]),
                                 tuple([tuple(c) for c in out]))
    return hit[1]

def _fill_template(state: State, tmpl: tuple) -> str:
    fmt, slots = tmpl
    fill = state._fill
    if fill is None:
        stages = state.stages
        fill = state._fill = tuple([stages[sid].iters[k].extent for sid, k in slots])
    return fmt % fill


def template_slots(state: State) -> dict:
    """(stage id, iterator id) -> its position among the print template's extents, in
    the struct_memo (``search.retile`` updates a child's extents by it)."""
    memo = state.struct_memo()
    where = memo.get("template_slots")
    if where is None:
        where = memo["template_slots"] = {
            slot: i for i, slot in enumerate(state.print_template()[1])}
    return where


def _print_state(state: State, slots: list | None = None) -> str:
    """The printout; with ``slots``, every extent is written as NUL and its (stage id,
    iterator id) appended to ``slots`` (``State.print_template``)."""
    lines: list = []
    ph = [st.name for st in state.stages if st.is_placeholder]
    if ph:
        lines.append("Placeholder: " + ", ".join(ph))
    children: dict = {}
    for sid, (t, it) in sorted(state.attach_map.items()):
        children.setdefault((t, it), []).append(sid)
    parents = {t for t, _ in children}
    for sid, st in enumerate(state.stages):
        if st.is_placeholder or st.compute_at != ROOT:
            continue
        _print_stage(state, sid, 0, children, parents, lines, slots)
    return "\n".join(lines) + "\n"


def _print_stage(state, sid, depth, children, parents, lines, slots) -> None:
    st = state.stages[sid]
    indent = depth
    has_children = sid in parents
    for k, it in enumerate(st.iters):
        ext = it.extent
        if slots is not None:
            slots.append((sid, k))
            ext = "\x00"
        lines.append(f"{'  ' * indent}{ANN_NAMES.get(it.annotation, 'for')} {it.name} "
                     f"(0,{'?' if ext is None else ext})")
        indent += 1
        if has_children:
            for c in children.get((sid, k), ()):
                if state.stages[c].compute_at == ITER:
                    _print_stage(state, c, indent, children, parents, lines, slots)
    pad = "  " * indent
    if st.auto_unroll_max_step:
        lines.append(pad + f"# auto_unroll_max_step={st.auto_unroll_max_step}")
    lines.append(pad + f"{st.name} = ...")
