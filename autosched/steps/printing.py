"""Names for the schedule-API Python code printed from a State.

Tensor variables are the stage names with dots made underscores (``C.local`` ->
``C_local``); iterator variables are ``<stage>_<iter>`` so two stages' ``i`` never
clash.  ``PyNames`` is re-pointed at (state before, state after) for every step.
"""
from __future__ import annotations

import re


def clean_name(name: str) -> str:
    n = re.sub(r"[^0-9a-zA-Z_]", "_", name).strip("_") or "t"
    return "_" + n if n[0].isdigit() else n


def unique_names(names) -> list:
    """``clean_name`` of each name, with ``_1``, ``_2``... added on a clash."""
    out: list = []
    taken: set = set()
    for n in names:
        out.append(_fresh(clean_name(n), taken))
    return out


def _fresh(base: str, taken: set) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


class PyNames:
    """Variable names for the stages of the states before and after one step.

    Names are assigned once per stage and follow the stage when a dataflow step inserts
    another one, so two stages with the same op name (two rfactors of one reduction both
    make ``T.rf``) get distinct variables.
    """

    def __init__(self, dag, init_state):
        self.dag = dag
        self.before = self.after = init_state
        self.steps = []
        self.vars = unique_names(st.name for st in init_state.stages)
        self.vars_after = list(self.vars)

    def set(self, before, after, steps, new_stage=None) -> None:
        """Point at one step; ``new_stage`` is the id of a stage the step inserted."""
        self.before, self.after, self.steps = before, after, steps
        self.vars = self.vars_after
        self.vars_after = list(self.vars)
        if new_stage is not None:
            name = _fresh(clean_name(after.stages[new_stage].name), set(self.vars))
            self.vars_after.insert(new_stage, name)

    def tensor(self, sid: int) -> str:
        return self.vars[sid]

    def new_tensor(self, sid: int) -> str:
        return self.vars_after[sid]

    def _iter_name(self, var: str, state, sid, iid) -> str:
        return f"{var}_{clean_name(state.stages[sid].iters[iid].name)}"

    def iter(self, sid: int, iid: int) -> str:
        return self._iter_name(self.vars[sid], self.before, sid, iid)

    def after_split(self, sid, iid, n) -> list:
        return [self._iter_name(self.vars_after[sid], self.after, sid, iid + k)
                for k in range(n)]

    def after_fuse(self, sid, ids) -> str:
        return self._iter_name(self.vars_after[sid], self.after, sid, ids[0])

    def axes_lines(self, sid: int, state=None, vars_=None) -> list:
        state = state or self.after
        vars_ = vars_ or self.vars_after
        st = state.stages[sid]
        if st.is_placeholder or not st.iters:
            return []
        t = vars_[sid]
        names = ", ".join(self._iter_name(t, state, sid, k) for k in range(len(st.iters)))
        return [f"{names}, = (*s[{t}].op.axis, *s[{t}].op.reduce_axis)"]

    def start(self) -> list:
        lines = []
        for sid in range(len(self.before.stages)):
            lines += self.axes_lines(sid, self.before, self.vars)
        return lines
