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


class PyNames:
    def __init__(self, dag):
        self.dag = dag
        self.before = self.after = None
        self.steps = []

    def set(self, before, after, steps) -> None:
        self.before, self.after, self.steps = before, after, steps

    def tensor(self, sid: int, state=None) -> str:
        return clean_name((state or self.before).stages[sid].name)

    def new_tensor(self, sid: int) -> str:
        return self.tensor(sid, self.after)

    def _iter_name(self, state, sid, iid) -> str:
        st = state.stages[sid]
        return f"{clean_name(st.name)}_{clean_name(st.iters[iid].name)}"

    def iter(self, sid: int, iid: int) -> str:
        return self._iter_name(self.before, sid, iid)

    def after_split(self, sid, iid, n) -> list:
        return [self._iter_name(self.after, sid, iid + k) for k in range(n)]

    def after_fuse(self, sid, ids) -> str:
        return self._iter_name(self.after, sid, ids[0])

    def axes_lines(self, sid: int, state=None) -> list:
        state = state or self.after
        st = state.stages[sid]
        if st.is_placeholder or not st.iters:
            return []
        names = ", ".join(self._iter_name(state, sid, k) for k in range(len(st.iters)))
        t = clean_name(st.name)
        return [f"{names}, = (*s[{t}].op.axis, *s[{t}].op.reduce_axis)"]

    def start(self, state) -> list:
        lines = []
        for sid in range(len(state.stages)):
            lines += self.axes_lines(sid, state)
        return lines
