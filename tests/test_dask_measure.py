"""DaskBuilder/DaskRunner on a real distributed.LocalCluster (worker processes, loopback).

Planted kernels: one that segfaults, one that runs far past the timeout and one slow
enough to be in flight when a worker is killed.
"""
import contextlib
import json
import os
import signal
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

import autosched as auto  # noqa: E402
from autosched.measure import MeasureErrorNo, MeasureInput  # noqa: E402
from autosched.measure.dask import (  # noqa: E402
    ClusterError,
    DaskBuilder,
    DaskRunner,
    limit_host_features,
    worker_info,
)
from autosched.workload import register_workload  # noqa: E402
from compiler import te  # noqa: E402


@register_workload("dask_test_matmul")
def _matmul(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    return [A, B, te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")]


@register_workload("dask_test_segfault")
def _segfault(n):
    X = te.placeholder((n,), name="X")
    return [X, te.compute((n,), lambda i: X[i + 200000000], name="Y")]


@register_workload("dask_test_chain")
def _chain(log2_len):
    """A dependent chain of 2**log2_len float adds: ~0.1 s per 2**25 here."""
    X = te.placeholder((1,), name="X")
    k1 = te.reduce_axis((0, 1 << (log2_len // 2)), name="k1")
    k2 = te.reduce_axis((0, 1 << (log2_len - log2_len // 2)), name="k2")
    return [X, te.compute((1,), lambda i: te.sum(X[0] * 1.0001, axis=[k1, k2]), name="Y")]


@contextlib.contextmanager
def _local_cluster(n_workers=2):
    """A LocalCluster of worker processes offering ``measure``, and a Client on it."""
    with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                  resources={"measure": 1}, host="127.0.0.1",
                                  dashboard_address=":0") as c:
        with distributed.Client(c) as client:
            client.wait_for_workers(n_workers, timeout=60)
            yield c, client


@pytest.fixture(scope="module")
def cluster():
    """The shared cluster: tests using it must leave every worker alive (a test that
    kills one makes its own cluster: a killed worker's address stays listed by the
    scheduler for a while, and a later ``client.run`` on it hangs for 30 s)."""
    with _local_cluster() as c:
        yield c


def _wait_for_replacement(client, gone, n_workers, timeout=60.0):
    """Wait until ``gone`` has left the scheduler's worker list and ``n_workers`` are
    running again; return their addresses."""
    deadline = time.monotonic() + timeout
    while True:
        info = worker_info(client)
        running = sorted(w for w, s in info.items() if s["status"] == "running")
        if gone not in info and len(running) == n_workers:
            return running
        assert time.monotonic() < deadline, (gone, sorted(info))
        time.sleep(0.1)


def _inputs(name, args, n=1):
    task = auto.SearchTask(func=name, args=args)
    return [MeasureInput(task, task.compute_dag.init_state()) for _ in range(n)]


def test_tune_through_the_cluster_writes_valid_records(cluster, tmp_path):
    _, client = cluster
    log = tmp_path / "dask.json"
    task = auto.SearchTask(func="dask_test_matmul", args=(32,))
    runner = DaskRunner(client, repeat=2)
    opts = auto.TuningOptions(num_measure_trials=12, num_measures_per_round=6,
                              builder=DaskBuilder(client), runner=runner, verbose=0,
                              measure_callbacks=[auto.RecordToFile(str(log))])
    stats = task.tune(opts, auto.SketchPolicy(task, auto.RandomModel(0), seed=0, verbose=0))
    assert stats.trials == 12 and stats.errors == 0 and stats.best_cost < 1
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(recs) == 12 and all(r["r"][1] == 0 for r in recs)
    # the best schedule the cluster found is correct
    sch, args = task.apply_best(str(log))
    from compiler import build
    a, b = np.random.rand(32, 32).astype("float32"), np.random.rand(32, 32).astype("float32")
    c = np.zeros((32, 32), "float32")
    build(sch, args)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    counts = {w: s["count"] for w, s in runner.per_worker.items()}
    assert sum(counts.values()) == 12
    assert "median noise" in runner.summary()


def test_worker_info_is_fresh_while_the_client_refreshes_its_cache(cluster):
    # The client's periodic refresh stores an identity without per-worker entries; with
    # a 1 ms refresh, client.scheduler_info() races it and often reports no workers.
    # worker_info (used by the builder and runner) must never.
    c, _ = cluster
    with dask.config.set({"distributed.client.scheduler-info-interval": "1ms"}):
        with distributed.Client(c) as client:
            seen = [sorted(worker_info(client)) for _ in range(200)]
    assert all(len(w) == 2 for w in seen) and len(set(map(tuple, seen))) == 1


def test_planted_crash_and_hang_become_error_codes_and_workers_live(cluster):
    _, client = cluster
    pids = client.run(os.getpid)
    builder, runner = DaskBuilder(client), DaskRunner(client, timeout=1.0)
    inputs = _inputs("dask_test_segfault", (8,)) + _inputs("dask_test_chain", (31,))
    results = runner.run(inputs, builder.build(inputs))
    assert results[0].error_no == MeasureErrorNo.RUNTIME_DEVICE
    assert "SIGSEGV" in results[0].error_msg
    assert results[1].error_no == MeasureErrorNo.RUN_TIMEOUT
    # the same two worker processes, at the same addresses: none died or was restarted
    assert len(pids) == 2 and client.run(os.getpid) == pids
    assert sorted(worker_info(client)) == sorted(pids)
    ok = _inputs("dask_test_matmul", (16,))
    assert runner.run(ok, builder.build(ok))[0].is_valid


def test_a_worker_killed_mid_batch_costs_only_a_retry():
    # Its own cluster: the shared one must keep both workers alive for the other tests.
    with _local_cluster() as (_, client):
        builder, runner = DaskBuilder(client), DaskRunner(client, timeout=20)
        inputs = _inputs("dask_test_chain", (27,), n=6)      # ~0.4 s each, 3 per worker
        built = builder.build(inputs)
        pids = client.run(os.getpid)
        victim = sorted(pids)[0]
        killed_at = []
        t0 = time.monotonic()

        def kill_soon():
            # as soon as the victim is measuring, not after a fixed delay: on a fast
            # machine the whole batch can take less than any delay picked here
            deadline = time.monotonic() + 30
            while not client.processing().get(victim) and time.monotonic() < deadline:
                time.sleep(0.005)
            killed_at.append(time.monotonic())
            os.kill(pids[victim], signal.SIGKILL)

        threading.Thread(target=kill_soon, daemon=True).start()
        results = runner.run(inputs, built)
        finished_at = time.monotonic()
        assert all(r.is_valid for r in results), [r.error_msg for r in results]
        assert finished_at - t0 < 60
        assert killed_at and killed_at[0] < finished_at     # the kill landed mid-batch
        assert sum(s["count"] for s in runner.per_worker.values()) == 6
        # the nanny restarted the worker, at a new address
        workers = _wait_for_replacement(client, victim, 2)
        assert victim not in workers


def test_a_worker_that_cannot_run_the_target_refuses_and_another_measures(cluster):
    _, client = cluster
    client.wait_for_workers(2, timeout=60)
    workers = sorted(worker_info(client))
    assert len(workers) == 2, workers
    builder, runner = DaskBuilder(client), DaskRunner(client)
    inputs = _inputs("dask_test_matmul", (16,), n=4)
    built = builder.build(inputs)
    try:
        client.run(limit_host_features, ["avx2", "avx512f"], workers=[workers[0]])
        results = runner.run(inputs, built)
        assert all(r.is_valid for r in results), [r.error_msg for r in results]
        assert set(runner.per_worker) == {workers[1]}, (dict(runner.per_worker), workers)
        client.run(limit_host_features, ["avx2", "avx512f"])
        results = runner.run(inputs[:1], built[:1])
        assert results[0].error_no == MeasureErrorNo.RUNTIME_DEVICE
        assert "no worker can run this target" in results[0].error_msg
    finally:
        client.run(limit_host_features, [])


def test_losing_the_scheduler_stops_tuning_with_the_log_intact(tmp_path):
    log = tmp_path / "lost.json"
    task = auto.SearchTask(func="dask_test_matmul", args=(16,))
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                       resources={"measure": 1}, host="127.0.0.1",
                                       dashboard_address=":0")
    client = distributed.Client(cluster)

    def stop_cluster(stats):
        if stats.trials >= 4:
            cluster.close()

    opts = auto.TuningOptions(num_measure_trials=40, num_measures_per_round=4,
                              builder=DaskBuilder(client), runner=DaskRunner(client),
                              verbose=0, measure_callbacks=[auto.RecordToFile(str(log))],
                              progress_callback=stop_cluster)
    with pytest.warns(UserWarning, match="tuning stopped"):
        stats = task.tune(opts, auto.SketchPolicy(task, auto.RandomModel(0), verbose=0))
    client.close()
    assert stats.trials == 4 and stats.stop_reason
    lines = log.read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(x)["r"][1] == 0 for x in lines)


def test_an_unreachable_scheduler_is_a_clear_error():
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match="cannot reach the Dask scheduler at "
                                           "tcp://127.0.0.1:9"):
        DaskBuilder("tcp://127.0.0.1:9", connect_timeout=2)
    assert time.monotonic() - t0 < 20


def test_a_cluster_without_the_measure_resource_is_refused():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=":0") as c:
        with distributed.Client(c) as client:
            with pytest.raises(ClusterError, match="--resources measure=1"):
                DaskRunner(client)


@register_workload("dask_test_gather")
def _gather(n):
    X = te.placeholder((n,), name="X")
    idx = te.placeholder((n,), name="idx", dtype="int32")
    return [X, idx, te.compute((n,), lambda i: X[idx[i]], name="Y")]


def test_task_inputs_reach_the_workers(cluster):
    """Indices 2e8 past a 64-element array crash the kernel; the random inputs (0..7) it
    gets without task inputs do not: only delivered data can crash it."""
    _, client = cluster
    far = np.full(64, 200_000_000, dtype="int32")
    plain = auto.SearchTask(func="dask_test_gather", args=(64,))
    planted = auto.SearchTask(func="dask_test_gather", args=(64,), task_inputs={"idx": far},
                              task_inputs_overwrite=True)
    inputs = [MeasureInput(t, t.compute_dag.init_state()) for t in (plain, planted)]
    runner = DaskRunner(client, cutoff=None)
    results = runner.run(inputs, DaskBuilder(client).build(inputs))
    assert results[0].error_no == MeasureErrorNo.NO_ERROR
    assert results[1].error_no == MeasureErrorNo.RUNTIME_DEVICE
    assert "SIGSEGV" in results[1].error_msg
