"""ONNX's backend node test cases as a conformance suite for ``from_onnx`` + ``relay.build``.

``selected_cases()`` lists the cases whose every node is one of the operator types issue
10 lists (single-node cases and ONNX's own "_expanded" function bodies).  ``run_case``
binds the shape-like graph inputs (a Reshape's shape, Slice's starts, Pad's pads, ...)
as initializers of the model -- shapes are static here, as in any static-shape
compiler -- imports it, builds it, runs it on the case's data inputs and returns
``(got, expected, rtol, atol)``.

``undefined_elements`` names the expected values ONNX leaves undefined: a Cast (or
CastLike) from a floating-point type to a fixed-point one is "undefined if OOR" in the
operator's specification, and ONNX's expected outputs for such elements are whatever the
installed ``ml_dtypes`` gives (ml_dtypes 0.5-0.6 wrap out-of-range values into int4,
0.7 gives 0), so a case compares only its defined elements.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

import compiler
from compiler import relay
from compiler.contrib import graph_executor

LISTED = set("""Conv ConvTranspose Gemm MatMul Add Sub Mul Div Pow Sqrt Reciprocal Exp Log Erf
Tanh Sigmoid Relu LeakyRelu Clip HardSigmoid HardSwish Gelu Softmax LogSoftmax MaxPool
AveragePool GlobalAveragePool BatchNormalization LayerNormalization InstanceNormalization
Dropout Identity Flatten Reshape Transpose Squeeze Unsqueeze Concat Split Slice Gather Shape
Constant ConstantOfShape Expand Cast Where Equal Less Greater Not ReduceMean ReduceSum
ReduceMax ArgMax Pad Resize Min Max Range""".split())

# input positions that carry shapes, axes, bounds or indices rather than data
SHAPE_LIKE = {"Reshape": (1,), "Slice": (1, 2, 3, 4), "Pad": (1, 2, 3), "Expand": (1,),
              "Unsqueeze": (1,), "Squeeze": (1,), "ReduceMean": (1,), "ReduceSum": (1,),
              "ReduceMax": (1,), "Resize": (1, 2, 3), "Clip": (1, 2), "Range": (0, 1, 2),
              "Gather": (1,), "ConstantOfShape": (0,), "Split": (1,), "Dropout": (1, 2)}


@functools.lru_cache(maxsize=1)
def selected_cases() -> dict:
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    out = {}
    for c in cases:
        types = {n.op_type for n in c.model.graph.node}
        if types and types <= LISTED and all(n.domain in ("", "ai.onnx")
                                             for n in c.model.graph.node):
            out[c.name] = c
    return out


def primary_op(case) -> str:
    """The op type a case tests (the one in its name for expanded function bodies)."""
    nodes = case.model.graph.node
    if len(nodes) == 1:
        return nodes[0].op_type
    name = case.name[5:].lower().replace("_", "")
    for op in sorted(LISTED, key=len, reverse=True):
        if name.startswith(op.lower()):
            return op
    return nodes[-1].op_type


def _shape_sources(graph) -> set:
    """Names whose values decide a shape-like input: its producers' inputs, transitively
    (a Shape node's input only lends its shape, not its values)."""
    producer = {o: n for n in graph.node for o in n.output}
    todo = [n.input[k] for n in graph.node for k in SHAPE_LIKE.get(n.op_type, ())
            if k < len(n.input) and n.input[k]]
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        node = producer.get(name)
        if node is not None and node.op_type != "Shape":
            todo.extend(i for i in node.input if i)
    return seen


def _array(value):
    from onnx import numpy_helper
    return numpy_helper.to_array(value) if type(value).__name__ == "TensorProto" \
        else np.asarray(value)


def bind_shape_inputs(model, inputs: list):
    """The model with shape-like graph inputs turned into initializers; the data inputs."""
    import onnx
    from onnx import numpy_helper
    model = onnx.ModelProto.FromString(model.SerializeToString())
    g = model.graph
    shape_like = _shape_sources(g)
    inputs = [_array(v) for v in inputs]
    names = [i.name for i in g.input]
    keep, data = [], []
    for name, value in zip(names, inputs):
        if name in shape_like:
            g.initializer.append(numpy_helper.from_array(np.asarray(value), name))
        else:
            keep.append(name)
            data.append(value)
    kept = [i for i in g.input if i.name in keep]
    del g.input[:]
    g.input.extend(kept)
    return model, dict(zip(keep, data))


def _integer_range(dtype: np.dtype):
    """(lowest, highest) of a fixed-point dtype, numpy's or ml_dtypes' (int4, int2...);
    None for every other dtype."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return int(info.min), int(info.max)
    if dtype.kind == "V":
        import ml_dtypes
        try:
            info = ml_dtypes.iinfo(dtype)
        except (TypeError, ValueError):    # a float8 or bfloat16: not fixed point
            return None
        return int(info.min), int(info.max)
    return None


def _is_floating(dtype: np.dtype) -> bool:
    if dtype.kind == "f":
        return True
    if dtype.kind == "V":
        import ml_dtypes
        try:
            ml_dtypes.finfo(dtype)
        except (TypeError, ValueError):
            return False
        return True
    return False


def undefined_elements(case):
    """Per expected output, a boolean mask of the elements whose value ONNX leaves
    undefined (float to fixed point out of range, NaN and infinities included), or None
    when every element is defined.  Only Cast and CastLike cases have such elements."""
    if primary_op(case) not in ("Cast", "CastLike"):
        return None
    inputs, expected = case.data_sets[0]
    src = _array(inputs[0])
    masks = []
    for e in expected:
        e = _array(e)
        bounds = _integer_range(e.dtype)
        if bounds is None or not _is_floating(src.dtype) or src.shape != e.shape:
            masks.append(None)
            continue
        x = src.astype(np.float64)
        with np.errstate(invalid="ignore"):
            t = np.trunc(x)
            masks.append(~np.isfinite(x) | (t < bounds[0]) | (t > bounds[1]))
    return masks if any(m is not None and m.any() for m in masks) else None


def run_case(case):
    inputs, expected = case.data_sets[0]
    model, data = bind_shape_inputs(case.model, list(inputs))
    mod, params = relay.frontend.from_onnx(model)
    with compiler.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](compiler.cpu(0)))
    for k, v in data.items():
        m.set_input(k, v)
    m.run()
    got = [m.get_output(i).numpy() for i in range(m.get_num_outputs())]
    return got, [_array(e) for e in expected], case.rtol, case.atol
