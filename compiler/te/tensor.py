"""TE operations and tensors.

Invariants: an Operation is immutable and compared by identity; a Tensor is the pair
(op, value_index) and compares by that pair, so ``C.op.output(0) == C``.  Every extent is
an int32 ``IntImm`` when static, or an integer expression of shape variables
(``te.var``) when symbolic.  ``ComputeOp.body`` holds one expression per
output; for reductions each is a top-level ``Reduce`` sharing one combiner and axis list.

``A + B``, ``A + 1``, ``2.0 * A``, ``A / B``, ``-A`` on tensors build new tensors through
topi's broadcasts, as in TVM; topi (a higher floor) registers them with
``register_tensor_ops`` when imported (``import compiler`` imports it).  ``==`` stays the
identity-like comparison above, so tensors keep working as dict keys.
"""
from __future__ import annotations

import numbers
from typing import Any

from ..errors import TEError
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import op as _op
from ..tir.functor import Visitor

# operator name -> (lhs, rhs) -> Tensor ("negative": (x) -> Tensor); filled by compiler.topi.
_TENSOR_OPS: dict = {}


def register_tensor_ops(**impls) -> None:
    """Install the implementations of the arithmetic operators on tensors (topi's)."""
    unknown = set(impls) - {"add", "subtract", "multiply", "divide", "negative"}
    if unknown:
        raise TEError(f"register_tensor_ops: unknown operators {sorted(unknown)}")
    _TENSOR_OPS.update(impls)


def _tensor_op(name: str, *args):
    for a in args:
        if not isinstance(a, (Tensor, E.PrimExpr, numbers.Number)):
            return NotImplemented
    impl = _TENSOR_OPS.get(name)
    if impl is None:
        raise TEError(f"tensor operator {name} needs compiler.topi: import compiler.topi")
    args = tuple(a.item() if isinstance(a, numbers.Number) and hasattr(a, "item") else a
                 for a in args)   # numpy scalars as Python numbers
    return impl(*args)


class Tensor:
    """One output of an operation; index it as ``T[i, j]`` or ``T(i, j)``."""
    __slots__ = ("op", "value_index")
    op: Any
    value_index: int
    __array_ufunc__ = None     # ``np.float32(2) * A`` defers to Tensor.__rmul__

    def __add__(self, o): return _tensor_op("add", self, o)
    def __radd__(self, o): return _tensor_op("add", o, self)
    def __sub__(self, o): return _tensor_op("subtract", self, o)
    def __rsub__(self, o): return _tensor_op("subtract", o, self)
    def __mul__(self, o): return _tensor_op("multiply", self, o)
    def __rmul__(self, o): return _tensor_op("multiply", o, self)
    def __truediv__(self, o): return _tensor_op("divide", self, o)
    def __rtruediv__(self, o): return _tensor_op("divide", o, self)
    def __neg__(self): return _tensor_op("negative", self)

    def __init__(self, op, value_index: int = 0):
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "value_index", value_index)

    def __setattr__(self, k, v):
        raise AttributeError(f"Tensor is immutable (tried to set {k})")

    def __reduce__(self):
        return (Tensor, (self.op, self.value_index))

    def __eq__(self, other):
        return isinstance(other, Tensor) and self.op is other.op and \
            self.value_index == other.value_index

    def __hash__(self):
        return hash((id(self.op), self.value_index))

    @property
    def shape(self) -> tuple:
        return self.op.output_shape(self.value_index)

    @property
    def dtype(self) -> str:
        return self.op.output_dtype(self.value_index)

    @property
    def name(self) -> str:
        n = self.op.name
        return n if self.op.num_outputs == 1 else f"{n}.v{self.value_index}"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices):
        if not isinstance(indices, tuple):
            indices = (indices,)
        return self(*indices)

    def __call__(self, *indices):
        if len(indices) == 1 and isinstance(indices[0], (list, tuple)):
            indices = tuple(indices[0])
        if len(indices) != self.ndim:
            raise TEError(f"tensor {self.name} has {self.ndim} dimensions "
                          f"{_shape_str(self.shape)}, indexed with {len(indices)} indices")
        idx = []
        for x in indices:
            e = _op.convert(x)
            if not _dt.is_integral(e.dtype):
                raise TEError(f"tensor {self.name}: index {e} has dtype {e.dtype}, expected an "
                              "integer")
            idx.append(e)
        return E.ProducerLoad(self, tuple(idx))

    def __repr__(self):
        return f"Tensor(shape={_shape_str(self.shape)}, op.name={self.op.name}, dtype={self.dtype})"

    __str__ = __repr__


def _shape_str(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class Operation:
    """Base of PlaceholderOp and ComputeOp (identity semantics)."""
    __slots__ = ()
    name: str
    tag: str
    attrs: dict

    @property
    def num_outputs(self) -> int:
        return 1

    def output(self, i: int = 0) -> Tensor:
        if not 0 <= i < self.num_outputs:
            raise TEError(f"op {self.name} has {self.num_outputs} outputs, asked for output {i}")
        return Tensor(self, i)

    @property
    def input_tensors(self) -> list:
        return []

    def __repr__(self):
        return f"{type(self).__name__}({self.name})"


class PlaceholderOp(Operation):
    __slots__ = ("name", "shape", "dtype", "tag", "attrs")

    def __init__(self, name: str, shape: tuple, dtype: str):
        self.name, self.shape, self.dtype = name, shape, dtype
        self.tag, self.attrs = "", {}

    def output_shape(self, i):
        return self.shape

    def output_dtype(self, i):
        return self.dtype


class ComputeOp(Operation):
    __slots__ = ("name", "tag", "attrs", "axis", "reduce_axis", "body", "_inputs")

    def __init__(self, name, tag, attrs, axis, reduce_axis, body):
        self.name, self.tag, self.attrs = name, tag, dict(attrs or {})
        self.axis, self.reduce_axis, self.body = tuple(axis), tuple(reduce_axis), tuple(body)
        self._inputs = None

    @property
    def num_outputs(self) -> int:
        return len(self.body)

    def output_shape(self, i):
        return tuple(iv.dom.extent for iv in self.axis)

    def output_dtype(self, i):
        return self.body[i].dtype

    @property
    def input_tensors(self) -> list:
        if self._inputs is None:
            self._inputs = collect_inputs(self.body)
        return list(self._inputs)


def post_order_ops(roots, stop=None) -> list:
    """Every operation reachable from ``roots`` (ops or tensors), producers before their
    consumers, each once, in a deterministic order (inputs in first-use order).

    ``stop(op)`` true keeps ``op`` but does not walk into its inputs.  Iterative, so deep
    graphs (long elementwise chains) do not hit Python's recursion limit.
    """
    order, seen = [], set()
    for root in roots:
        root = root.op if isinstance(root, Tensor) else root
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, iter(() if stop is not None and stop(root) else root.input_tensors))]
        while stack:
            op, inputs = stack[-1]
            nxt = next(inputs, None)
            if nxt is None:
                stack.pop()
                order.append(op)
            elif id(nxt.op) not in seen:
                seen.add(id(nxt.op))
                child = nxt.op
                kids = () if stop is not None and stop(child) else child.input_tensors
                stack.append((child, iter(kids)))
    return order


def collect_inputs(body) -> tuple:
    """Tensors read by ``body`` in first-use order, without duplicates."""
    found: dict = {}

    class _Collect(Visitor):
        def visit_ProducerLoad(self, e):
            found.setdefault(e.producer, None)
            self.visit(e.indices)

    _Collect().visit(tuple(body))
    return tuple(found)

