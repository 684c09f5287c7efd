"""TVM's user-facing surface (issue 16, items 1-3, 5, 7-9 and 12's split(nparts)).

Written as a TVM user would (``import compiler as tvm``): ``tvm.testing``, devices and
NDArrays, ``time_evaluator(name, dev, ...)``, ``tvm.target.Target`` and its scopes,
``int(IntImm)``, float extents, ``indexdiv``/``indexmod``, ``min_value``/``max_value``,
``topi.elemwise_sum`` and arithmetic on tensors; each computation checked against numpy.
"""
import pickle

import numpy as np
import pytest

import compiler as tvm
import compiler.testing
from compiler import te, tir, topi
from compiler.errors import BuildError, CompilerError, TEError

RNG = np.random.default_rng(16)


def _rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _run(outs, ins, *arrays):
    """Build ``outs`` (one schedule) over ``ins + outs`` and run it on ``arrays``."""
    outs = outs if isinstance(outs, list) else [outs]
    s = te.create_schedule([o.op for o in outs])
    f = tvm.build(s, ins + outs, target="llvm")
    res = [np.zeros(tuple(int(d) for d in o.shape), o.dtype) for o in outs]
    f(*arrays, *res)
    return res if len(res) > 1 else res[0]


# ------------------------------------------------------------------ item 1: tvm.testing
def test_testing_is_reachable_as_an_attribute_and_a_module():
    assert tvm.testing is compiler.testing


def test_assert_allclose_accepts_ndarrays_and_reports_mismatches():
    a = _rand(3, 4)
    tvm.testing.assert_allclose(tvm.nd.array(a), a)
    tvm.testing.assert_allclose(a, a + 1e-6, rtol=1e-4)
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        tvm.testing.assert_allclose(a, a + 1.0)
    with pytest.raises(AssertionError, match=r"shapes differ: actual \(3,\), desired \(1, 3\)"):
        tvm.testing.assert_allclose(np.ones(3), np.ones((1, 3)))   # numpy would broadcast


def test_device_enabled_is_true_only_for_the_cpu():
    assert tvm.testing.device_enabled("llvm")
    assert tvm.testing.device_enabled("llvm -mcpu=core-avx2")
    assert tvm.testing.device_enabled(tvm.target.Target("llvm"))
    assert tvm.testing.device_enabled(tvm.cpu(0))
    assert not tvm.testing.device_enabled("cuda")
    assert not tvm.testing.device_enabled("")
    with pytest.raises(TypeError, match="expected a string"):
        tvm.testing.device_enabled(3)
    assert tvm.testing.enabled_targets() == [("llvm", tvm.cpu(0))]
    assert tvm.testing.requires_llvm(_rand) is _rand


# ------------------------------------------------------------------ item 2: devices, NDArrays
def test_devices():
    assert tvm.device("llvm", 0) == tvm.cpu(0) == tvm.device("cpu")
    assert tvm.device("llvm -mcpu=znver4") == tvm.cpu()
    assert tvm.cpu(0).exist and repr(tvm.cpu(0)) == "cpu(0)"
    with pytest.raises(CompilerError, match="only the CPU"):
        tvm.device("cuda", 0)


def test_nd_array_empty_and_kernels_taking_ndarrays():
    n = 1024
    dev = tvm.device("llvm", 0)
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    f = tvm.build(s, [A, B, C], "llvm", name="myadd")
    a = tvm.nd.array(_rand(n), dev)
    b = tvm.nd.array(_rand(n), dev)
    c = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)
    assert (a.shape, a.dtype, a.device) == ((n,), "float32", dev)
    f(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    out = tvm.nd.empty((n,), "float32", dev)
    assert out.shape == (n,) and out.dtype == "float32"
    f(a, b.numpy(), out)                      # NDArrays and numpy arrays mixed
    np.testing.assert_allclose(out.numpy(), a.numpy() + b.numpy())
    assert out.numpy() is not out.numpy()     # numpy() copies, as TVM's
    kw = tvm.nd.array(a.numpy(), device=dev)  # TVM's keyword names
    assert kw.device == dev and tvm.nd.empty((2,), device=dev).device == dev
    np.testing.assert_array_equal(kw.numpy(), a.numpy())


# ------------------------------------------------------------------ item 3: time_evaluator
@pytest.fixture(scope="module")
def add_module():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    return tvm.build(s, [A, B], name="double")


def test_time_evaluator_tvm_signature(add_module):
    f, dev = add_module, tvm.cpu(0)
    assert f.entry_name == "double"
    a, b = tvm.nd.array(_rand(64), dev), tvm.nd.empty((64,), "float32", dev)
    res = f.time_evaluator(f.entry_name, dev, number=10)(a, b)
    assert res.mean > 0 and len(res.results) == 1 and res.number == 10
    np.testing.assert_allclose(b.numpy(), a.numpy() * 2.0)
    res = f.time_evaluator(f.entry_name, dev, number=2, repeat=3, min_repeat_ms=0)(a, b)
    assert len(res.results) == 3


def test_time_evaluator_existing_forms_keep_working(add_module):
    a, b = _rand(64), np.zeros(64, "float32")
    assert len(add_module.time_evaluator(number=3, repeat=2)(a, b).results) == 2
    assert add_module.time_evaluator("double", number=1)(a, b).number == 1
    with pytest.raises(TypeError, match="must be a CPU device"):
        add_module.time_evaluator("double", 5)
    with pytest.raises(KeyError, match="no function 'nope'"):
        add_module.time_evaluator("nope", tvm.cpu(0))


# ------------------------------------------------------------------ item 5: Target
def test_target_from_a_string():
    t = tvm.target.Target("llvm")
    assert tvm.Target is tvm.target.Target
    assert t == tvm.parse_target("llvm") and hash(t) == hash(tvm.parse_target("llvm"))
    assert t.kind.name == "llvm" and t.kind == "llvm" and str(t).startswith("llvm ")
    u = tvm.Target("llvm -num-cores=2 -opt-level=2")
    assert (u.num_cores, u.opt_level) == (2, 2)
    assert tvm.Target(u) == u and tvm.Target(str(u)) == u
    assert tvm.Target("llvm", host="llvm") == t
    assert pickle.loads(pickle.dumps(u)) == u


def test_target_field_form_and_errors():
    t = tvm.parse_target("llvm")
    same = tvm.Target("llvm", t.mcpu, t.mattr, t.num_cores, t.triple)
    assert same == t and same.kind.name == "llvm"
    with pytest.raises(BuildError, match="unknown kind 'cuda'"):
        tvm.target.Target("cuda")
    with pytest.raises(TypeError, match="give the options inside the string"):
        tvm.Target("llvm", num_cores=2)
    with pytest.raises(TypeError, match="num_cores and triple are required"):
        tvm.Target("llvm", "znver4")


def test_target_scopes():
    assert tvm.Target.current() is None
    with pytest.raises(BuildError, match="no target is in scope"):
        tvm.Target.current(allow_none=False)
    outer, inner = tvm.Target("llvm -num-cores=2"), tvm.Target("llvm -num-cores=1")
    with outer as t:
        assert t is outer and tvm.target.Target.current() is outer
        with inner:
            assert tvm.Target.current(allow_none=False) is inner
        assert tvm.Target.current() is outer
        A = te.placeholder((8,), name="A")
        B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
        f = tvm.build(te.create_schedule(B.op), [A, B])    # target=None: the scoped one
        a, b = _rand(8), np.zeros(8, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a + 1.0)
    assert tvm.Target.current() is None


# ------------------------------------------------------------------ item 7: int(IntImm)
def test_int_and_float_of_constants():
    n = 12
    A = te.placeholder((n, 3), name="A")
    k = te.reduce_axis((0, 3), name="k")
    C = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="C")
    assert int(C.shape[0]) == n and int(k.dom.extent) == 3
    assert float(tir.const(2.5, "float32")) == 2.5
    assert tvm.nd.empty(C.shape, "float32").shape == (n,)
    with pytest.raises(TypeError):
        int(te.var("m"))
    with pytest.raises(TypeError):
        float(te.var("m") + 1)


# ------------------------------------------------------------------ item 8
def test_float_extents_as_in_opt_gemm():
    N, K, bn = 64, 16, 8
    B = te.placeholder((K, N), name="B")
    packed = te.compute((N / bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    assert tuple(int(d) for d in packed.shape) == (N // bn, K, bn)
    b = _rand(K, N)
    ref = b.reshape(K, N // bn, bn).transpose(1, 0, 2)
    np.testing.assert_array_equal(_run(packed, [B], b), ref)
    assert [int(d) for d in te.placeholder((np.float32(4.0), 2.0)).shape] == [4, 2]
    with pytest.raises(TEError, match="non-integral extent 7.5"):
        te.compute((15 / 2,), lambda i: i)


def test_indexdiv_indexmod_and_min_max_value():
    A = te.placeholder((24,), name="A", dtype="int32")
    C = te.compute((24,), lambda i: A[tir.indexdiv(i, 4) * 4 + tir.indexmod(i + 1, 4)],
                   name="C")
    a = np.arange(24, dtype="int32") * 3
    i = np.arange(24)
    np.testing.assert_array_equal(_run(C, [A], a), a[(i // 4) * 4 + (i + 1) % 4])
    assert te.indexdiv is tir.indexdiv and te.indexmod is tir.indexmod
    assert int(te.max_value("int8")) == 127 and int(te.min_value("int8")) == -128
    assert float(te.min_value("float32")) == -np.inf
    X = te.placeholder((5, 7), name="X")
    k = te.reduce_axis((0, 7), name="k")
    argmax = te.comm_reducer(lambda x, y: te.max(x, y), lambda t: te.min_value(t), name="mx")
    M = te.compute((5,), lambda r: argmax(X[r, k], axis=k), name="M")
    x = _rand(5, 7)
    np.testing.assert_allclose(_run(M, [X], x), x.max(axis=1))


def test_topi_elemwise_sum_and_tvm_topi():
    assert tvm.topi is topi
    A, B = te.placeholder((4, 5), name="A"), te.placeholder((4, 5), name="B")
    S = topi.elemwise_sum([A, B, A])
    a, b = _rand(4, 5), _rand(4, 5)
    np.testing.assert_allclose(_run(S, [A, B], a, b), a + b + a, rtol=1e-6)
    with pytest.raises(TEError, match=r"topi.elemwise_sum: argument xs\[1\]"):
        topi.elemwise_sum([A, te.placeholder((5, 4), name="W")])
    with pytest.raises(TEError, match="a non-empty list"):
        topi.elemwise_sum([])


# ------------------------------------------------------------------ item 9: tensor arithmetic
def test_tensor_operators_lower_to_broadcasts():
    A, B = te.placeholder((3, 4), name="A"), te.placeholder((4,), name="B")
    outs = [A + B, A + 1, 1 - A, 2.0 * A, (A * B) / 2.0, -A, 1.0 / (A * A + 1.0),
            A - B, np.float32(3.0) * A]
    a, b = _rand(3, 4), _rand(4)
    got = _run(outs, [A, B], a, b)
    want = [a + b, a + 1, 1 - a, 2 * a, a * b / 2, -a, 1 / (a * a + 1), a - b, 3 * a]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert all(isinstance(o, te.Tensor) for o in outs)


def test_tensor_operator_errors():
    A = te.placeholder((3, 4), name="A")
    with pytest.raises(TEError, match=r"shapes that broadcast"):
        A + te.placeholder((5,), name="B")
    with pytest.raises(TypeError):
        A + "x"
    with pytest.raises(TypeError):
        A @ A


def test_tensor_identity_semantics_survive_the_operators():
    A, B = te.placeholder((3,), name="A"), te.placeholder((3,), name="A")
    assert A == A.op.output(0) and not (A == B) and A != B
    table = {A: 1, B: 2}
    assert table[A.op.output(0)] == 1 and B in table and (A + 1) not in table
    load = A[1]
    assert isinstance(load, tir.ProducerLoad) and load.producer == A
    C = te.compute((3,), lambda i: A[i] * B[i] + A(i), name="C")
    a, b = _rand(3), _rand(3)
    np.testing.assert_allclose(_run(C, [A, B], a, b), a * b + a, rtol=1e-6)


# ------------------------------------------------------------------ item 12: split(nparts)
def test_split_nparts_keeps_the_outer_extent():
    A = te.placeholder((45,), name="A")
    B = te.compute((45,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], nparts=32)
    text = str(tvm.lower(s, [A, B], name="f"))
    assert "for i_outer in range(32)" in text and "for i_inner in range(2)" in text
    f = tvm.build(s, [A, B])
    a, b = _rand(45), np.zeros(45, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a * 2.0)
