"""``te.scan``: a recurrence over the first axis (TVM's ScanOp), for the CPU.

``scan(init, update, state_placeholder)``: output ``k`` has the shape of
``state_placeholder[k]``; rows ``[0, T0)`` come from ``init[k]`` (shape ``(T0, ...)``) and
row ``t >= T0`` from ``update[k]`` at ``t``, which may read the state at earlier rows.

Invariants: a ScanOp is immutable; its ``scan_axis`` is the time loop, running from 0
over ``T - T0`` steps (row ``t = scan_axis + T0``).  Init, update, state placeholder and
output ``k`` share one buffer at lowering.  The *body* (``body_ops``) is every op between
the state placeholders and the updates, i.e. each op the updates need that reads a
state: the schedule computes those inside the time loop.
"""
from __future__ import annotations

from ..errors import TEError
from ..tir import expr as E
from ..tir.op import const
from .tensor import Operation, PlaceholderOp, Tensor, post_order_ops

__all__ = ["ScanOp", "scan"]


class ScanOp(Operation):
    __slots__ = ("name", "tag", "attrs", "scan_axis", "init", "update", "state_placeholder",
                 "inputs")

    def __init__(self, name, tag, attrs, scan_axis, init, update, state_placeholder, inputs):
        self.name, self.tag, self.attrs = name, tag, dict(attrs or {})
        self.scan_axis = scan_axis
        self.init, self.update = tuple(init), tuple(update)
        self.state_placeholder = tuple(state_placeholder)
        self.inputs = tuple(inputs)

    @property
    def num_outputs(self) -> int:
        return len(self.update)

    def output_shape(self, i):
        return self.state_placeholder[i].shape

    def output_dtype(self, i):
        return self.state_placeholder[i].dtype

    @property
    def input_tensors(self) -> list:
        return list(self.init) + list(self.update)

    @property
    def init_rows(self) -> int:
        return int(self.init[0].shape[0].value)

    def body_ops(self) -> list:
        """Ops computed inside the time loop: those on a path state -> update."""
        states = {id(s.op) for s in self.state_placeholder}
        reads_state: dict = {}
        for op in post_order_ops(self.update):
            reads_state[id(op)] = id(op) in states or any(
                reads_state.get(id(t.op), False) for t in op.input_tensors)
        return [op for op in post_order_ops(self.update)
                if reads_state[id(op)] and id(op) not in states]


def _dims(t: Tensor) -> list:
    return [int(s.value) for s in t.shape]


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def scan(init, update, state_placeholder, inputs=None, name: str = "scan", tag: str = "",
         attrs=None):
    """The scan of ``update`` over the first axis, started from ``init`` (TVM's te.scan).

    Each argument is a Tensor or a list of them (one per state); returns a Tensor or a list.
    """
    init, update, states = _as_list(init), _as_list(update), _as_list(state_placeholder)
    if not (len(init) == len(update) == len(states)) or not init:
        raise TEError(f"scan {name}: init ({len(init)}), update ({len(update)}) and "
                      f"state_placeholder ({len(states)}) must have the same non-zero length")
    t0 = None
    for k, (i, u, s) in enumerate(zip(init, update, states)):
        for what, t in (("init", i), ("update", u), ("state_placeholder", s)):
            if not isinstance(t, Tensor) or not t.shape:
                raise TEError(f"scan {name}: {what}[{k}] {t!r} must be a tensor with a scan "
                              "(first) axis")
        if not isinstance(s.op, PlaceholderOp):
            raise TEError(f"scan {name}: state_placeholder[{k}] {s.name} must be a "
                          "te.placeholder")
        if _dims(u) != _dims(s) or _dims(i)[1:] != _dims(s)[1:]:
            raise TEError(f"scan {name}: state {k} has shape {_dims(s)}, update {_dims(u)}, "
                          f"init {_dims(i)}; update must match the state and init must "
                          "match it after the first axis")
        if len({i.dtype, u.dtype, s.dtype}) != 1:
            raise TEError(f"scan {name}: state {k} dtypes differ: init {i.dtype}, update "
                          f"{u.dtype}, state {s.dtype}")
        rows = _dims(i)[0]
        if t0 is not None and rows != t0:
            raise TEError(f"scan {name}: every init must have the same number of rows; got "
                          f"{t0} and {rows}")
        t0 = rows
    n = _dims(states[0])[0]
    if any(_dims(s)[0] != n for s in states) or not t0 or t0 > n:
        raise TEError(f"scan {name}: states need the same scan extent and 1 <= init rows "
                      f"({t0}) <= scan extent ({n})")
    axis = E.IterVar(E.Range(const(0), const(n - t0)), E.Var(f"{name}.idx"),
                     E.IterVar.Ordered)
    op = ScanOp(name, tag, attrs, axis, init, update, states, inputs or ())
    outs = [op.output(k) for k in range(op.num_outputs)]
    return outs[0] if len(outs) == 1 else outs
