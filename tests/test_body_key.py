"""Structural keys of op bodies (features/body_key.py): equal exactly when the body
analysis is, and features computed through a shared analysis equal those computed
from scratch, bit for bit."""
import random

import numpy as np
import pytest

import autosched as auto
from autosched import catalog  # noqa: F401  (registers built-in workloads)
from autosched.features import body as B
from autosched.features import extract as F
from autosched.features.body_key import body_key
from autosched.search.mutation_rules import MUTATIONS, mutate
from compiler import te

WORKLOADS = [("softmax", (8, 40)), ("matmul", (64, 48, 32)),
             ("conv2d_nchw", (1, 8, 14, 14, 16, 3, 3, 1, 1)),
             ("depthwise_conv2d", (1, 8, 28, 28, 3, 1, 1)), ("batch_matmul", (2, 16, 16, 32))]


def _key(op):
    return body_key(op, op.body)


def _matmul(n=16, k=8, dtype="float32", name="C", scale=None):
    A = te.placeholder((n, k), name="A", dtype=dtype)
    W = te.placeholder((k, n), name="W", dtype=dtype)
    r = te.reduce_axis((0, k), name="r")
    if scale is None:
        return te.compute((n, n), lambda i, j: te.sum(A[i, r] * W[r, j], axis=r), name=name)
    return te.compute((n, n), lambda i, j: te.sum(A[i, r] * W[r, j] * scale, axis=r),
                      name=name)


def test_equal_structure_gives_equal_keys_and_the_reads_in_order():
    one, two = _matmul(), _matmul(name="D")
    (k1, t1), (k2, t2) = _key(one.op), _key(two.op)
    assert k1 == k2                  # names differ, the structure does not
    assert [t.op.name for t in t1] == ["A", "W"]
    assert all(a is not b for a, b in zip(t1, t2))     # each op's own tensors


@pytest.mark.parametrize("other", [
    dict(n=16, k=4), dict(n=8, k=8), dict(dtype="float64"), dict(scale=3.0)])
def test_a_different_extent_dtype_shape_or_constant_gives_another_key(other):
    assert _key(_matmul(scale=2.0).op)[0] != _key(_matmul(**{"scale": 2.0, **other}).op)[0]


def test_index_structure_is_in_the_key():
    A = te.placeholder((8, 8), name="A")
    a = te.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="a")
    b = te.compute((8, 8), lambda i, j: A[j, i] + 1.0, name="b")
    assert _key(a.op)[0] != _key(b.op)[0]


def test_a_rebound_analysis_names_the_ops_own_tensors():
    B._BODY_CACHE.clear()
    B._STRUCT_CACHE.clear()
    one, two = _matmul(), _matmul(name="D")
    first, second = B.body_info(one.op, frozenset()), B.body_info(two.op, frozenset())
    assert second.op is two.op and second.counts is first.counts      # shared arrays
    assert [a.tensor.op for a in second.accesses] == \
        [two.op] + [t.op for t in two.op.input_tensors]
    assert second.access_keys == tuple((id(a.tensor.op), a.tensor.value_index)
                                       for a in second.accesses)
    assert [a.tensor.op for a in first.accesses][0] is one.op         # left as it was


def _states(name, args, n=30, gens=2, seed=0):
    task = auto.SearchTask(func=name, args=args)
    pop = auto.SketchPolicy(task, seed=seed).sample_initial_population(n)
    rng = random.Random(seed)
    out = list(pop)
    for _ in range(gens):
        kids = [mutate(rng.choice(pop), rng, 2, MUTATIONS) for _ in range(n)]
        pop = [k for k in kids if k is not None] or pop
        out += pop
    return task.compute_dag, out


def _rows(state):
    raw = F.featurize_raw(state)
    raw[:, F._LOG] = F.slog(raw[:, F._LOG])
    return raw.astype(np.float32)


@pytest.mark.parametrize("name,args", WORKLOADS)
def test_features_through_shared_analyses_equal_features_from_scratch(name, args,
                                                                       monkeypatch):
    dag, states = _states(name, args)
    B._BODY_CACHE.clear()
    B._STRUCT_CACHE.clear()
    rebound = []
    real = B.BodyInfo.rebound
    monkeypatch.setattr(B.BodyInfo, "rebound",
                        lambda self, *a: rebound.append(1) or real(self, *a))
    warm = [_rows(st) for st in states]
    monkeypatch.undo()
    for st, rows in zip(states, warm):
        B._BODY_CACHE.clear()
        B._STRUCT_CACHE.clear()
        np.testing.assert_array_equal(rows, _rows(dag.state_from_steps(st.transform_steps)),
                                      err_msg=str(st))
    if name == "softmax":          # its rfactor sketches rebuild the ops after them
        assert rebound
