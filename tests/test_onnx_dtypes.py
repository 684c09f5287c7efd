"""Narrow number formats (``topi.narrow``, ``relay.narrow_cast``) against ONNX's reference.

The oracle is what ONNX's backend cases are computed with: ``ml_dtypes`` casts
(``astype``), ``onnx.numpy_helper.saturate_cast`` for saturating float8 casts and
``onnx.numpy_helper.to_float8e8m0``.  Decoding is checked on every code (all 65536 for
bfloat16), encoding on every float16 value, float32 values next to them (the rounding
boundaries) and random float32 bit patterns; first the numpy path, then the compiled
kernels bit for bit against it.  Then the graph edges (ml_dtypes arrays in and out),
from_onnx on narrow-typed graphs, and the errors.
"""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import compiler  # noqa: E402
from compiler import relay, te, tir  # noqa: E402
from compiler.contrib import graph_executor  # noqa: E402
from compiler.errors import TEError  # noqa: E402
from compiler.relay.backend.graph_executor import Layout  # noqa: E402
from compiler.topi.narrow import FORMATS, narrow_cast_ref  # noqa: E402

FLOAT8 = [n for n, f in FORMATS.items() if f.bits == 8 and f.kind != "e8m0"]


def _samples() -> np.ndarray:
    rng = np.random.default_rng(0)
    f16 = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    with np.errstate(invalid="ignore"):
        near = np.concatenate([np.nextafter(f16, np.float32(np.inf)),
                               np.nextafter(f16, np.float32(-np.inf))])
    bits = rng.integers(0, 2 ** 32, 200000, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([f16, near, bits.view(np.float32)])


SAMPLES = _samples()


def _wrapped_ints(x: np.ndarray, bits: int) -> np.ndarray:
    """float -> int4/int2 as ``narrow`` defines it where ONNX does not ("undefined if
    OOR"): truncate toward zero, keep the low ``bits`` bits; NaN and values outside
    int32 give 0 (what ml_dtypes 0.5-0.6 did on x86; 0.7 gives 0 for every value out of
    the format's range)."""
    with np.errstate(all="ignore"):
        t = np.trunc(x.astype(np.float64))
        ok = np.isfinite(t) & (t >= -2.0 ** 31) & (t < 2.0 ** 31)
        return (np.where(ok, t, 0).astype(np.int64) % (1 << bits)).astype(np.uint8)


def _reference(x: np.ndarray, fmt: str, saturate: bool) -> np.ndarray:
    """ONNX's Cast of ``x`` to ``fmt``, as storage bits.  A fixed-point format takes the
    ONNX reference's value (ml_dtypes' cast) wherever that is defined, in range, and
    ``_wrapped_ints`` elsewhere."""
    f = FORMATS[fmt]
    with np.errstate(all="ignore"):
        if f.kind == "e8m0":
            out = numpy_helper.to_float8e8m0(x, saturate, "up")
        elif saturate and fmt in FLOAT8:
            out = numpy_helper.saturate_cast(x, np.dtype(fmt))
        else:
            out = x.astype(np.dtype(fmt))
    out = out.view(f.storage)
    out = out % (1 << f.bits) if f.bits < 8 else out
    if not f.is_float:
        info = ml_dtypes.iinfo(np.dtype(fmt))
        with np.errstate(invalid="ignore"):
            t = np.trunc(x.astype(np.float64))
        defined = np.isfinite(t) & (t >= info.min) & (t <= info.max)
        out = np.where(defined, out, _wrapped_ints(x, f.bits))
    return out


def test_in_range_int_reference_is_ml_dtypes_own():
    """Where ONNX defines float -> int4/int2 (in range), the explicit rule and ml_dtypes
    agree, whichever ml_dtypes is installed; out of range they need not."""
    x = np.arange(-9.75, 16, 0.25, dtype=np.float32)
    for fmt in ("int4", "uint4", "int2", "uint2"):
        info = ml_dtypes.iinfo(np.dtype(fmt))
        t = np.trunc(x)
        inside = (t >= info.min) & (t <= info.max)
        with np.errstate(all="ignore"):
            theirs = x.astype(np.dtype(fmt)).view(np.uint8) % (1 << FORMATS[fmt].bits)
        assert np.array_equal(theirs[inside], _wrapped_ints(x, FORMATS[fmt].bits)[inside])
        assert inside.sum() == 4 * (info.max - info.min + 1) + 3, fmt   # (-1, 0) truncates to 0
    assert list(_wrapped_ints(np.array([-9, 8, 16, 3e9, np.nan], np.float32), 4)) == \
        [7, 8, 0, 0, 0]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bits, any NaN equal to any NaN."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f":
        nan = np.isnan(a) & np.isnan(b)
        return bool(np.all(nan | (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}"))))
    return bool(np.array_equal(a, b))


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("src", ["float32", "float16", "float64"])
def test_encode_matches_onnx_reference(fmt, src):
    with np.errstate(all="ignore"):
        x = SAMPLES.astype(src)
    for saturate in (True, False):
        got = narrow_cast_ref(x, src, fmt, saturate)
        assert np.array_equal(got, _reference(x, fmt, saturate)), (fmt, src, saturate)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_decode_every_code_matches_ml_dtypes(fmt):
    f = FORMATS[fmt]
    codes = np.arange(1 << f.bits).astype(f.storage)
    outs = ("float32", "float16", "int8", "int32") if not f.is_float else \
        ("float32", "float16", "float64")
    for dst in outs:
        with np.errstate(all="ignore"):
            want = codes.view(np.dtype(fmt)).astype(dst)
        assert _same(narrow_cast_ref(codes, fmt, dst), want), (fmt, dst)


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
def test_e8m0_round_modes_match_onnx(round_mode):
    for saturate in (True, False):
        want = numpy_helper.to_float8e8m0(SAMPLES, saturate, round_mode).view(np.uint8)
        got = narrow_cast_ref(SAMPLES, "float32", "float8_e8m0fnu", saturate, round_mode)
        assert np.array_equal(got, want)


def _run(x: np.ndarray, src: str, dst: str, saturate=True, round_mode="up") -> np.ndarray:
    v = relay.var("x", relay.TensorType(x.shape, str(x.dtype)))
    fn = relay.Function([v], relay.narrow_cast(v, src, dst, saturate, round_mode))
    with compiler.transform.PassContext(opt_level=3):
        lib = relay.build(relay.IRModule.from_expr(fn), "llvm")
    m = graph_executor.GraphModule(lib["default"](compiler.cpu(0)))
    m.set_input("x", x)
    m.run()
    return m.get_output(0).numpy()


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_kernels_match_numpy_path(fmt):
    f = FORMATS[fmt]
    x = SAMPLES[::4].copy()
    for saturate in ((True, False) if fmt in FLOAT8 else (True,)):
        for src in ("float32", "float16"):
            with np.errstate(all="ignore"):
                xs = x.astype(src)
            assert np.array_equal(_run(xs, src, fmt, saturate),
                                  narrow_cast_ref(xs, src, fmt, saturate)), (src, saturate)
    codes = np.arange(1 << f.bits).astype(f.storage)
    for dst in ("float32", "float16") if f.is_float else ("float32", "int8"):
        got = _run(codes, fmt, dst)
        assert _same(got, narrow_cast_ref(codes, fmt, dst)), dst


def test_kernel_e8m0_round_modes():
    x = SAMPLES[::8].copy()
    for mode in ("down", "nearest"):
        assert np.array_equal(_run(x, "float32", "float8_e8m0fnu", True, mode),
                              narrow_cast_ref(x, "float32", "float8_e8m0fnu", True, mode))


def test_tir_reinterpret():
    A = te.placeholder((64,), "float32", name="A")
    B = te.compute((64,), lambda i: tir.reinterpret("int32", A[i]) + 1, name="B")
    f = compiler.build(te.create_schedule(B.op), [A, B], "llvm")
    a = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    b = np.empty(64, np.int32)
    f(a, b)
    assert np.array_equal(b, a.view(np.int32) + 1)
    with pytest.raises(TEError, match="reinterpret: cannot read .* as int16"):
        tir.reinterpret("int16", A[0])


# ------------------------------------------------------------------ ONNX graphs
def _model(nodes, inputs, outputs):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _build(model):
    mod, params = relay.frontend.from_onnx(model)
    with compiler.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm", params=params)
    return graph_executor.GraphModule(lib["default"](compiler.cpu(0)))


def test_graph_edges_take_and_give_ml_dtypes_arrays():
    """float8 in, Transpose (moves the storage), Cast to bfloat16 out."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT8E4M3FN, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [3, 2])
    m = _build(_model([helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
                       helper.make_node("Cast", ["t"], ["y"], to=TensorProto.BFLOAT16)],
                      [x], [y]))
    data = np.array([[0.5, -3, 448], [1e-3, -0.0, 17]], np.float32).astype(ml_dtypes.float8_e4m3fn)
    m.set_input("x", data)
    m.run()
    out = m.get_output(0).numpy()
    assert out.dtype == np.dtype("bfloat16")
    assert np.array_equal(out.view(np.uint16), data.T.astype(ml_dtypes.bfloat16).view(np.uint16))
    assert m.get_input("x").numpy().dtype == data.dtype
    with pytest.raises(relay.RelayInputError, match="set_input 'x'.*dtype float32.*"
                       "float8_e4m3fn or uint8"):
        m.set_input("x", np.zeros((2, 3), np.float32))


def test_other_ops_compute_in_float32_and_round_back():
    """Add on bfloat16 computes in float32 and rounds once, as ml_dtypes does."""
    a = helper.make_tensor_value_info("a", TensorProto.BFLOAT16, [64])
    b = helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [64])
    y = helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [64])
    eq = helper.make_tensor_value_info("eq", TensorProto.BOOL, [64])
    m = _build(_model([helper.make_node("Add", ["a", "b"], ["y"]),
                       helper.make_node("Equal", ["a", "b"], ["eq"])], [a, b], [y, eq]))
    rng = np.random.default_rng(2)
    av, bv = (rng.standard_normal(64).astype(ml_dtypes.bfloat16) for _ in range(2))
    bv[:8] = av[:8]
    m.set_input("a", av)
    m.set_input("b", bv)
    m.run()
    assert np.array_equal(m.get_output(0).numpy().view(np.uint16), (av + bv).view(np.uint16))
    assert np.array_equal(m.get_output(1).numpy(), av == bv)


def test_narrow_initializer_is_folded():
    w = numpy_helper.from_array(np.array([1.5, -2, 0.25], np.float32).astype(ml_dtypes.float8_e5m2),
                                "w")
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    graph = helper.make_graph([helper.make_node("Cast", ["w"], ["y"], to=TensorProto.FLOAT)],
                              "g", [], [y], [w])
    mod, _ = relay.frontend.from_onnx(helper.make_model(graph))
    body = mod["main"].body
    assert isinstance(body, relay.Constant)
    assert np.array_equal(body.data, np.array([1.5, -2, 0.25], np.float32))


def test_layout_json_keeps_formats():
    lay = Layout(64, (((2,), "uint8", 0),), (("x", 0),), (), (0,), (), ((0, "int4"),))
    assert Layout.from_json(lay.to_json()) == lay


# ------------------------------------------------------------------ errors
def test_unsupported_cast_target_names_node_and_type():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.STRING, [2])
    model = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.STRING, name="c")],
                   [x], [y])
    with pytest.raises(relay.frontend.ONNXImportError,
                       match="Cast node 'c': Cast to element type 8 is not supported"):
        relay.frontend.from_onnx(model)


def test_narrow_cast_type_errors():
    v = relay.var("x", relay.TensorType((2,), "float32"))
    for call, msg in ((relay.narrow_cast(v, "float32", "float7"), "target 'float7' is neither"),
                      (relay.narrow_cast(v, "float32", "float16"), "neither 'float32' nor "
                       "'float16' is a narrow format"),
                      (relay.narrow_cast(v, "int4", "float32"), "data has dtype float32; int4 "
                       "values are held in uint8"),
                      (relay.narrow_cast(v, "float32", "float8_e8m0fnu", round_mode="odd"),
                       "round_mode 'odd'")):
        with pytest.raises(relay.RelayTypeError, match=msg):
            relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([v], call)))
