"""te.extern, packed functions (register_func / get_global_func / tir.call_packed),
contrib.cblas, tir.call_pure_extern / call_extern, tir.ir_builder and te.scan on the CPU.

Each numeric test compares against numpy; the error tests check the exception type and
message and that the process keeps working afterwards.  ``extern_*.txt`` in
``tests/golden`` hold printed lowered IR (regenerate with ``--update-golden``).
"""
import pathlib

import numpy as np
import pytest

import compiler as tvm
from compiler import te, tir
from compiler.contrib import cblas
from compiler.errors import LoweringError, PackedFuncError, ScheduleError

GOLDEN = pathlib.Path(__file__).parent / "golden"


@pytest.fixture
def packed_name(request):
    """A fresh global function name, unregistered after the test."""
    name = f"test.extern.{request.node.name}"
    yield name
    tvm.runtime.packed.remove_global_func(name)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).random(shape, dtype=np.float32)


# ---------------------------------------------------------------- extern + cblas
def test_cblas_matmul_fused_with_bias_compute():
    n, l, m = 64, 32, 48
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    bias = te.var("bias", dtype="float32")
    C = cblas.matmul(A, B)
    D = te.compute(C.shape, lambda i, j: C[i, j] + bias, name="D")
    s = te.create_schedule(D.op)
    s[D].vectorize(s[D].split(D.op.axis[1], factor=8)[1])
    f = tvm.build(s, [A, B, D, bias], "llvm")
    a, b = _rand(n, l), _rand(l, m, seed=1)
    d = tvm.nd.array(np.zeros((n, m), "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), d, 10.0)
    tvm.testing.assert_allclose(d.numpy(), a @ b + 10, rtol=1e-5)


def test_cblas_transposed_and_batched():
    A = te.placeholder((16, 8), name="A")
    B = te.placeholder((12, 16), name="B")
    C = cblas.matmul(A, B, transa=True, transb=True)
    assert [int(x) for x in C.shape] == [8, 12]
    f = tvm.build(te.create_schedule(C.op), [A, B, C])
    a, b, c = _rand(16, 8), _rand(12, 16, seed=1), np.zeros((8, 12), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a.T @ b.T, rtol=1e-5)
    X = te.placeholder((3, 4, 5), name="X")
    Y = te.placeholder((3, 5, 6), name="Y")
    Z = cblas.batch_matmul(X, Y)
    f = tvm.build(te.create_schedule(Z.op), [X, Y, Z])
    x, y, z = _rand(3, 4, 5), _rand(3, 5, 6, seed=2), np.zeros((3, 4, 6), "float32")
    f(x, y, z)
    np.testing.assert_allclose(z, x @ y, rtol=1e-5)


def test_cblas_is_registered_on_import():
    pf = tvm.get_global_func("tvm.contrib.cblas.matmul", allow_missing=True)
    assert pf is not None and pf.name == "tvm.contrib.cblas.matmul"


# ---------------------------------------------------------------- packed functions
def test_extern_calls_registered_python_function(packed_name):
    seen = {}

    @tvm.register_func(packed_name)
    def addk(x, y, k, scale, flag, label):
        seen.update(types=(type(x), type(y)), shape=x.shape, k=k, scale=scale, flag=flag,
                    label=label)
        tvm.nd.array(x.numpy() * scale + k).copyto(y)

    n = 37
    A = te.placeholder((n,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tir.call_packed(
        packed_name, ins[0], outs[0], 3, 0.5, True, "hello"), name="B")
    C = te.compute((n,), lambda i: B[i] * 2.0, name="C")
    f = tvm.build(te.create_schedule(C.op), [A, C])
    a, c = _rand(n), np.zeros(n, "float32")
    f(a, c)
    np.testing.assert_allclose(c, (a * 0.5 + 3) * 2, rtol=1e-6)
    assert seen["types"] == (tvm.nd.NDArray, tvm.nd.NDArray) and seen["shape"] == (n,)
    assert (seen["k"], seen["scale"], seen["flag"], seen["label"]) == (3, 0.5, True, "hello")
    assert type(seen["k"]) is int and type(seen["flag"]) is bool


def test_scalar_var_reaches_packed_function(packed_name):
    got = []
    tvm.register_func(packed_name, lambda x, v, n: got.append((v, n)))
    A = te.placeholder((4,), name="A")
    v, k = te.var("v", "float32"), te.var("k", "int32")
    B = te.extern((4,), [A], lambda ins, outs: tir.call_packed(packed_name, ins[0], v, k),
                  name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B, v, k])
    f(_rand(4), np.zeros(4, "float32"), 1.25, 7)
    assert got == [(1.25, 7)]
    with pytest.raises(TypeError, match="param 'k'"):
        f(_rand(4), np.zeros(4, "float32"), 1.25, 7.5)


def test_ir_builder_extern_and_vload_vstore():
    n = 20
    A = te.placeholder((n,), name="A")

    def body(ins, outs):
        ib = tir.ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, n, name="i") as i:
            with ib.if_scope(a[i] > 0.5):
                b[i] = a[i] + 1.0
            with ib.else_scope():
                b[i] = a[i] * 2.0
        return ib.get()

    B = te.extern((n,), [A], body, name="B")
    C = te.extern((1,), [B], lambda ins, outs: outs[0].vstore(0, ins[0].vload(3)), name="C")
    f = tvm.build(te.create_schedule(C.op), [A, B, C])
    a, b, c = _rand(n), np.zeros(n, "float32"), np.zeros(1, "float32")
    f(a, b, c)
    np.testing.assert_allclose(b, np.where(a > 0.5, a + 1, a * 2), rtol=1e-6)
    assert c[0] == b[3]


def test_packed_function_exception_reaches_call_site(packed_name):
    @tvm.register_func(packed_name)
    def boom(x, k):
        raise KeyError(f"bad value {k}")

    A = te.placeholder((8,), name="A")
    B = te.extern((8,), [A], lambda ins, outs: tir.call_packed(packed_name, ins[0], 42),
                  name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B], name="uses_boom")
    with pytest.raises(KeyError, match="bad value 42") as info:
        f(_rand(8), np.zeros(8, "float32"))
    assert any(packed_name in n and "uses_boom" in n for n in info.value.__notes__)
    # the process survives and the same kernel works once the callee is fixed
    tvm.register_func(packed_name, lambda x, k: None, override=True)
    f(_rand(8), np.zeros(8, "float32"))


def test_unregistered_packed_function_is_an_error_at_call_time(packed_name):
    A = te.placeholder((2,), name="A")
    B = te.extern((2,), [A], lambda ins, outs: tir.call_packed(packed_name, outs[0]), name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B])
    with pytest.raises(PackedFuncError, match=f"no global function '{packed_name}'"):
        f(_rand(2), np.zeros(2, "float32"))


def test_registry_errors(packed_name):
    with pytest.raises(PackedFuncError, match="no global function 'test.extern.missing'"):
        tvm.get_global_func("test.extern.missing")
    with pytest.raises(ValueError):          # TVM raises ValueError too
        tvm.get_global_func("test.extern.missing")
    assert tvm.get_global_func("test.extern.missing", allow_missing=True) is None
    tvm.register_func(packed_name, lambda: 1)
    with pytest.raises(PackedFuncError, match="already registered"):
        tvm.register_func(packed_name, lambda: 2)
    tvm.register_func(packed_name, lambda: 3, override=True)
    assert tvm.get_global_func(packed_name)() == 3


def test_compute_inline_of_extern_stage_is_refused():
    A = te.placeholder((8,), name="A")
    B = te.extern((8,), [A], lambda ins, outs: outs[0].vstore(0, ins[0].vload(0)), name="B")
    C = te.compute((8,), lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="compute_inline: stage B is an extern op"):
        s[B].compute_inline()
    with pytest.raises(ScheduleError, match="stage B is an extern op"):
        s[B].compute_at(s[C], C.op.axis[0])


def test_extern_input_must_not_be_inlined():
    A = te.placeholder((8,), name="A")
    P = te.compute((8,), lambda i: A[i] * 2.0, name="P")
    B = te.extern((8,), [P], lambda ins, outs: outs[0].vstore(0, ins[0].vload(0)), name="B")
    s = te.create_schedule(B.op)
    s[P].compute_inline()
    with pytest.raises(LoweringError, match="extern stage B reads tensor P"):
        tvm.lower(s, [A, B])


def test_extern_lowered_ir_golden(request):
    A = te.placeholder((16, 8), name="A")
    B = te.placeholder((8, 4), name="B")
    bias = te.var("bias", "float32")
    C = cblas.matmul(A, B)
    D = te.compute(C.shape, lambda i, j: C[i, j] + bias, name="D")
    s = te.create_schedule(D.op)
    text = str(tvm.lower(s, [A, B, D, bias], name="extern_matmul_bias")) + "\n"
    path = GOLDEN / "extern_matmul_bias.txt"
    if request.config.getoption("--update-golden"):
        path.write_text(text)
    assert text == path.read_text()


# ---------------------------------------------------------------- extern C calls
def test_call_pure_extern_math_matches_numpy():
    n = 19
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: tir.call_pure_extern("float32", "expf", A[i])
                   + tir.call_extern("float32", "sqrtf", A[i]), name="B")
    C = te.compute((n,), lambda i: tir.call_pure_extern("float64", "atan2",
                                                        A[i].astype("float64"), 2.0), name="C")
    s = te.create_schedule([B.op, C.op])
    s[B].vectorize(s[B].split(B.op.axis[0], factor=4)[1])   # lane by lane
    f = tvm.build(s, [A, B, C])
    a, b, c = _rand(n), np.zeros(n, "float32"), np.zeros(n, "float64")
    f(a, b, c)
    np.testing.assert_allclose(b, np.exp(a) + np.sqrt(a), rtol=1e-6)
    np.testing.assert_allclose(c, np.arctan2(a.astype("float64"), 2.0), rtol=1e-12)
    assert 'T.call_pure_extern("float32", \'expf\'' in str(tvm.lower(s, [A, B, C]))


def test_call_extern_unknown_symbol_is_a_build_error():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: tir.call_extern("float32", "no_such_fn_xyz", A[i]),
                   name="B")
    with pytest.raises(tvm.BuildError, match="no_such_fn_xyz"):
        tvm.build(te.create_schedule(B.op), [A, B])


# ---------------------------------------------------------------- scan
def test_scan_cumulative_sum():
    m = 12
    X = te.placeholder((m,), name="X")
    state = te.placeholder((m,), name="state")
    init = te.compute((1,), lambda t: X[0], name="init")
    update = te.compute((m,), lambda t: state[t - 1] + X[t], name="update")
    res = te.scan(init, update, state, inputs=[X], name="cumsum")
    f = tvm.build(te.create_schedule(res.op), [X, res])
    x, out = _rand(m), np.zeros(m, "float32")
    f(x, out)
    np.testing.assert_allclose(out, np.cumsum(x), rtol=1e-5)


def test_scan_2d_with_scheduled_multi_stage_body():
    m, n = 10, 24
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    s1 = te.compute((m, n), lambda t, i: state[t - 1, i] * 1.0, name="s1")
    s2 = te.compute((m, n), lambda t, i: s1[t, i] + X[t, i], name="s2")
    res = te.scan(init, s2, state, inputs=[X])
    Y = te.compute((m, n), lambda t, i: res[t, i] + 1.0, name="Y")
    s = te.create_schedule(Y.op)
    xo, xi = s[s2].split(s2.op.axis[1], factor=8)
    s[s2].vectorize(xi)
    s[s1].compute_at(s[s2], xo)
    f = tvm.build(s, [X, Y])
    x, y = _rand(m, n), np.zeros((m, n), "float32")
    f(x, y)
    np.testing.assert_allclose(y, np.cumsum(x, axis=0) + 1, rtol=1e-5)


def test_scan_multiple_states_and_init_rows():
    m, n, l = 8, 6, 3
    X = te.placeholder((m, n), name="X")
    st1, st2 = te.placeholder((m, n), name="st1"), te.placeholder((m, l), name="st2")
    init1 = te.compute((2, n), lambda t, i: X[t, i], name="init1")
    init2 = te.compute((2, l), lambda t, i: tir.const(0.0), name="init2")
    up1 = te.compute((m, n), lambda t, i: st1[t - 1, i] + st1[t - 2, i], name="up1")
    up2 = te.compute((m, l), lambda t, i: st2[t - 1, i] + st1[t - 1, 0], name="up2")
    r1, r2 = te.scan([init1, init2], [up1, up2], [st1, st2])
    f = tvm.build(te.create_schedule(r1.op), [X, r1, r2])
    x = _rand(m, n)
    o1, o2 = np.zeros((m, n), "float32"), np.zeros((m, l), "float32")
    f(x, o1, o2)
    e1, e2 = np.zeros_like(o1), np.zeros_like(o2)
    e1[:2] = x[:2]
    for t in range(2, m):
        e1[t] = e1[t - 1] + e1[t - 2]
        e2[t] = e2[t - 1] + e1[t - 1, 0]
    np.testing.assert_allclose(o1, e1, rtol=1e-5)
    np.testing.assert_allclose(o2, e2, rtol=1e-5)


def test_scan_errors():
    X = te.placeholder((4, 3), name="X")
    state = te.placeholder((4, 3), name="state")
    init = te.compute((1, 2), lambda _, i: X[0, i], name="init")
    update = te.compute((4, 3), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    with pytest.raises(tvm.TEError, match="init must match it after the first axis"):
        te.scan(init, update, state)
    good = te.compute((1, 3), lambda _, i: X[0, i], name="init")
    res = te.scan(good, update, state)
    with pytest.raises(ScheduleError, match="is a scan"):
        te.create_schedule(res.op)[res].split(res.op.scan_axis, factor=2)
