"""``relay.frontend.from_onnx``: an ONNX model (opsets 13-21) as a relay module.

    mod, params = relay.frontend.from_onnx(onnx.load("model.onnx"),
                                           shape={"data": (1, 3, 224, 224)})

The graph is walked once in ONNX's (topological) node order.  Each value name maps to
a relay expression, typed as it is made (``type_new``), so converters read shapes.
Values known at import time -- initializers, Constant nodes, and everything computed
from them only, shape subgraphs included (Shape -> Gather -> Concat -> Reshape) -- are
evaluated at once with the operators' numpy references and become Constants; shape-like
inputs (a Reshape's shape, Slice's starts, Pad's pads, Resize's sizes, ...) must be such
values, since shapes are static.  With ``freeze_params=False`` initializers that stay
data inputs of the graph become parameters (``params``); with True (TVM's default) they
are constants of the module and ``params`` is empty.  Narrow element types (bfloat16,
float8, int4, ...) travel as their storage dtype (``onnx_narrow``); ``main`` lists the
narrow graph inputs and outputs in its "narrow_inputs"/"narrow_outputs" attributes,
which the graph executor uses to take and give numpy (ml_dtypes) arrays of them.

Invariants: nothing in the model is executed except its graph (no custom ops, no
functions, no external data); every failure is an ONNXImportError naming the node (or
input) and the value; unsupported operators are reported all together.  The ``onnx``
package (the extra ``[onnx]``) is imported only when ``from_onnx`` runs; without it
``from_onnx`` raises an ImportError naming the extra.
"""
from __future__ import annotations

import os

import numpy as np

from ...topi.narrow import storage_of
from ..analysis import free_vars
from ..evaluate import evaluate
from ..expr import Constant, Function, Tuple, Var
from ..module import IRModule
from ..transform.infer_type import type_new
from ..ty import TensorType
from . import onnx_narrow
from .common import OnnxContext, ONNXImportError, import_onnx
from .onnx_ops import CONVERTERS as _OPS
from .onnx_ops import NO_FOLD, ONNX_DTYPE_NAMES

__all__ = ["from_onnx", "ONNXImportError", "ONNX_DTYPES"]

# TensorProto element types of ordinary dtypes; narrow ones (bfloat16, float8, int4, ...)
# are onnx_narrow.ONNX_FORMATS, held in a storage dtype
ONNX_DTYPES = ONNX_DTYPE_NAMES
CONVERTERS = {**_OPS, **onnx_narrow.NARROW_CONVERTERS}


def _load(onnx, model):
    if isinstance(model, (str, os.PathLike)):
        what = repr(os.fspath(model))
        try:
            model = onnx.load(os.fspath(model))
        except Exception as e:     # protobuf's DecodeError and OS errors alike
            raise ONNXImportError(f"from_onnx: {what} is not a readable ONNX model "
                                  f"({type(e).__name__}: {e})") from None
    elif type(model).__name__ == "ModelProto":
        what = "the ModelProto"
    else:
        raise ONNXImportError(f"from_onnx: expected an onnx.ModelProto or a path, got "
                              f"{type(model).__name__}")
    # protobuf parses an empty file (and some cut ones) as an empty model without error
    if not model.graph.output:
        raise ONNXImportError(f"from_onnx: {what} has no graph outputs (an empty or "
                              "truncated model?)")
    return model


def from_onnx(model, shape=None, dtype="float32", opset=None, freeze_params=True):
    """``(IRModule, params)`` of an ONNX model (TVM's signature; ``dtype`` is the default
    for inputs whose element type the model leaves open)."""
    onnx = import_onnx()
    model = _load(onnx, model)
    graph = model.graph
    if opset is None:
        opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                    default=13)
    _check_supported(graph)
    ctx = OnnxContext(onnx, opset)
    _add_initializers(ctx, onnx, graph, freeze_params)
    inputs = _add_inputs(ctx, graph, dict(shape or {}), dtype)
    for node in graph.node:
        _convert(ctx, node)
    outs = []
    for o in graph.output:
        if o.name not in ctx.exprs:
            raise ONNXImportError(f"graph output {o.name!r} is not produced by any node")
        outs.append(ctx.exprs[o.name])
    body = outs[0] if len(outs) == 1 else Tuple(outs)
    free = set(free_vars(body))
    used = [v for v in ctx.param_vars if v in free]
    params = {v.name_hint: ctx.param_values[v.name_hint] for v in used}
    fn = Function(inputs + used, body)
    return IRModule.from_expr(_with_formats(ctx, fn, graph)), params


def _with_formats(ctx, fn: Function, graph) -> Function:
    """``fn`` with the graph executor's "narrow_inputs" / "narrow_outputs" attributes:
    (input name, format) and (output index, format) of the narrow-typed edges."""
    ins = tuple((i.name, ctx.formats[i.name]) for i in graph.input
                if i.name in ctx.formats and i.name not in ctx.values)
    outs = tuple((k, ctx.formats[o.name]) for k, o in enumerate(graph.output)
                 if o.name in ctx.formats)
    if ins:
        fn = fn.with_attr("narrow_inputs", ins)
    if outs:
        fn = fn.with_attr("narrow_outputs", outs)
    return fn


def _check_supported(graph) -> None:
    bad: dict = {}
    for k, node in enumerate(graph.node):
        if node.domain not in ("", "ai.onnx") or node.op_type not in CONVERTERS:
            label = node.op_type if node.domain in ("", "ai.onnx") else \
                f"{node.domain}.{node.op_type}"
            bad.setdefault(label, []).append(node.name or f"#{k}")
    if bad:
        listing = "; ".join(f"{op} (nodes {', '.join(names)})" for op, names in sorted(bad.items()))
        raise ONNXImportError(f"from_onnx: {len(bad)} unsupported operator type(s): {listing}")


def _add_initializers(ctx, onnx, graph, freeze: bool) -> None:
    for t in graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            raise ONNXImportError(f"initializer {t.name!r} keeps its data in an external "
                                  "file; load the model with its external data first")
        value = ctx.to_array(t, f"initializer {t.name!r}")
        ctx.values[t.name] = value
        if t.data_type in onnx_narrow.ONNX_FORMATS:
            ctx.formats[t.name] = onnx_narrow.ONNX_FORMATS[t.data_type]
        if freeze:
            ctx.exprs[t.name] = Constant(value)
        else:
            v = Var(t.name, TensorType(value.shape, str(value.dtype)))
            ctx.exprs[t.name] = v
            ctx.param_vars.append(v)
            ctx.param_values[t.name] = value


def _add_inputs(ctx, graph, shapes: dict, default_dtype: str) -> list:
    out = []
    known = {t.name for t in graph.initializer}
    for inp in graph.input:
        if inp.name in known:
            continue
        kind = inp.type.WhichOneof("value")
        if kind != "tensor_type":          # sequence, map, optional, sparse tensor
            raise ONNXImportError(f"graph input {inp.name!r} is of type {kind}; this "
                                  "compiler takes tensor inputs only")
        tt = inp.type.tensor_type
        elem = tt.elem_type
        dtype = ONNX_DTYPES.get(elem, None) if elem else default_dtype
        if elem in onnx_narrow.ONNX_FORMATS:
            ctx.formats[inp.name] = onnx_narrow.ONNX_FORMATS[elem]
            dtype = storage_of(ctx.formats[inp.name])
        if dtype is None:
            raise ONNXImportError(f"graph input {inp.name!r} has element type "
                                  f"{ctx.onnx.TensorProto.DataType.Name(elem)}, which this "
                                  "compiler does not have")
        # a symbolic dimension keeps its name ("N") for the error; an anonymous one is "?"
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                for d in tt.shape.dim]
        shape = _input_shape(inp.name, dims, shapes.get(inp.name), tt.HasField("shape"))
        v = Var(inp.name, TensorType(shape, dtype))
        ctx.exprs[inp.name] = v
        out.append(v)
    unknown = set(shapes) - {v.name_hint for v in out}
    if unknown:
        raise ONNXImportError(f"from_onnx: shape given for {sorted(unknown)}, which are not "
                              f"graph inputs; inputs are {[v.name_hint for v in out]}")
    return out


def _input_shape(name: str, dims: list, given, has_shape: bool) -> tuple:
    """The shape of graph input ``name``: ``given`` (checked against the model's ``dims``,
    where a str is a dimension the model leaves open) or the model's own."""
    model = tuple(dims)
    if given is not None:
        given = tuple(int(d) for d in given)
        if has_shape and (len(given) != len(dims) or any(
                isinstance(d, int) and d != g for d, g in zip(dims, given))):
            raise ONNXImportError(f"graph input {name!r}: shape {given} contradicts the "
                                  f"model's {model}")
        return given
    if not has_shape or any(isinstance(d, str) for d in dims):
        shown = str(model) if has_shape else "unknown"
        raise ONNXImportError(f"graph input {name!r} has shape {shown}; give it with "
                              f"shape={{{name!r}: (...)}}")
    return model


def _convert(ctx, node) -> None:
    ins = [None if not n else ctx.lookup(n, node) for n in node.input]
    attrs = ctx.attributes(node)
    static = all(n == "" or n in ctx.values for n in node.input) and \
        node.op_type not in NO_FOLD
    if static:
        ins = [None if not n else Constant(ctx.values[n]) for n in node.input]
    ctx.node = node
    try:
        out, formats = onnx_narrow.run(ctx, node, ins, attrs, CONVERTERS[node.op_type])
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        for k, name in enumerate(node.output):
            if not name:
                continue
            if k >= len(outs) or outs[k] is None:
                raise ctx.error(f"output {k} ({name!r}) is not supported")
            if k < len(formats) and formats[k]:
                ctx.formats[name] = formats[k]
            expr = _typed_output(outs[k], static)
            if isinstance(expr, Constant):
                ctx.values[name] = expr.data
            ctx.exprs[name] = expr
    except ONNXImportError:
        raise
    except Exception as e:          # a relay error from a converter or typing: name the node
        raise ONNXImportError(f"{ctx.where()}: {type(e).__name__}: {e}") from None


def _typed_output(expr, static: bool):
    """``expr`` typed; a Constant if its value is known now: computed from constants only,
    or without elements (a 0-sized tensor has no values to compute, and kernels over
    empty loops are not worth building)."""
    expr = type_new(expr)
    if isinstance(expr, Constant):
        return expr
    t = expr.checked_type
    if isinstance(t, TensorType) and 0 in tuple(int(d) for d in t.shape):
        return Constant(np.zeros(tuple(int(d) for d in t.shape), t.dtype))
    if static:
        value = np.asarray(evaluate(Function([], expr), []))
        return Constant(value.astype(t.dtype).reshape(t.shape))
    return expr
