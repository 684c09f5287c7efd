"""LLVM code generation from flattened TIR (compiler.codegen.llvm), checked against numpy.

Expressions, memory access, casts, intrinsics and control flow; parallel loops and
allocations are in test_codegen_llvm_parallel.py.  Every kernel is hand-built TIR,
compiled with tests/jit_helper.py (MCJIT) and run on numpy arrays.
"""
import math
import time

import numpy as np
import pytest
from codegen_tir import (
    LANES,
    TARGET,
    buf,
    build,
    elementwise,
    guarded_array,
    ld,
    loop,
    ramp,
    run,
    st,
)

from compiler.codegen.llvm import codegen_llvm
from compiler.errors import CodegenError
from compiler.tir import (
    EQ,
    GE,
    LT,
    And,
    Broadcast,
    BufferStore,
    Call,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    For,
    IfThenElse,
    Let,
    LetStmt,
    Max,
    Min,
    Mod,
    Not,
    Or,
    PrimFunc,
    Ramp,
    Select,
    Shuffle,
    Var,
    const,
    decl_buffer,
    seq,
)
from compiler.tir.expr import Add, Mul, Sub


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("lanes", [1, LANES])
def test_elementwise_add(dtype, lanes):
    n = 64
    f = elementwise("add", dtype, n, lambda a, b: a + b, lanes)
    a = (np.random.rand(n) * 100).astype(dtype)
    b = (np.random.rand(n) * 100).astype(dtype)
    o = np.zeros(n, dtype)
    run(f, a, b, o)
    np.testing.assert_array_equal(o, a + b)


def test_vector_broadcast_operand():
    n = 32
    x, o = buf("X", n), buf("O", n)
    s = buf("S", 1)
    i = Var("i", "int32")
    idx = ramp(i * 8, 8)
    body = st(o, idx, ld(x, idx) * Broadcast(ld(s, const(0)), 8) + Broadcast(const(1.5), 8))
    f = PrimFunc("bc", (x, s, o), loop(i, n // 8, body))
    xa, sa = np.random.rand(n).astype("float32"), np.array([3.0], "float32")
    oa = np.zeros(n, "float32")
    run(f, xa, sa, oa)
    np.testing.assert_allclose(oa, xa * 3 + 1.5, rtol=1e-6)


@pytest.mark.parametrize("lanes", [1, LANES])
def test_fmuladd_emitted_and_correct(lanes):
    n = 64
    forms = {"mul_add": lambda a, b, c: Add(Mul(a, b), c),
             "add_mul": lambda a, b, c: Add(c, Mul(a, b)),
             "mul_sub": lambda a, b, c: Sub(Mul(a, b), c),
             "sub_mul": lambda a, b, c: Sub(c, Mul(a, b))}
    refs = {"mul_add": lambda a, b, c: a * b + c, "add_mul": lambda a, b, c: a * b + c,
            "mul_sub": lambda a, b, c: a * b - c, "sub_mul": lambda a, b, c: c - a * b}
    for name, make in forms.items():
        f = elementwise(name, "float32", n, make, lanes, inputs=3)
        ir = codegen_llvm(f, TARGET)
        assert "@llvm.fmuladd." + ("f32" if lanes == 1 else f"v{lanes}f32") in ir
        arrs = [np.random.rand(n).astype("float32") for _ in range(3)] + [np.zeros(n, "float32")]
        build(f)(name, *arrs)
        np.testing.assert_allclose(arrs[3], refs[name](*arrs[:3]), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- integer division
@pytest.mark.parametrize("lanes", [1, 8])
def test_floordiv_floormod_negative(lanes):
    n = 64
    a = np.arange(-32, 32, dtype="int32") * 3 + 1
    d = np.array([(k % 7) - 3 or 5 for k in range(n)], dtype="int32")
    cases = {
        "fd8": (lambda x, y: FloorDiv(x, _c(8, x)), lambda x, y: x // 8),
        "fm8": (lambda x, y: FloorMod(x, _c(8, x)), lambda x, y: x % 8),
        "fd7": (lambda x, y: FloorDiv(x, _c(7, x)), lambda x, y: x // 7),
        "fm7": (lambda x, y: FloorMod(x, _c(7, x)), lambda x, y: x % 7),
        "fdm3": (lambda x, y: FloorDiv(x, _c(-3, x)), lambda x, y: x // -3),
        "fmm3": (lambda x, y: FloorMod(x, _c(-3, x)), lambda x, y: x % -3),
        "fdv": (lambda x, y: FloorDiv(x, y), lambda x, y: x // y),
        "fmv": (lambda x, y: FloorMod(x, y), lambda x, y: x % y),
        "div": (lambda x, y: Div(x, y), lambda x, y: np.trunc(x / y).astype("int32")),
        "mod": (lambda x, y: Mod(x, y), lambda x, y: np.fmod(x, y)),
    }
    for name, (make, ref) in cases.items():
        f = elementwise(name, "int32", n, make, lanes)
        o = np.zeros(n, "int32")
        run(f, a, d, o)
        np.testing.assert_array_equal(o, ref(a, d), err_msg=name)


def _c(v, like):
    c = const(v, "int32")
    return Broadcast(c, 8) if like.dtype != "int32" else c


def test_unsigned_division_and_compare():
    n = 16
    a = np.array([0, 1, 7, 200, 255, 128, 3, 9] * 2, dtype="uint8")
    b = np.array([1, 2, 3, 7, 16, 255, 200, 4] * 2, dtype="uint8")
    for name, make, ref in [("udiv", lambda x, y: Div(x, y), lambda x, y: x // y),
                            ("urem", lambda x, y: Mod(x, y), lambda x, y: x % y),
                            ("ufd", lambda x, y: FloorDiv(x, y), lambda x, y: x // y),
                            ("umax", lambda x, y: Max(x, y), np.maximum)]:
        f = elementwise(name, "uint8", n, make, 8)
        o = np.zeros(n, "uint8")
        run(f, a, b, o)
        np.testing.assert_array_equal(o, ref(a, b), err_msg=name)
    f = elementwise("ult", "uint8", n, lambda x, y: LT(x, y), 8, out_dtype="bool")
    o = np.zeros(n, "bool")
    run(f, a, b, o)
    np.testing.assert_array_equal(o, a < b)


# ---------------------------------------------------------------- casts
CAST_PAIRS = [("float32", "int32"), ("int32", "float32"), ("float32", "float64"),
              ("float64", "float32"), ("float32", "float16"), ("float16", "float32"),
              ("int32", "int8"), ("int8", "int32"), ("uint8", "int32"), ("int32", "int64"),
              ("int64", "int32"), ("uint32", "float64"), ("int32", "uint32"),
              ("bool", "float32"), ("bool", "int32"), ("float32", "bool"),
              ("int32", "bool"), ("bool", "int8"), ("float64", "int64")]


def _cast_input(src, n):
    if src == "bool":
        return np.arange(n) % 3 == 0
    if src.startswith("float"):
        v = np.linspace(-60, 60, n)
        v[::5] = 0
        return v.astype(src)
    info = np.iinfo(src)
    v = np.arange(n) * 37 - 300
    return np.clip(v, info.min, info.max).astype(src) if src != "int32" else \
        (np.arange(n) * 100003 - 1000000).astype("int32")


@pytest.mark.parametrize("lanes", [1, 8])
def test_casts(lanes):
    n = 32
    funcs = []
    for k, (src, dst) in enumerate(CAST_PAIRS):
        funcs.append(elementwise(f"cast{k}", src, n, lambda a, d=dst: Cast(
            d if lanes == 1 else f"{d}x{lanes}", a), lanes, out_dtype=dst, inputs=1))
    mod = build(funcs)
    for k, (src, dst) in enumerate(CAST_PAIRS):
        a = _cast_input(src, n)
        o = np.zeros(n, dst)
        mod(f"cast{k}", a, o)
        if src.startswith("float") and not dst.startswith("float") and dst != "bool":
            ref = np.trunc(a).astype(dst)
        else:
            ref = a.astype(dst)
        np.testing.assert_array_equal(o, ref, err_msg=f"{src}->{dst}")


def test_bool_logic_and_memory():
    n = 32
    a = np.random.rand(n) > 0.5
    b = np.random.rand(n) > 0.3
    for lanes in (1, 8):
        for name, make, ref in [("and", And, np.logical_and), ("or", Or, np.logical_or),
                                ("nota", lambda x, y: Not(x), lambda x, y: ~x),
                                ("eq", EQ, np.equal)]:
            f = elementwise(name, "bool", n, make, lanes)
            o = np.zeros(n, "bool")
            run(f, a, b, o)
            assert o.view("uint8").max() <= 1
            np.testing.assert_array_equal(o, ref(a, b), err_msg=f"{name} x{lanes}")


# ---------------------------------------------------------------- select / if_then_else
@pytest.mark.parametrize("lanes", [1, 8])
def test_select_min_max(lanes):
    n = 64
    a = np.random.randn(n).astype("float32")
    b = np.random.randn(n).astype("float32")
    for name, make, ref in [("sel", lambda x, y: Select(LT(x, y), x * y, x + y),
                             lambda x, y: np.where(x < y, x * y, x + y)),
                            ("min", Min, np.minimum), ("max", Max, np.maximum)]:
        f = elementwise(name, "float32", n, make, lanes)
        o = np.zeros(n, "float32")
        run(f, a, b, o)
        np.testing.assert_allclose(o, ref(a, b), rtol=1e-6, err_msg=name)


def _padded_kernel(name, n, padded, lanes, make_then):
    """O[j] = j < n ? make_then(A[j]) : -1 over a padded range, vector condition."""
    a, o = buf("A", n), buf("O", padded)
    i = Var("i", "int32")
    idx = ramp(i * lanes, lanes)
    cond = LT(idx, Broadcast(const(n), lanes))
    val = Call(f"float32x{lanes}", "if_then_else",
               (cond, make_then(ld(a, idx), a), Broadcast(const(-1.0), lanes)))
    return PrimFunc(name, (a, o), loop(i, padded // lanes, st(o, idx, val)))


PADDED_BRANCHES = {
    # kind: (then-branch from (vector load x, buffer A), expected from a, masked loads?)
    "bare_load": (lambda x, a: x, lambda v: v, True),
    "masked_expr": (lambda x, a: x * Broadcast(const(2.0), 8) + Broadcast(const(1.0), 8),
                    lambda v: v * 2 + 1, True),
    # a scalar load (A[2]) cannot be masked: each lane's branch runs on its own
    "lane_by_lane": (lambda x, a: x * Broadcast(ld(a, const(2)), 8) + Broadcast(const(1.0), 8),
                     lambda v: v * 3 + 1, False),
}


@pytest.mark.parametrize("kind", sorted(PADDED_BRANCHES))
def test_if_then_else_vector_padded_never_reads_out_of_bounds(kind):
    n, padded, lanes = 13, 24, 8
    make, ref, masked = PADDED_BRANCHES[kind]
    f = _padded_kernel("pad", n, padded, lanes, make)
    ir = codegen_llvm(f, TARGET)
    assert ("llvm.masked.load" in ir) == masked
    a = guarded_array(n, "float32")
    a[:] = np.arange(1, n + 1)
    o = np.zeros(padded, "float32")
    build(f)("pad", a, o)      # a segfault here means an out-of-bounds lane was read
    expect = np.full(padded, -1.0, "float32")
    expect[:n] = ref(a)
    np.testing.assert_array_equal(o, expect)


def test_if_then_else_masked_gather_in_else_branch():
    """The load sits in the else branch (mask = !cond) and is strided (masked gather)."""
    n, padded = 11, 16
    a, o = buf("A", 2 * n - 1), buf("O", padded)
    i = Var("i", "int32")
    idx = ramp(i * 8, 8)
    val = Call("float32x8", "if_then_else", (GE(idx, Broadcast(const(n), 8)),
                                            Broadcast(const(-1.0), 8), ld(a, ramp(i * 16, 8, 2))))
    f = PrimFunc("gat", (a, o), loop(i, padded // 8, st(o, idx, val)))
    assert "llvm.masked.gather" in codegen_llvm(f, TARGET)
    x = guarded_array(2 * n - 1, "float32")
    x[:] = np.arange(2 * n - 1)
    r = np.zeros(padded, "float32")
    build(f)("gat", x, r)
    np.testing.assert_array_equal(r, np.where(np.arange(padded) < n, 2 * np.arange(padded), -1))


def test_if_then_else_scalar_condition_guards_load():
    n, padded = 5, 8
    a, o = buf("A", n), buf("O", padded)
    i = Var("i", "int32")
    val = Call("float32", "if_then_else", (LT(i, const(n)), ld(a, i) * const(3.0), const(0.0)))
    f = PrimFunc("ite", (a, o), loop(i, padded, st(o, i, val)))
    x = guarded_array(n, "float32")
    x[:] = np.arange(n)
    out = np.full(padded, 9.0, "float32")
    build(f)("ite", x, out)
    np.testing.assert_array_equal(out, [0, 3, 6, 9, 12, 0, 0, 0])


# ---------------------------------------------------------------- intrinsics
@pytest.mark.parametrize("lanes", [1, 8])
def test_llvm_intrinsics(lanes):
    n = 32
    x = np.linspace(-3.5, 3.5, n).astype("float32")
    x[3], x[4] = 0.5, 2.5
    y = np.abs(np.random.randn(n)).astype("float32") + 0.5
    d = "float32" if lanes == 1 else f"float32x{lanes}"
    cases = [("sqrt", lambda a, b: Call(d, "sqrt", (b,)), lambda a, b: np.sqrt(b)),
             ("rsqrt", lambda a, b: Call(d, "rsqrt", (b,)), lambda a, b: 1 / np.sqrt(b)),
             ("fabs", lambda a, b: Call(d, "fabs", (a,)), lambda a, b: np.abs(a)),
             ("floor", lambda a, b: Call(d, "floor", (a,)), lambda a, b: np.floor(a)),
             ("ceil", lambda a, b: Call(d, "ceil", (a,)), lambda a, b: np.ceil(a)),
             ("trunc", lambda a, b: Call(d, "trunc", (a,)), lambda a, b: np.trunc(a)),
             ("round", lambda a, b: Call(d, "round", (a,)), lambda a, b: np.round(a)),
             ("fma", lambda a, b: Call(d, "fma", (a, b, a)), lambda a, b: a * b + a),
             ("pow", lambda a, b: Call(d, "pow", (b, a)), lambda a, b: np.power(b, a)),
             ("likely", lambda a, b: Call(d, "likely", (a,)), lambda a, b: a)]
    funcs = [elementwise("k_" + name, "float32", n, make, lanes) for name, make, _ in cases]
    mod = build(funcs)
    for name, _, ref in cases:
        o = np.zeros(n, "float32")
        mod("k_" + name, x, y, o)
        np.testing.assert_allclose(o, ref(x, y), rtol=2e-6, atol=1e-7, err_msg=name)


def _erf(v):
    return np.vectorize(math.erf)(v.astype("float64"))


@pytest.mark.parametrize("dtype,lanes", [("float32", 1), ("float32", 8), ("float64", 4)])
def test_math_functions(dtype, lanes):
    n = 64
    x = np.linspace(-6, 6, n).astype(dtype)
    pos = np.linspace(0.01, 50, n).astype(dtype)
    d = dtype if lanes == 1 else f"{dtype}x{lanes}"
    refs = {"exp": np.exp, "log": np.log, "tanh": np.tanh,
            "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "erf": _erf}
    funcs = [elementwise("k_" + name, dtype, n, lambda a, nm=name: Call(d, nm, (a,)), lanes,
                         inputs=1) for name in refs]
    mod = build(funcs)
    tol = 2e-6 if dtype == "float32" else 1e-12
    for name, ref in refs.items():
        inp = pos if name == "log" else x
        o = np.zeros(n, dtype)
        mod("k_" + name, inp, o)
        np.testing.assert_allclose(o, ref(inp), rtol=tol, atol=tol, err_msg=name)


# ---------------------------------------------------------------- vectors
def test_gather_scatter_broadcast_shuffle_let():
    n = 64
    a, o, o2 = buf("A", n), buf("O", n), buf("O2", n)
    i = Var("i", "int32")
    g_idx = ramp(i * 2, 8, stride=2)          # strided gather A[2i .. 2i+14 step 2]
    s_idx = ramp(i, 8, stride=4)              # scatter O2[i + 4k]
    v = Var("v", "float32x8")
    rev = Shuffle((v,), tuple(range(7, -1, -1)))
    body = seq(
        st(o, ramp(i * 8, 8), Let(v, ld(a, g_idx), rev + Broadcast(ld(a, i), 8))),
        st(o2, s_idx, ld(a, ramp(i * 8, 8))))
    f = PrimFunc("vec", (a, o, o2), loop(i, 4, body))
    x = np.arange(n, dtype="float32")
    r, r2 = np.zeros(n, "float32"), np.zeros(n, "float32")
    run(f, x, r, r2)
    exp, exp2 = np.zeros(n, "float32"), np.zeros(n, "float32")
    for k in range(4):
        exp[8 * k:8 * k + 8] = x[2 * k:2 * k + 16:2][::-1] + x[k]
        exp2[k:k + 32:4] = x[8 * k:8 * k + 8]
    np.testing.assert_array_equal(r, exp)
    np.testing.assert_array_equal(r2, exp2)


def test_shuffle_concat_two_vectors():
    a, o = buf("A", 16), buf("O", 16)
    lo, hi = ld(a, ramp(const(0), 8)), ld(a, ramp(const(8), 8))
    inter = Shuffle((lo, hi), tuple(k // 2 + 8 * (k % 2) for k in range(16)))
    f = PrimFunc("shuf", (a, o), st(o, ramp(const(0), 16), inter))
    x, r = np.arange(16, dtype="float32"), np.zeros(16, "float32")
    run(f, x, r)
    np.testing.assert_array_equal(r, np.stack([x[:8], x[8:]], 1).reshape(-1))


# ---------------------------------------------------------------- control flow
def test_letstmt_ifthenelse_int64_loop_and_runtime_extent():
    n = 20
    a, o, ns = buf("A", n), buf("O", n), buf("N", 1, "int32")
    i = Var("i", "int64")
    m = Var("m", "int32")
    body = IfThenElse(LT(i, const(10, "int64")), st(o, i, ld(a, i) * const(2.0)),
                      st(o, i, ld(a, i) - const(1.0)))
    inner = For(i, const(0, "int64"), Cast("int64", m), "serial", body)
    f = PrimFunc("ctl", (a, ns, o), LetStmt(m, ld(ns, const(0)), inner))
    x = np.arange(n, dtype="float32")
    r = np.zeros(n, "float32")
    run(f, x, np.array([15], "int32"), r)
    exp = np.where(np.arange(n) < 10, x * 2, x - 1)
    exp[15:] = 0
    np.testing.assert_array_equal(r, exp)


def test_unroll_metadata_and_repeat_wrapper():
    n = 16
    f = elementwise("unr", "float32", n, lambda a, b: a + b)
    f = PrimFunc("unr", f.params, For(f.body.loop_var, f.body.min, f.body.extent, "unrolled",
                                      f.body.body, (("llvm.loop.unroll.full", True),)))
    ir = codegen_llvm(f, TARGET)
    assert '!"llvm.loop.unroll.full"' in ir and "define void @unr__repeat(" in ir
    mod = build(f)
    a, b = np.ones(n, "float32"), np.arange(n, dtype="float32")
    o = np.zeros(n, "float32")
    mod.repeat("unr", [a, b, o], 5)
    np.testing.assert_array_equal(o, a + b)


# ---------------------------------------------------------------- allocation


def test_float16_arithmetic_and_math():
    n = 16
    f = elementwise("h", "float16", n, lambda x, y: Call("float16x8", "exp", (x,)) + y, 8)
    a = np.linspace(-2, 2, n).astype("float16")
    b = np.linspace(0, 1, n).astype("float16")
    o = np.zeros(n, "float16")
    run(f, a, b, o)
    np.testing.assert_allclose(o.astype("float32"), (np.exp(a.astype("float32")) + b),
                               rtol=2e-3)


def test_misc_vector_forms():
    """Variable-stride Ramp, scalar-condition vector Select/if_then_else, 1-lane Shuffle,
    vector LetStmt under a lane-by-lane if_then_else, float FloorDiv/Mod, bool gather."""
    n = 32
    a, o, s = buf("A", n), buf("O", n), buf("S", 1, "int32")
    bm, bo = buf("M", n, "bool"), buf("BO", n, "bool")
    i = Var("i", "int32")
    stride = ld(s, const(0))
    idx = ramp(i * 8, 8)
    v = Var("v", "float32x8")
    x = ld(a, idx)
    cond = LT(Ramp(i * 8, stride, 8), Broadcast(const(20), 8))       # stride 1 at runtime
    guarded = Call("float32x8", "if_then_else",
                   (cond, Div(v, x + Broadcast(const(1.0), 8)), ld(a, Ramp(i, const(0), 8))))
    val = Select(LT(i, const(3)), guarded, Shuffle((x,), (0,)) + FloorDiv(v, Broadcast(
        const(0.75), 8)) + Mod(v, Broadcast(const(0.75), 8)))
    body = seq(LetStmt(v, x * Broadcast(const(2.0), 8), st(o, idx, val)),
               st(bo, idx, ld(bm, ramp(const(n - 1) - i * 8, 8, stride=-1))))
    f = PrimFunc("misc", (a, s, bm, o, bo), loop(i, n // 8, body))
    xa = np.random.rand(n).astype("float32") + 0.1
    ma = np.random.rand(n) > 0.5
    out, bout = np.zeros(n, "float32"), np.zeros(n, "bool")
    run(f, xa, np.array([1], "int32"), ma, out, bout)
    vv = xa * 2
    j = np.arange(n)
    first = np.where(j < 20, vv / (xa + 1), xa[j // 8])
    other = xa[(j // 8) * 8] + np.floor(vv / 0.75) + np.fmod(vv, 0.75)
    np.testing.assert_allclose(out, np.where(j < 24, first, other), rtol=1e-5)
    np.testing.assert_array_equal(bout, ma[::-1])


def test_errors_name_the_problem():
    a = decl_buffer((4, 4), "float32", "A2")
    f = PrimFunc("bad", (a,), BufferStore(a, const(1.0), (const(0), const(0))))
    with pytest.raises(CodegenError, match="A2"):
        codegen_llvm(f, TARGET)
    b = buf("B", 4)
    u = Var("unbound", "int32")
    with pytest.raises(CodegenError, match="unbound"):
        codegen_llvm(PrimFunc("bad2", (b,), st(b, u, const(1.0))), TARGET)
    with pytest.raises(CodegenError, match="PrimFunc"):
        codegen_llvm(["not a func"], TARGET)
    ok = elementwise("twice", "float32", 8, lambda x, y: x + y)
    with pytest.raises(CodegenError, match="twice"):
        codegen_llvm([ok, ok], TARGET)
    with pytest.raises(CodegenError, match="reserved"):
        codegen_llvm(elementwise("exp", "float32", 8, lambda x, y: x + y), TARGET)


@pytest.mark.slow   # a timing assertion: fails under load; speed is benchmarked elsewhere
def test_codegen_speed_big_unrolled_kernel():
    n = 2048
    a, b, o = buf("A", n * 8), buf("B", n * 8), buf("O", n * 8)
    stmts = []
    for k in range(n // 4):
        idx = ramp(const(k * 8), 8)
        stmts.append(st(o, idx, ld(a, idx) * ld(b, idx) + ld(o, idx)))
    f = PrimFunc("big", (a, b, o), seq(*stmts))
    codegen_llvm(f, TARGET)
    t0 = time.perf_counter()
    ir = codegen_llvm(f, TARGET)
    dt_ms = (time.perf_counter() - t0) * 1e3
    print(f"\nbig kernel: {len(stmts)} vector stores, {ir.count(chr(10))} IR lines, "
          f"{len(ir) / 1024:.0f} KiB, codegen {dt_ms:.1f} ms")
    assert dt_ms < 200


def test_deep_expression_chain():
    """A 1500-term left-deep sum (deeper than Python's default recursion limit)."""
    n = 1500
    a, o = buf("A", n), buf("O", 1)
    e = ld(a, const(0))
    for k in range(1, n):
        e = Add(e, Mul(ld(a, const(k)), const(0.5)))
    f = PrimFunc("deep", (a, o), st(o, const(0), e))
    ir = codegen_llvm(f, TARGET)
    x = np.random.rand(n).astype("float32")
    r = np.zeros(1, "float32")
    jit_module = build(f)
    jit_module("deep", x, r)
    np.testing.assert_allclose(r[0], x[0] + 0.5 * x[1:].astype("float64").sum(), rtol=1e-4)
    assert ir.count("llvm.fmuladd") > n // 2
