"""TVM's CPU tutorials, their code paths rewritten from scratch as a TVM user writes them.

Each test follows one tutorial's flow (tensor_expr_get_started, opt_gemm,
schedule_primitives, tuple_inputs, extern_op, scan, intro_topi's CPU part,
auto_scheduler_matmul_x86) with small sizes, importing ``compiler`` as ``tvm``, and checks
every kernel against numpy.  Together they exercise each item of issue 16; the detailed
behaviour and error tests live in test_tvm_surface, test_tvm_symbolic,
test_tvm_extern_scan, test_tvm_module_io and test_tvm_schedule_parity.
"""
import subprocess
import sys

import numpy as np

import autosched as auto_scheduler
import compiler as tvm
import compiler.testing
from compiler import te, topi
from compiler.contrib import cblas, cc, utils

RNG = np.random.default_rng(2026)


def _rand(*shape, dtype="float32"):
    return RNG.random(shape).astype(dtype)


def test_tensor_expr_get_started():
    tgt = tvm.target.Target(target="llvm", host="llvm")
    assert tgt.kind.name == "llvm"
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    fadd = tvm.build(s, [A, B, C], tgt, name="myadd")
    dev = tvm.device(tgt.kind.name, 0)
    for length in (1024, 37):
        a = tvm.nd.array(_rand(length), dev)
        b = tvm.nd.array(_rand(length), dev)
        c = tvm.nd.array(np.zeros(length, dtype=C.dtype), dev)
        fadd(a, b, c)
        tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    timer = fadd.time_evaluator(fadd.entry_name, dev, number=10)
    assert timer(a, b, c).mean > 0
    # parallel, then split + vectorize, over the symbolic length
    s[C].parallel(C.op.axis[0])
    assert "parallel" in str(tvm.lower(s, [A, B, C], simple_mode=True))
    s = te.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=8)
    s[C].parallel(outer)
    s[C].vectorize(inner)
    fvec = tvm.build(s, [A, B, C], tgt, name="myadd_vec")
    fvec(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    assert "define" in fvec.get_source()
    # save the object, link it, load it back (and the one-step export)
    temp = utils.tempdir()
    fadd.save(temp.relpath("myadd.o"))
    cc.create_shared(temp.relpath("myadd.so"), [temp.relpath("myadd.o")])
    assert "myadd.so" in temp.listdir()
    fadd1 = tvm.runtime.load_module(temp.relpath("myadd.so"))
    fadd1(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    fadd.export_library(temp.relpath("myadd_pack.so"))
    fadd2 = tvm.runtime.load_module(temp.relpath("myadd_pack.so"))
    fadd2(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())


def test_opt_gemm_blocking_packing_write_cache():
    M = K = N = 64
    bn, kfactor = 16, 4
    dev = tvm.device("llvm", 0)
    a = tvm.nd.array(_rand(M, K), dev)
    b = tvm.nd.array(_rand(K, N), dev)
    answer = a.numpy() @ b.numpy()
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    packedB = te.compute((N / bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    C = te.compute((M, N), lambda m, n: te.sum(
        A[m, k] * packedB[n // bn, k, tvm.tir.indexmod(n, bn)], axis=k), name="C")
    assert int(packedB.shape[0]) == N // bn
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    s[CC].compute_at(s[C], no)
    mc, nc = s[CC].op.axis
    (kaxis,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kaxis, factor=kfactor)
    s[CC].reorder(ko, mc, ki, nc)
    s[CC].vectorize(nc)
    s[CC].unroll(ki)
    s[C].parallel(mo)
    x, _, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    func = tvm.build(s, [A, B, C], target="llvm", name="mmult")
    c = tvm.nd.array(np.zeros((M, N), dtype="float32"), dev)
    func(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), answer, rtol=1e-5)
    mod = tvm.lower(s, [A, B, C], simple_mode=True)
    assert mod["main"] is not None and "packedB" in mod.script()
    assert func.time_evaluator(func.entry_name, dev, number=2)(a, b, c).mean > 0


def test_schedule_primitives():
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] * 2, name="B")
    C = te.compute((m,), lambda i: B[i] + 1, name="C")
    a = _rand(45)
    for how in ("split", "nparts", "compute_at", "compute_inline", "compute_root"):
        s = te.create_schedule(C.op)
        if how == "split":
            s[C].split(C.op.axis[0], factor=8)
        elif how == "nparts":
            s[C].split(C.op.axis[0], nparts=32)
        elif how == "compute_at":
            s[B].compute_at(s[C], C.op.axis[0])
        elif how == "compute_inline":
            s[B].compute_inline()
        else:
            s[B].compute_at(s[C], C.op.axis[0])
            s[B].compute_root()
        f = tvm.build(s, [A, C], "llvm")
        c = np.zeros(45, "float32")
        f(a, c)
        np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)
    # compute_at of a stage that is also an argument, as the tutorial lowers it
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    f = tvm.build(s, [A, B, C], "llvm")
    b, c = np.zeros(45, "float32"), np.zeros(45, "float32")
    f(a, b, c)
    np.testing.assert_allclose(b, a * 2, rtol=1e-6)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)
    # tile, fuse and reorder on a 2-D symbolic tensor
    X = te.placeholder((m, n), name="X")
    Y = te.compute((m, n), lambda i, j: X[i, j] * 3, name="Y")
    s = te.create_schedule(Y.op)
    xo, yo, xi, yi = s[Y].tile(Y.op.axis[0], Y.op.axis[1], x_factor=10, y_factor=5)
    s[Y].reorder(xi, yo, xo, yi)
    s[Y].fuse(xi, yo)
    f = tvm.build(s, [X, Y], "llvm")
    x = _rand(23, 17)
    y = np.zeros_like(x)
    f(x, y)
    np.testing.assert_allclose(y, x * 3, rtol=1e-6)


def test_tuple_inputs_and_comm_reducer():
    n, m = te.var("n"), te.var("m")
    A0 = te.placeholder((m, n), name="A0")
    A1 = te.placeholder((m, n), name="A1")
    B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A1[i, j] * 3), name="B")
    s = te.create_schedule(B0.op)
    f = tvm.build(s, [A0, A1, B0, B1], "llvm")
    a0, a1 = _rand(6, 5), _rand(6, 5)
    b0, b1 = np.zeros_like(a0), np.zeros_like(a1)
    f(a0, a1, b0, b1)
    np.testing.assert_allclose(b0, a0 + 2, rtol=1e-6)
    np.testing.assert_allclose(b1, a1 * 3, rtol=1e-6)

    def fcombine(x, y):
        lhs = tvm.tir.Select((x[1] >= y[1]), x[0], y[0])
        rhs = tvm.tir.Select((x[1] >= y[1]), x[1], y[1])
        return lhs, rhs

    def fidentity(t0, t1):
        return tvm.tir.const(-1, t0), tvm.te.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val", dtype="int32")
    k = te.reduce_axis((0, n), "k")
    T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    f = tvm.build(s, [idx, val, T0, T1], "llvm")
    v = RNG.integers(0, 100, (4, 9)).astype("int32")
    ix = np.tile(np.arange(9, dtype="int32"), (4, 1))
    t0, t1 = np.zeros(4, "int32"), np.zeros(4, "int32")
    f(ix, v, t0, t1)
    np.testing.assert_array_equal(t1, v.max(axis=1))
    np.testing.assert_array_equal(v[np.arange(4), t0], v.max(axis=1))


def test_extern_op_cblas_and_packed_functions():
    n, l, m = 64, 32, 48
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    bias = te.var("bias", dtype="float32")
    C = cblas.matmul(A, B)
    D = te.compute(C.shape, lambda i, j: C[i, j] + bias, name="D")
    s = te.create_schedule(D.op)
    f = tvm.build(s, [A, B, D, bias], "llvm")
    dev = tvm.cpu(0)
    a, b = tvm.nd.array(_rand(n, l), dev), tvm.nd.array(_rand(l, m), dev)
    d = tvm.nd.array(np.zeros((n, m), dtype=D.dtype), dev)
    f(a, b, d, 10.0)
    tvm.testing.assert_allclose(d.numpy(), a.numpy() @ b.numpy() + 10, rtol=1e-5)

    seen = []

    @tvm.register_func("tutorial.my_addone", override=True)
    def my_addone(x, y):
        seen.append(type(x).__name__)
        tvm.nd.array(x.numpy() + 1).copyto(y)

    X = te.placeholder((n,), name="X")
    Y = te.extern(X.shape, [X], lambda ins, outs: tvm.tir.call_packed(
        "tutorial.my_addone", ins[0], outs[0]), name="Y")
    s = te.create_schedule(Y.op)
    f = tvm.build(s, [X, Y], "llvm")
    x, y = tvm.nd.array(_rand(n), dev), tvm.nd.array(np.zeros(n, dtype="float32"), dev)
    f(x, y)
    tvm.testing.assert_allclose(y.numpy(), x.numpy() + 1)
    assert seen == ["NDArray"] and tvm.get_global_func("tutorial.my_addone") is not None
    # call_pure_extern into libm
    Z = te.compute(X.shape, lambda i: tvm.tir.call_pure_extern("float32", "expf", X[i]),
                   name="Z")
    f = tvm.build(te.create_schedule(Z.op), [X, Z], "llvm")
    z = np.zeros(n, "float32")
    f(x.numpy(), z)
    np.testing.assert_allclose(z, np.exp(x.numpy()), rtol=1e-5)


def test_scan_cumulative_sum():
    m, n = 10, 7
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
    s_scan = tvm.te.scan(s_init, s_update, s_state, inputs=[X])
    s = te.create_schedule(s_scan.op)
    f = tvm.build(s, [X, s_scan], "llvm")
    x = _rand(m, n)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_allclose(out, np.cumsum(x, axis=0), rtol=1e-5)


def test_intro_topi_cpu_and_tensor_operators():
    n, m = 8, 5
    A = te.placeholder((n, m), name="A")
    B = te.placeholder((m,), name="B")
    C = topi.sum(A, axis=1)
    D = A + B                  # broadcasts through topi, as TVM's operator overloading
    E = D / 2.0 + topi.elemwise_sum([A, A])
    with tvm.target.Target("llvm"):
        s = te.create_schedule([C.op, E.op])
    f = tvm.build(s, [A, B, C, E], "llvm")
    a, b = _rand(n, m), _rand(m)
    c, e = np.zeros(n, "float32"), np.zeros((n, m), "float32")
    f(a, b, c, e)
    np.testing.assert_allclose(c, a.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(e, (a + b) / 2 + 2 * a, rtol=1e-5)
    assert int(A.shape[0]) == n and int(te.reduce_axis((0, 3)).dom.extent) == 3
    assert float(tvm.tir.const(1.5, "float32")) == 1.5


def test_auto_scheduler_matmul_script_runs_without_a_main_guard(tmp_path):
    """The tutorial's script shape: module-level task.tune with no ``__main__`` guard, run
    as a fresh interpreter (workers must not re-import it), then apply_best and build."""
    script = tmp_path / "tune_matmul.py"
    script.write_text(f'''
import numpy as np
import compiler as tvm
from compiler import te
import autosched as auto_scheduler

@auto_scheduler.register_workload
def matmul_add(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    C = te.placeholder((N, M), name="C", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    matmul = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k),
                        name="matmul", attrs={{"layout_free_placeholders": [B]}})
    out = te.compute((N, M), lambda i, j: matmul[i, j] + C[i, j], name="out")
    return [A, B, C, out]

task = tvm.auto_scheduler.SearchTask(func=matmul_add, args=(64, 64, 64, "float32"),
                                     target="llvm")
log_file = r"{tmp_path / 'matmul.json'}"
opt = auto_scheduler.TuningOptions(num_measure_trials=4, verbose=0,
    measure_callbacks=[auto_scheduler.RecordToFile(log_file)])
task.tune(opt)
sch, args = task.apply_best(log_file)
func = tvm.build(sch, args, "llvm")
a, b, c = (np.random.rand(64, 64).astype("float32") for _ in range(3))
out = tvm.nd.empty((64, 64), device=tvm.cpu())
func(tvm.nd.array(a), tvm.nd.array(b), tvm.nd.array(c), out)
np.testing.assert_allclose(out.numpy(), a @ b + c, rtol=1e-4)
print("OK", len(open(log_file).readlines()))
''')
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "OK 4"
    assert auto_scheduler.LayoutRewriteOption.INSERT_TRANSFORM_STAGE == 1
