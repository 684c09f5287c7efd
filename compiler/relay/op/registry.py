"""The operator registry (TVM's ``relay.op.get`` and op attributes).

Each registered operator has:
- ``attrs_type``: its frozen attrs dataclass (None when it takes none);
- ``rel(arg_types, attrs) -> Type``: the type relation (shape and dtype inference),
  raising RelayTypeError naming the op, the argument, the shapes and what was expected;
- ``pattern``: its fusion pattern kind (``topi.tag`` kinds: elemwise, broadcast,
  injective, comm_reduce, out_elemwise_fusable, opaque);
- ``compute(inputs, attrs, out_type) -> te.Tensor | list``: the TE definition via topi;
- ``ref(*numpy_arrays, attrs=...)``: the numpy reference the debug interpreter runs;
- ``tunable``: whether a fused group anchored by it is worth a tuning task.
How a group anchored by the op is scheduled is its strategy (``op.strategy``).

Invariant: ops are registered once at import of ``compiler.relay`` and never change.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import UnknownOpError

__all__ = ["Op", "register_op", "get", "list_op_names"]

_REGISTRY: dict = {}


@dataclass(frozen=True, eq=False)
class Op:
    name: str
    num_inputs: int                  # -1: variadic (one tuple argument)
    attrs_type: Any
    rel: Callable
    pattern: str
    compute: Callable
    ref: Callable
    tunable: bool = False
    doc: str = ""

    def __repr__(self):
        return f"Op({self.name})"

    def get_attr(self, key: str):
        """TVM-style attribute lookup: ``TOpPattern``, ``FTVMCompute`` (the strategy is
        ``op.strategy.op_strategy(op, attrs, arg_types, target)``)."""
        return {"TOpPattern": self.pattern, "FTVMCompute": self.compute}.get(key)


def register_op(name: str, num_inputs: int, rel, pattern: str, compute, ref,
                attrs_type=None, tunable: bool = False, doc: str = "") -> Op:
    if name in _REGISTRY:
        raise ValueError(f"operator {name!r} is registered twice")
    op = Op(name, num_inputs, attrs_type, rel, pattern, compute, ref, tunable, doc)
    _REGISTRY[name] = op
    return op


def get(name: str) -> Op:
    """The registered operator ``name`` (TVM's ``relay.op.get``)."""
    op = _REGISTRY.get(name)
    if op is None:
        close = [n for n in _REGISTRY if n.split(".")[-1] == str(name).split(".")[-1]]
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UnknownOpError(f"unknown relay operator {name!r}{hint}")
    return op


def list_op_names() -> list:
    return sorted(_REGISTRY)
