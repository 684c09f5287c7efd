"""Loop extents as the search sees them: static, or read from a tensor at run time.

Role: ``static_extent(iv)`` is the int the State, the sketch rules and the features use
for a loop.  A reduce axis whose extent reads a tensor (a sparse kernel's row length,
``indptr[r + 1] - indptr[r]``) has no static value: the search treats it as
``NOMINAL_EXTENT`` (1), as TVM's feature extraction treats a non-constant loop, while
the built kernel runs the real, data-dependent loop.

Invariants: an extent is an ``IntImm`` or reads a tensor; any other symbolic extent
(a ``te.var`` shape) is an ``AutoSchedError`` (the search needs static shapes).
"""
from __future__ import annotations

from compiler.tir import expr as E
from compiler.tir.analysis import producers_read

from .errors import AutoSchedError

NOMINAL_EXTENT = 1


def reads_tensor(expr) -> bool:
    """Whether ``expr`` loads from a tensor."""
    return bool(producers_read(expr))


def bound_tensors(ops) -> list:
    """``(op, tensor)`` for every tensor a loop extent of ``ops`` reads, each once."""
    out: list = []
    for op in ops:
        for iv in list(getattr(op, "axis", ())) + list(getattr(op, "reduce_axis", ())):
            if isinstance(iv.dom.extent, E.IntImm):
                continue
            for t in producers_read(iv.dom.extent):
                if not any(t is u for _, u in out):
                    out.append((op, t))
    return out


def is_data_dependent(iv) -> bool:
    """Whether the loop's extent is read from a tensor at run time."""
    ext = iv.dom.extent
    return not isinstance(ext, E.IntImm) and reads_tensor(ext)


def static_extent(iv) -> int:
    """The loop's extent for the search (see the module doc)."""
    ext = iv.dom.extent
    if isinstance(ext, E.IntImm):
        return ext.value
    if reads_tensor(ext):
        return NOMINAL_EXTENT
    raise AutoSchedError(f"ComputeDAG: loop {iv.var.name} has symbolic extent "
                         f"{ext}; the auto-scheduler needs static shapes (bind te.var sizes "
                         "to ints before tuning)")
