"""The TE user API: placeholder, compute, reduce_axis, reducers and math (TVM's names).

``compute`` names its axes after the lambda's parameters (``i0, i1, ...`` for ``*args``)
and checks that reductions appear only at the top level of the body, because lowering
splits a reduction into an init and an update statement.
"""
from __future__ import annotations

import inspect
import numbers

from ..errors import TEError
from ..tir import dtype as dt
from ..tir import expr as E
from ..tir import op as _op
from ..tir.functor import Visitor
from .tensor import ComputeOp, PlaceholderOp, Tensor


def _shape(shape, what: str) -> tuple:
    """Extents as PrimExprs: constants become int32 IntImms (as before symbolic shapes),
    any other integer expression (``te.var("n")``, ``n + 1``) is kept as given."""
    if isinstance(shape, (int, E.PrimExpr)):
        shape = (shape,)
    out = []
    for s in shape:
        s = _integral_float(s, shape, what)
        if isinstance(s, E.IntImm) or (isinstance(s, int) and not isinstance(s, bool)) or \
                (hasattr(s, "__index__") and not isinstance(s, E.PrimExpr)):
            v = s.value if isinstance(s, E.IntImm) else int(s)
            if v < 0:
                raise TEError(f"{what}: shape {tuple(shape)} has negative extent {v}")
            out.append(_op.const(v, "int32"))
        elif isinstance(s, E.PrimExpr) and dt.is_integral(s.dtype) and dt.lanes(s.dtype) == 1 \
                and s.dtype != "bool":
            out.append(s)
        else:
            raise TEError(f"{what}: shape {tuple(shape)} has extent {s!r}; expected an int "
                          "or a scalar integer expression such as te.var('n')")
    return tuple(out)


def _integral_float(s, shape, what: str):
    """A float extent with an integral value (``N / bn`` in Python 3) as an int, as TVM
    converts it; a fractional one is a TEError.  Anything else is returned unchanged."""
    if isinstance(s, E.FloatImm):
        s = s.value
    if not isinstance(s, numbers.Real) or isinstance(s, numbers.Integral):
        return s
    f = float(s)
    if not f.is_integer():
        raise TEError(f"{what}: shape {tuple(shape)} has non-integral extent {s}")
    return int(f)


def placeholder(shape, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor."""
    try:
        dt.parse(dtype)
    except ValueError as err:
        raise TEError(f"placeholder {name}: {err}") from None
    return PlaceholderOp(name, _shape(shape, f"placeholder {name}"), dtype).output(0)


def var(name: str = "tindex", dtype: str = "int32") -> E.Var:
    return E.Var(name, dtype)


def size_var(name: str = "size", dtype: str = "int32") -> E.Var:
    """A variable for a non-negative size (TVM's SizeVar); here a plain Var."""
    return E.Var(name, dtype)


def thread_axis(dom=None, tag: str = "", name: str = "") -> E.IterVar:
    """A GPU thread axis (``blockIdx.x``...) for ``Stage.bind``; ``dom`` may be the tag.

    Lowering shows the bound loop as a ``thread_extent`` attribute, as TVM does; only a
    GPU target could run it, so building it for a CPU target is an error.
    """
    if isinstance(dom, str):
        tag, dom = dom, None
    if not tag:
        raise TEError("thread_axis: needs a tag such as 'threadIdx.x' or 'blockIdx.x'")
    if dom is not None and not isinstance(dom, E.Range):
        lo, hi = (_op.convert(d) for d in dom)
        dom = E.Range(lo, _op.sub(hi, lo))
    return E.IterVar(dom, E.Var(name or tag), E.IterVar.ThreadIndex, tag)


def reduce_axis(dom, name: str = "rv") -> E.IterVar:
    """A reduction axis over ``dom`` = (min, max_exclusive) or a Range."""
    if isinstance(dom, E.Range):
        rng = dom
    else:
        if not isinstance(dom, (tuple, list)) or len(dom) != 2:
            raise TEError(f"reduce_axis {name}: dom {dom!r} must be (begin, end)")
        lo, hi = _op.convert(dom[0]), _op.convert(dom[1])
        rng = E.Range(lo, _op.sub(hi, lo))
    return E.IterVar(rng, E.Var(name), E.IterVar.CommReduce)


def _axis_names(fcompute, ndim: int, name: str) -> list:
    try:
        sig = inspect.signature(fcompute)
    except (TypeError, ValueError):
        return [f"i{k}" for k in range(ndim)]
    params = list(sig.parameters.values())
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        fixed = [p.name for p in params if p.kind != p.VAR_POSITIONAL]
        return fixed + [f"i{k}" for k in range(len(fixed), ndim)]
    if len(params) != ndim:
        raise TEError(f"compute {name}: lambda takes {len(params)} arguments, "
                      f"but the shape has {ndim} dimensions")
    return [p.name for p in params]


def compute(shape, fcompute, name: str = "compute", tag: str = "", attrs=None):
    """Define a tensor elementwise by ``fcompute(*indices)``; returns a Tensor or a list."""
    shape = _shape(shape, f"compute {name}")
    names = _axis_names(fcompute, len(shape), name)
    axis = [E.IterVar(E.Range(_op.const(0), s), E.Var(n), E.IterVar.DataPar)
            for n, s in zip(names, shape)]
    result = fcompute(*[iv.var for iv in axis])
    body = list(result) if isinstance(result, (list, tuple)) else [result]
    body = [_op.convert(b) for b in body]
    reduce_axes = _check_body(body, name)
    op = ComputeOp(name, tag, attrs, axis, reduce_axes, body)
    outs = [op.output(i) for i in range(op.num_outputs)]
    return outs[0] if len(outs) == 1 else outs


class _NestedReduce(Visitor):
    def visit_Reduce(self, e):
        raise TEError("a reduction must be the whole body of a compute, not part of "
                      f"an expression: {e}")


def _check_body(body, name) -> tuple:
    reduces = [b for b in body if isinstance(b, E.Reduce)]
    if reduces and len(reduces) != len(body):
        raise TEError(f"compute {name}: every output must be a reduction if one is")
    for b in body:
        if isinstance(b, E.Reduce):
            _NestedReduce().visit(b.source)
            _NestedReduce().visit(b.condition)
        else:
            _NestedReduce().visit(b)
    if not reduces:
        return ()
    first = reduces[0]
    for r in reduces[1:]:
        if r.combiner is not first.combiner or r.axis != first.axis:
            raise TEError(f"compute {name}: all outputs must share one reducer and axis list")
    return tuple(first.axis)


# ---------------------------------------------------------------------- reducers
class CommReducerFactory:
    """Callable made by ``comm_reducer``: ``r(expr, axis, where=None, init=None)``.

    Called with two expressions instead of an axis it combines them elementwise, so
    ``te.max(a, b)`` works as in TVM.
    """

    def __init__(self, fcombine, fidentity, name):
        self.fcombine, self.fidentity, self.name = fcombine, fidentity, name

    def __call__(self, expr, axis=None, where=None, init=None, *rest):
        if rest:
            raise TEError(f"{self.name}: too many arguments")
        if axis is None or not _is_axis(axis):
            if axis is None:
                raise TEError(f"{self.name}: needs an axis (or a second expression)")
            a, b = _op.match(expr, axis)
            return _op.convert(self.fcombine(a, b))
        axes = (axis,) if isinstance(axis, E.IterVar) else tuple(axis)
        for ax in axes:
            if ax.iter_type != E.IterVar.CommReduce:
                raise TEError(f"{self.name}: axis {ax.var.name} is not a reduce_axis")
        multi = isinstance(expr, (tuple, list))
        src = tuple(_op.convert(e) for e in (expr if multi else (expr,)))
        combiner = self._make(tuple(e.dtype for e in src))
        cond = _op.const(True) if where is None else _op.convert(where)
        inits = () if init is None else tuple(
            _op.convert(i, s.dtype) for i, s in zip(init if multi else (init,), src))
        out = tuple(E.Reduce(combiner, src, axes, cond, k, inits) for k in range(len(src)))
        return out if multi else out[0]

    def _make(self, dtypes) -> E.CommReducer:
        lhs = tuple(E.Var(f"x{k}" if len(dtypes) > 1 else "x", d) for k, d in enumerate(dtypes))
        rhs = tuple(E.Var(f"y{k}" if len(dtypes) > 1 else "y", d) for k, d in enumerate(dtypes))
        res: tuple
        ident: tuple
        if len(dtypes) == 1:
            res = (self.fcombine(lhs[0], rhs[0]),)
            ident = (self.fidentity(dtypes[0]),)
        else:
            res = tuple(self.fcombine(lhs, rhs))
            ident = tuple(self.fidentity(*dtypes))
        res = tuple(_op.convert(r, d) for r, d in zip(res, dtypes))
        ident = tuple(_op.convert(i, d) for i, d in zip(ident, dtypes))
        return E.CommReducer(lhs, rhs, res, ident, self.name)


def _is_axis(x) -> bool:
    if isinstance(x, E.IterVar):
        return True
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(a, E.IterVar) for a in x)


def comm_reducer(fcombine, fidentity, name: str = "reduce") -> CommReducerFactory:
    return CommReducerFactory(fcombine, fidentity, name)


sum = comm_reducer(lambda x, y: x + y, lambda t: _op.const(0, t), name="sum")  # noqa: A001
max = comm_reducer(_op.max_, _op.min_value, name="max")  # noqa: A001
min = comm_reducer(_op.min_, _op.max_value, name="min")  # noqa: A001
