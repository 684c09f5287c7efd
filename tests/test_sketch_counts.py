"""Sketch generation matches Ansor's: the counts and shapes TVM's own sketch tests assert
(tests/python/unittest/test_auto_scheduler_sketch_generation.py, CPU cases).

TVM's counts depend on the core count of the machine (rfactor is tried only when the
data-parallel part is small against the cores); its test machines have 8 or more, so
sketches are generated here for 8 cores.  The workloads are written from the shapes of
TVM's test workloads.
"""
import pytest

import autosched as auto
from autosched import state as S
from autosched.search.sketch_rules import generate_sketches
from autosched.steps.registry import CacheWriteStep, RfactorStep
from compiler import te, topi

CORES = 8


@auto.register_workload("sk_matmul", override=True)
def sk_matmul(N, M, K):
    A = te.placeholder((N, K), name="A")
    B = te.placeholder((K, M), name="B")
    k = te.reduce_axis((0, K), name="k")
    return [A, B, te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")]


@auto.register_workload("sk_double_matmul", override=True)
def sk_double_matmul(N):
    A, B, D = (te.placeholder((N, N), name=n) for n in "ABD")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    k2 = te.reduce_axis((0, N), name="k2")
    return [A, B, D, te.compute((N, N), lambda i, j: te.sum(C[i, k2] * D[k2, j], axis=k2),
                                name="E")]


@auto.register_workload("sk_matmul_add", override=True)
def sk_matmul_add(N):
    A, B, X = (te.placeholder((N, N), name=n) for n in "ABX")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return [A, B, X, te.compute((N, N), lambda i, j: C[i, j] + X[i, j], name="D")]


@auto.register_workload("sk_conv_bn_relu", override=True)
def sk_conv_bn_relu(N, H, W, CI, CO, ks, stride, pad):
    data = te.placeholder((N, CI, H, W), name="Data")
    kernel = te.placeholder((CO, CI, ks, ks), name="Kernel")
    bias, scale, offset = (te.placeholder((CO, 1, 1), name=n)
                           for n in ("Bias", "Bn_scale", "Bn_offset"))
    oh = (H + 2 * pad - ks) // stride + 1
    y = topi.nn.conv2d_nchw(data, kernel, stride, pad, 1)
    shape = (N, CO, oh, oh)
    y = te.compute(shape, lambda n, c, h, w: y[n, c, h, w] + bias[c, 0, 0], name="Bias_add")
    y = te.compute(shape, lambda n, c, h, w: y[n, c, h, w] * scale[c, 0, 0], name="Bn_mul")
    y = te.compute(shape, lambda n, c, h, w: y[n, c, h, w] + offset[c, 0, 0], name="Bn_add")
    return [data, kernel, bias, offset, scale, topi.nn.relu(y)]


@auto.register_workload("sk_max_pool", override=True)
def sk_max_pool(N, H, W, CI, pad):
    A = te.placeholder((N, CI, H, W), name="A")
    return [A, topi.nn.pool2d(A, [2, 2], [1, 1], [1, 1], [pad] * 4, "max")]


@auto.register_workload("sk_min", override=True)
def sk_min(N, M):
    A = te.placeholder((N, M), name="A")
    return [A, topi.min(A, axis=1)]


@auto.register_workload("sk_softmax", override=True)
def sk_softmax(*shape):
    A = te.placeholder(shape, name="A")
    return [A, topi.nn.softmax(A, axis=-1)]


def _sketches(name, args, cores=CORES):
    task = auto.SearchTask(func=name, args=args, target="llvm")
    return generate_sketches(task.compute_dag.init_state(), cores)


def _has(state, cls, sid):
    return any(isinstance(st, cls) and st.stage_id == sid for st in state.transform_steps)


def _tiled(stage):
    return len(stage.iters) > len(stage.op.axis) + len(stage.op.reduce_axis)


@pytest.mark.parametrize("name,args,count", [
    ("sk_matmul", (512, 512, 512), 3),
    ("sk_matmul", (8, 8, 512), 5),
    ("sk_double_matmul", (512,), 9),
    ("sk_matmul_add", (512,), 3),
    ("sk_conv_bn_relu", (1, 224, 224, 3, 64, 7, 2, 3), 3),
    ("sk_max_pool", (1, 56, 56, 512, 1), 1),
    ("sk_min", (10, 1024), 3),
    ("sk_softmax", (1, 1024), 9),
    ("sk_softmax", (1, 12, 128, 128), 9),
])
def test_counts_match_tvm(name, args, count):
    sketches = _sketches(name, args)
    assert len(sketches) == count
    assert len({str(s) + repr([t.to_record() for t in s.transform_steps])
                for s in sketches}) == count


def test_matmul_shapes():
    sk = _sketches("sk_matmul", (512, 512, 512))
    # a plain tiling and the two fusion levels of the cache-write branch (TVM lists the
    # plain one first; the order is not part of the contract)
    plain = [s for s in sk if not _has(s, CacheWriteStep, 2)]
    assert len(plain) == 1 and _tiled(plain[0].stages[2])
    cached = [s for s in sk if _has(s, CacheWriteStep, 2)]
    assert all(s.stages[2].compute_at == S.ITER and _tiled(s.stages[2]) for s in cached)
    assert len(cached) == 2 and str(cached[0]) != str(cached[1])


def test_small_matmul_rfactor_puts_the_factor_after_the_space_axes():
    sk = _sketches("sk_matmul", (8, 8, 512))
    rf = [s for s in sk if _has(s, RfactorStep, 2)]
    assert len(rf) == 2
    steps = [st for st in rf[0].transform_steps if isinstance(st, RfactorStep)]
    assert steps[0].factor_iter_id == 2            # after the two space axes (i, j)
    # one variant factors the outer part in place, the other the inner part, moved
    # innermost (where it can be vectorized)
    inner = [s for s in rf if s.transform_steps[-1].to_record()[0] == "RE"]
    assert len(inner) == 1
    assert [it.name for it in inner[0].stages[2].iters][-1].startswith("k")


def test_fewer_cores_try_rfactor_on_more_reductions():
    # 2 cores: the 2x2 pooling window is longer than the core count, as in Ansor
    assert len(_sketches("sk_max_pool", (1, 56, 56, 512, 1), cores=2)) == 3
    # 64 data-parallel points are more than 2 cores x 16: no rfactor for the small matmul
    assert len(_sketches("sk_matmul", (8, 8, 512), cores=2)) == 3


def test_conv_bn_relu_shapes():
    sk = _sketches("sk_conv_bn_relu", (1, 224, 224, 3, 64, 7, 2, 3))
    conv = [k for k, st in enumerate(sk[0].stages) if st.name == "conv2d_nchw"][0]
    for s in sk[:2]:
        assert s.stages[conv].compute_at == S.ITER and _tiled(s.stages[conv])
    assert sk[2].stages[conv].compute_at == S.ROOT and _tiled(sk[2].stages[conv])
    for s in sk:
        assert sum(st.compute_at == S.INLINED for st in s.stages) >= 3
