"""RPC measurement: the tracker, servers and sessions (``compiler.rpc``) and the runner
that measures through them (``RPCRunner``, ``LocalRPCMeasureContext``).

Kernels are real (a matmul checked against numpy) or hand-written LLVM IR that crashes
or hangs; the tracker and server are real processes on this machine."""
import glob
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
from planted_kernels import CRASH_BODY, HANG_BODY, hand_kernel, slow_body

import autosched as auto
import autosched.measure.rpc as rpc_runner_mod
import compiler
from autosched import catalog, cli  # noqa: F401  (catalog registers the workloads)
from autosched.measure import BuildResult, MeasureErrorNo, MeasureInput, RPCRunner
from autosched.measure.repeats import MAX_SAMPLES_PER_REPEAT
from autosched.task_inputs import register_task_input_buffer
from compiler import relay, rpc, te
from compiler.contrib import graph_executor
from records import FAILURE_COST

N = 64
KEY = "test-rpc"


@pytest.fixture(scope="module")
def cluster():
    tracker = rpc.Tracker(host="127.0.0.1", port=9400, port_end=9600, silent=True)
    server = rpc.Server(host="127.0.0.1", port=tracker.port + 1, port_end=9600,
                        tracker_addr=("127.0.0.1", tracker.port), key=KEY, silent=True)
    ts = rpc.connect_tracker("127.0.0.1", tracker.port)
    deadline = time.monotonic() + 30
    while not ts.summary()["servers"] and time.monotonic() < deadline:
        time.sleep(0.02)
    yield tracker, server, ts
    ts.close()
    server.terminate()
    tracker.terminate()


def _matmul_module(tmp_path):
    A = te.placeholder((N, N), name="A")
    B = te.placeholder((N, N), name="B")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    path = str(tmp_path / "mm.o")
    compiler.build(s, [A, B, C], "llvm").save(path)
    return path


def _session_dirs() -> set:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "rpc-session-*")))


def _hand_kernel(name: str, body: str):
    return hand_kernel(name, body, N)


def test_session_uploads_loads_calls_and_times_a_kernel(cluster, tmp_path):
    _tracker, _server, ts = cluster
    with ts.request(KEY, timeout=10) as sess:
        assert ts.summary()["servers"][0]["free"] is False      # handed to us
        sess.upload(_matmul_module(tmp_path))
        mod = sess.load_module("mm.o")
        rng = np.random.default_rng(0)
        a, b = rng.random((N, N), dtype=np.float32), rng.random((N, N), dtype=np.float32)
        ra, rb, rc = sess.array(a), sess.array(b), sess.empty((N, N), "float32")
        mod(ra, rb, rc)
        np.testing.assert_allclose(rc.numpy(), a @ b, rtol=1e-5)
        res = mod.time_evaluator(mod.entry_name, sess.cpu(0), number=2, repeat=3)(ra, rb, rc)
        assert len(res.results) == 3 and all(r > 0 for r in res.results)
        rc.copyfrom(np.ones((N, N), np.float32))
        assert rc.numpy().sum() == N * N
    deadline = time.monotonic() + 10
    while not ts.summary()["servers"][0]["free"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ts.summary()["servers"][0]["free"] is True          # back after the session


def test_remote_errors_name_the_problem(cluster):
    _tracker, server, ts = cluster
    with ts.request(KEY, timeout=10) as sess:
        with pytest.raises(rpc.RPCError, match="'nothing.o' was not uploaded"):
            sess.load_module("nothing.o")
        with pytest.raises(rpc.RPCError, match="expected a plain file name"):
            sess.upload(b"x", "../escape")
        with pytest.raises(rpc.RPCError, match="handle 999 is not a live ndarray"):
            sess.request({"op": "download", "handle": 999})
        with pytest.raises(rpc.RPCError, match="unknown RPC request 'pickle'"):
            sess.request({"op": "pickle"})
        sess.request({"op": "ping"})                                # still usable
    with pytest.raises(rpc.RPCError, match="refused the session: this RPC server has key"):
        rpc.connect("127.0.0.1", server.port, key="another-key")
    with pytest.raises(rpc.RPCError, match="no free RPC server with key 'missing'"):
        ts.request("missing", timeout=0.2)
    with pytest.raises(rpc.RPCError, match="cannot connect to the RPC tracker"):
        rpc.connect_tracker("127.0.0.1", 1)


def test_a_crashing_kernel_ends_only_its_session(cluster):
    _tracker, _server, ts = cluster
    obj, metas = _hand_kernel("crash", CRASH_BODY)
    before = _session_dirs()
    sess = ts.request(KEY, timeout=10)
    mod = sess.load_module(obj, metas)
    assert len(_session_dirs() - before) == 1
    args = [sess.empty((N, N)) for _ in range(3)]
    with pytest.raises(rpc.RPCConnectionClosed, match="ended during 'call'"):
        mod(*args)
    assert not sess.is_open
    # the killed session's directory is removed by the server, not left in /tmp
    deadline = time.monotonic() + 10
    while _session_dirs() - before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _session_dirs() - before
    with ts.request(KEY, timeout=10) as again:                     # the server lives on
        again.request({"op": "ping"})


def test_query_rpc_tracker_prints_the_queue(cluster):
    tracker, _server, _ts = cluster
    out = subprocess.run([sys.executable, "-m", "compiler.exec.query_rpc_tracker",
                          "--port", str(tracker.port)], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    row = [line.split() for line in out.splitlines() if line.startswith(KEY)]
    assert row and row[0][:2] == [KEY, "1"]


# ---------------------------------------------------------------------- RPCRunner
class _Task:
    """What the runner reads of a task."""
    workload_key = '["rpc_fake", 64]'
    target = compiler.Target("llvm")


def _built(obj_metas):
    obj, metas = obj_metas
    return BuildResult(obj, metas, 0, "", 0.01)


def _real_matmul():
    A = te.placeholder((N, N), name="A")
    B = te.placeholder((N, N), name="B")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    func = compiler.lower(te.create_schedule(C.op), [A, B, C], name="mm")
    obj, metas, _ = compiler.build_object(func, "llvm")
    return obj, metas


def test_rpc_runner_maps_crashes_and_hangs_to_error_codes(cluster):
    tracker, _server, _ts = cluster
    runner = RPCRunner(KEY, "127.0.0.1", tracker.port, timeout=1.5, number=2, repeat=2,
                       min_repeat_ms=0, cutoff=None)     # the hard timeout, not a cut-off
    with runner:
        inputs = [MeasureInput(_Task(), None)] * 4
        brs = [_built(_hand_kernel("crash", CRASH_BODY)), _built(_real_matmul()),
               _built(_hand_kernel("hang", HANG_BODY)),
               BuildResult.failed(MeasureErrorNo.BUILD_TIMEOUT, "slow build", 4.0)]
        t0 = time.perf_counter()
        results = runner.run(inputs, brs)
        assert time.perf_counter() - t0 < 20
    assert [r.error_no for r in results] == [MeasureErrorNo.RUNTIME_DEVICE, 0,
                                             MeasureErrorNo.RUN_TIMEOUT,
                                             MeasureErrorNo.BUILD_TIMEOUT]
    assert "crashed" in results[0].error_msg and results[0].costs == [FAILURE_COST]
    assert len(results[1].costs) == 2 and all(c > 0 for c in results[1].costs)
    assert "timeout of 1.5 s" in results[2].error_msg
    assert results[3].error_msg == "slow build"


def test_rpc_runner_without_a_server_fails_the_candidates_clearly(cluster):
    tracker, _server, _ts = cluster
    runner = RPCRunner("nobody", "127.0.0.1", tracker.port, request_timeout=0.2)
    res = runner.run([MeasureInput(_Task(), None)], [_built(_real_matmul())])[0]
    assert res.error_no == MeasureErrorNo.RUNTIME_DEVICE
    assert "no RPC session with key 'nobody'" in res.error_msg
    with pytest.raises(ValueError, match="RPCRunner key ''"):
        RPCRunner("", "127.0.0.1", tracker.port)


def test_rpc_runner_sends_the_task_inputs_data(cluster):
    tracker, _server, _ts = cluster

    class WithInputs(_Task):
        workload_key = '["rpc_fake_inputs", 64]'
        task_input_names = ("B",)

        class compute_dag:
            tensors = None

    A = te.placeholder((N, N), name="A")
    B = te.placeholder((N, N), name="B")
    WithInputs.compute_dag.tensors = [A, B, te.compute((N, N), lambda i, j: A[i, j] + B[i, j],
                                                       name="C")]
    data = np.arange(N * N, dtype=np.float32).reshape(N, N)
    register_task_input_buffer(WithInputs.workload_key, "B", data, overwrite=True)
    obj, metas = _real_matmul()
    runner = RPCRunner(KEY, "127.0.0.1", tracker.port)
    with runner:
        sess = runner._session(runner._slots[0])
        args = runner._arguments(runner._slots[0], sess, metas[0], WithInputs())
        np.testing.assert_array_equal(args[1].numpy(), data)       # B: the task input
        a = args[0].numpy()
        assert a.shape == (N, N) and 0 <= a.min() and a.max() < 1    # A: random inputs
        assert not np.array_equal(a, data)


def test_local_rpc_measure_context_tunes_like_the_tvm_tutorial(tmp_path):
    log = str(tmp_path / "rpc.json")
    task = auto.SearchTask(func="matmul", args=(64, 64, 64), target="llvm")
    ctx = auto.LocalRPCMeasureContext(min_repeat_ms=0)
    try:
        opts = auto.TuningOptions(num_measure_trials=8, runner=ctx.runner, verbose=0,
                                  measure_callbacks=[auto.RecordToFile(log)])
        task.tune(opts)
    finally:
        ctx.close()
    pairs = list(auto.load_records(log))
    assert len(pairs) >= 8 and all(res.error_no == 0 for _inp, res in pairs)
    sch, args = task.apply_best(log)
    f = compiler.build(sch, args, "llvm")
    rng = np.random.default_rng(1)
    a, b = rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)
    c = np.zeros((64, 64), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    assert ctx.tracker.proc is None and ctx.server.proc is None


def test_server_and_tracker_processes_die_with_their_owner(tmp_path):
    script = tmp_path / "owner.py"
    script.write_text("import autosched as auto, os, sys\n"
                      "ctx = auto.LocalRPCMeasureContext()\n"
                      "print(ctx.tracker.proc.pid, ctx.server.proc.pid, flush=True)\n"
                      "os._exit(0)\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    pids = [int(p) for p in out]
    deadline = time.monotonic() + 10
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in pids if os.path.exists(f"/proc/{p}")
                 and "Z" not in open(f"/proc/{p}/stat").read().split()[2]]
        time.sleep(0.05)
    assert alive == []


SLOW_BODY = slow_body(3000000000)


def test_rpc_runner_times_slow_kernels_once_and_cuts_hopeless_ones(cluster):
    tracker, _server, _ts = cluster
    slow = _built(_hand_kernel("slow", SLOW_BODY))
    inputs = [MeasureInput(_Task(), None)] * 2
    # no valid measurement yet: the slow kernel's first call is its measurement
    with RPCRunner(KEY, "127.0.0.1", tracker.port, number=3, min_repeat_ms=0,
                   slow_call_seconds=0.01) as runner:
        res = runner.run(inputs[:1], [slow])[0]
    assert res.error_no == 0 and len(res.costs) == 1 and res.costs[0] > 0.01
    # after a fast matmul, the same kernel is far slower than the best: cut off
    with RPCRunner(KEY, "127.0.0.1", tracker.port, number=3, min_repeat_ms=0,
                   cutoff=auto.RunCutoff(kill_floor=0.02, single_shot_floor=0.01)) as runner:
        fast, cut = runner.run(inputs, [_built(_real_matmul()), slow])
    assert fast.error_no == 0
    assert cut.error_no == MeasureErrorNo.RUN_TIMEOUT and "slower than 10x" in cut.error_msg


def test_rpc_runner_repeats_last_min_repeat_ms_each(cluster, monkeypatch):
    """TVM's RPCRunner default, min_repeat_ms=100, is the length of a repeat: each of
    the two repeats of a microsecond matmul lasts the window, its figures topped up on
    the server (not ``number`` calls of a whole window each)."""
    tracker, _server, _ts = cluster
    seen = []
    real = rpc_runner_mod.repeat_costs

    def spy(groups, mean=False):
        seen.append(groups)
        return real(groups, mean)
    monkeypatch.setattr(rpc_runner_mod, "repeat_costs", spy)
    built = _built(_real_matmul())
    with RPCRunner(KEY, "127.0.0.1", tracker.port, number=3, repeat=2,
                   min_repeat_ms=15) as runner:
        t0 = time.perf_counter()
        res = runner.run([MeasureInput(_Task(), None)], [built])[0]
        assert time.perf_counter() - t0 >= 2 * 0.015
    assert res.error_no == 0, res.error_msg
    (groups,) = seen
    assert len(groups) == 2 and len(res.costs) == 2
    for g in groups:
        assert 3 < len(g) <= MAX_SAMPLES_PER_REPEAT and max(g) < 0.005


def test_a_server_that_cannot_start_says_why():
    with pytest.raises(rpc.RPCError, match=r"the RPC server did not start .*port range"):
        rpc.Server(host="127.0.0.1", port=9500, port_end=9500, silent=True)


@auto.register_workload("rpc_test_gather", override=True)
def _gather(n):
    X = te.placeholder((n,), name="X")
    idx = te.placeholder((n,), name="idx", dtype="int32")
    return [X, idx, te.compute((n,), lambda i: X[idx[i]], name="Y")]


def test_rpc_runner_measures_with_the_task_inputs(cluster):
    """Indices 2e8 past a 64-element array crash the kernel; the random inputs (0..7) it
    gets without task inputs do not: only delivered data can crash it."""
    tracker, _server, _ts = cluster
    far = np.full(64, 200_000_000, dtype="int32")
    plain = auto.SearchTask(func="rpc_test_gather", args=(64,))
    planted = auto.SearchTask(func="rpc_test_gather", args=(64,), task_inputs={"idx": far},
                              task_inputs_overwrite=True)
    inputs = [MeasureInput(t, t.compute_dag.init_state()) for t in (plain, planted)]
    with auto.LocalBuilder(n_parallel=1) as builder:
        brs = builder.build(inputs)
    with RPCRunner(KEY, "127.0.0.1", tracker.port, cutoff=None) as runner:
        results = runner.run(inputs, brs)
    assert results[0].error_no == MeasureErrorNo.NO_ERROR
    assert results[1].error_no == MeasureErrorNo.RUNTIME_DEVICE
    assert "ended during 'time'" in results[1].error_msg


def _add_one_library(tmp_path):
    A = te.placeholder((1024,), name="A")
    B = te.compute(A.shape, lambda *i: A(*i) + 1.0, name="B")
    func = compiler.build(te.create_schedule(B.op), [A, B], target="llvm", name="add_one")
    path = str(tmp_path / "lib.tar")
    func.export_library(path)
    return path


def _run_add_one(remote, path):
    """The tutorial's steps on ``remote``: (the remote function, its input array)."""
    remote.upload(path)
    func = remote.load_module("lib.tar")
    dev = remote.cpu()
    a = compiler.nd.array(np.random.uniform(size=1024).astype("float32"), dev)
    b = compiler.nd.array(np.zeros(1024, dtype="float32"), dev)
    func(a, b)
    np.testing.assert_equal(b.numpy(), a.numpy() + 1)
    assert func.time_evaluator(func.entry_name, dev, number=10)(a, b).mean > 0
    return func, a


def test_cross_compilation_tutorial_runs_on_a_local_session(tmp_path):
    """TVM's cross_compilation_and_rpc tutorial with local_demo = True: a kernel
    exported as .tar, uploaded and loaded by name, called on nd arrays."""
    path = _add_one_library(tmp_path)
    assert compiler.runtime.load_module(path).entry_name == "add_one"
    remote = rpc.LocalSession()
    _run_add_one(remote, path)
    with pytest.raises(rpc.RPCError, match="'other.tar' was not uploaded"):
        remote.load_module("other.tar")


def test_cross_compilation_tutorial_runs_on_a_server(cluster, tmp_path):
    """The same on an RPC server: local nd arrays are copied to the session for the call
    and the results copied back, as TVM's device arrays are."""
    _tracker, _server, ts = cluster
    path = _add_one_library(tmp_path)
    with ts.request(KEY, timeout=10) as remote:
        func, a = _run_add_one(remote, path)
        c = np.zeros(1024, "float32")
        func(a.numpy(), c)                                  # plain numpy arrays too
        np.testing.assert_equal(c, a.numpy() + 1)
        with pytest.raises(TypeError, match="expected an array or a number"):
            func("a", c)


def test_tune_cli_measures_through_the_tracker(cluster, tmp_path, capsys):
    tracker, _server, _ts = cluster
    log = str(tmp_path / "cli.json")
    rc = cli.main(["matmul", "--args", "32", "32", "32", "--trials", "4", "--log", log,
                   "--rpc-tracker", f"127.0.0.1:{tracker.port}", "--rpc-key", KEY,
                   "--quiet"])
    assert rc == 0
    pairs = list(auto.load_records(log))
    assert len(pairs) >= 4 and all(res.error_no == 0 for _, res in pairs)
    assert cli.main(["matmul", "--trials", "4", "--log", log, "--rpc-key", KEY,
                     "--quiet"]) == 2
    assert "--rpc-tracker and --rpc-key go together" in capsys.readouterr().err
    assert cli.main(["matmul", "--trials", "4", "--log", log, "--rpc-key", KEY,
                     "--rpc-tracker", "nowhere", "--quiet"]) == 2
    assert "--rpc-tracker 'nowhere': expected 'host:port'" in capsys.readouterr().err


def test_rpc_runner_checks_outputs_against_the_reference(cluster):
    tracker, _server, _ts = cluster
    inputs = [MeasureInput(_Task(), None)] * 2
    brs = [_built(_real_matmul()), _built(_hand_kernel("noop", "entry:\n  ret void"))]
    with RPCRunner(KEY, "127.0.0.1", tracker.port, min_repeat_ms=0, check_correctness=True,
                   reference_func=lambda task: _real_matmul()) as runner:
        good, wrong = runner.run(inputs, brs)
    assert good.error_no == MeasureErrorNo.NO_ERROR
    assert wrong.error_no == MeasureErrorNo.WRONG_ANSWER
    assert "output 'C' differs from the reference" in wrong.error_msg


def test_parallel_slots_share_the_servers_they_get(cluster):
    """Two parallel slots and one server: each slot gives the server back after its
    candidate, so the other never waits for its request to time out."""
    tracker, _server, _ts = cluster
    inputs = [MeasureInput(_Task(), None)] * 4
    brs = [_built(_real_matmul())] * 4
    t0 = time.perf_counter()
    with RPCRunner(KEY, "127.0.0.1", tracker.port, n_parallel=2, min_repeat_ms=0,
                   request_timeout=20) as runner:
        assert not runner.one_at_a_time
        results = runner.run(inputs, brs)
    assert [r.error_no for r in results] == [0] * 4
    assert time.perf_counter() - t0 < 15


def test_request_remote_and_check_remote(cluster):
    tracker, _server, _ts = cluster
    with auto.utils.request_remote(KEY, "127.0.0.1", tracker.port, timeout=10) as remote:
        remote.request({"op": "ping"})
    assert auto.utils.check_remote(KEY, "127.0.0.1", tracker.port, timeout=5)
    assert not auto.utils.check_remote("absent", "127.0.0.1", tracker.port, timeout=0.2)
    with pytest.raises(rpc.RPCError, match="give both"):
        auto.utils.request_remote(KEY)


def _exported_mlp(tmp_path):
    """An MLP built by relay and exported as TVM's network tutorials do."""
    mod, params = relay.testing.mlp.get_workload(batch_size=1, image_shape=(3, 8, 8))
    with compiler.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    path = str(tmp_path / "net.tar")
    lib.export_library(path)
    return lib, path


def test_a_model_exported_by_relay_runs_in_a_session(cluster, tmp_path):
    """The deploy step of TVM's network tutorials over RPC (tune_network_arm): the
    exported model is uploaded, loaded by name, run by a remote graph executor and
    timed there."""
    _tracker, _server, ts = cluster
    lib, path = _exported_mlp(tmp_path)
    x = np.random.default_rng(0).uniform(size=(1, 3, 8, 8)).astype("float32")
    local = graph_executor.GraphModule(lib["default"](compiler.cpu()))
    local.set_input("data", x)
    local.run()
    expected = local.get_output(0).numpy()
    with ts.request(KEY, timeout=10) as remote:
        remote.upload(path)
        rlib = remote.load_module("net.tar")
        dev = remote.cpu()
        module = graph_executor.GraphModule(rlib["default"](dev))
        assert module.get_num_inputs() == 1 and module.get_num_outputs() == 1
        with pytest.raises(rpc.RPCError, match=r"input\(s\) \['data'\] were never set"):
            module.run()
        module.set_input("data", compiler.nd.array(x))
        module.run()
        np.testing.assert_allclose(module.get_output(0).numpy(), expected, rtol=1e-6)
        np.testing.assert_array_equal(module.get_input("data").numpy(), x)
        assert "Execution time summary" in str(module.benchmark(dev, repeat=3,
                                                                min_repeat_ms=5))
        prof = module.module.time_evaluator("run", dev, repeat=3, min_repeat_ms=5)()
        assert len(prof.results) == 3 and prof.mean > 0
        # the model's checks come back as errors naming them; the session lives on
        with pytest.raises(rpc.RPCError, match=r"set_input 'data': got shape \(1, 3\)"):
            module.set_input("data", np.zeros((1, 3), "float32"))
        with pytest.raises(rpc.RPCError, match=r"get_output: index 3 out of range"):
            module.get_output(3)
        module.run()
        assert remote.is_open


def test_a_local_graph_module_has_tvms_time_evaluator(tmp_path):
    lib, _ = _exported_mlp(tmp_path)
    module = graph_executor.GraphModule(lib["default"](compiler.cpu()))
    module.set_input("data", np.ones((1, 3, 8, 8), "float32"))
    prof = module.module.time_evaluator("run", compiler.cpu(), repeat=2, number=3)()
    assert len(prof.results) == 2 and prof.number == 3 and min(prof.results) > 0
    with pytest.raises(compiler.relay.RelayInputError, match="times 'run', not 'set_input'"):
        module.module.time_evaluator("set_input")
