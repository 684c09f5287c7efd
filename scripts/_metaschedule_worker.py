"""TVM MetaSchedule side of ``scripts/bench_vs_tvm.py``; runs inside TVM's own interpreter.

    <tvm venv>/bin/python scripts/_metaschedule_worker.py --workload conv2d --trials 200 \\
        --mcpu znver3 --work-dir /tmp/ms_conv2d

The driver also loads this file for ``FLOPS``, the numpy references and the numpy probe,
so both processes share them: keep its top level free of tvm imports.  Not part of the
package: it needs ``apache-tvm==0.27.0.post1`` (MetaSchedule lives at
``tvm.s_tir.meta_schedule`` there), which is installed in its own virtual environment and
is no dependency of the package.  It defines the workload in TVM's TE (``topi``), tunes it
with ``tune_tir`` for ``--trials`` trials (``max_trials_global``) on the target
``{"kind": "llvm", "mcpu": ..., "num-cores": ...}``, builds the best schedule, checks it
against numpy, times it with ``time_evaluator`` (median of ``--repeat`` repeats) and times
a numpy probe (relu(X @ W.T + B), 128x768x3072) in the same process.  The last stdout line
is one JSON object: workload, trials, best_ms, gflops, numpy_ms, tune_seconds, ...; on
failure it carries ``error`` and the exit status is 1.

With ``--export PATH`` the timed kernel is also written as a shared library (its
parameters' shapes and dtypes beside it, ``PATH.json``), and ``--time-kernel PATH`` only
loads such a kernel in a fresh interpreter and times it (no tuning): the driver alternates
those timings with its own kernel's, in fresh processes of both sides (``side_by_side``).
With ``--serve`` as well, the process stays: it answers each line read from stdin with one
timing (a JSON line), until stdin closes (``serve``; the driver's paired timings).

Weights are layout-free on both sides: ``topi.nn.dense`` marks its weight so, and the conv2d
filter is marked the same way here, as our tasks rewrite both.  MetaSchedule's builder
measures the kernel with the layout-rewrite block removed (weights pre-transformed); the
final timing does the same, while the correctness check runs the complete function (rewrite
block included) on the original weights.  TVM's thread pool (the builder and runner
processes inherit it) runs ``--num-cores`` threads, as our kernels do.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback

import numpy as np

FLOPS = {"conv2d": 2 * 64 * 56 * 56 * 64 * 3 * 3, "dense_bias_relu": 2 * 128 * 768 * 3072}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", required=True, choices=sorted(FLOPS))
    p.add_argument("--trials", type=int)
    p.add_argument("--mcpu", help="host cpu name, e.g. znver3")
    p.add_argument("--work-dir", help="MetaSchedule logs and database")
    p.add_argument("--export", default=None, metavar="PATH",
                   help="also write the timed kernel here (shared library; PATH.json: its "
                        "parameters)")
    p.add_argument("--time-kernel", default=None, metavar="PATH",
                   help="only time a kernel written with --export (no tuning)")
    p.add_argument("--serve", action="store_true",
                   help="with --time-kernel: one timing per stdin line, until EOF")
    p.add_argument("--num-cores", type=int, default=2)
    p.add_argument("--per-iter", type=int, default=64, help="num_trials_per_iter")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--build-timeout", type=float, default=120.0,
                   help="LocalBuilder timeout (s); each builder process first spends ~20 s "
                        "importing tvm.s_tir.tensor_intrin, so the default 30 s times out")
    p.add_argument("--number", type=int, default=10)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--min-repeat-ms", type=int, default=50)
    ns = p.parse_args(argv)
    if ns.time_kernel is None and None in (ns.trials, ns.mcpu, ns.work_dir):
        p.error("--trials, --mcpu and --work-dir are required unless --time-kernel is given")
    return ns


# ---------------------------------------------------------------- workloads and references
def make_workload(name: str):
    """(PrimFunc, [input shapes], numpy reference of the inputs) of a workload."""
    from tvm import te, topi

    if name == "conv2d":
        x = te.placeholder((1, 64, 56, 56), name="X")
        f = te.placeholder((64, 64, 3, 3), name="F")
        out = topi.nn.conv2d_nchw(x, f, 1, 1, 1)
        func = te.create_prim_func([x, f, out]).with_attr("layout_free_buffers", [1])
        return func, [(1, 64, 56, 56), (64, 64, 3, 3)], conv2d_ref
    x = te.placeholder((128, 768), name="X")
    w = te.placeholder((3072, 768), name="W")
    b = te.placeholder((3072,), name="B")
    out = topi.nn.relu(topi.nn.dense(x, w, b))
    return te.create_prim_func([x, w, b, out]), [(128, 768), (3072, 768), (3072,)], dense_ref


def conv2d_ref(x, f, pad=1):
    """NCHW conv2d, stride 1: im2col windows contracted with einsum (float64)."""
    kh, kw = f.shape[2:]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    return np.einsum("nchwij,ocij->nohw", cols, f.astype(np.float64), optimize=True)


def dense_ref(x, w, b):
    return np.maximum(x @ w.T + b, 0)


def numpy_probe_ms(repeat: int) -> float:
    """Median ms of numpy's relu(X @ W.T + B) at 128x768x3072 (float32)."""
    rng = np.random.default_rng(1)
    x, w, b = (rng.uniform(-1, 1, s).astype(np.float32)
               for s in ((128, 768), (3072, 768), (3072,)))
    dense_ref(x, w, b)
    ts = []
    for _ in range(max(repeat, 5)):
        t = time.perf_counter()
        for _ in range(5):
            dense_ref(x, w, b)
        ts.append((time.perf_counter() - t) / 5)
    return statistics.median(ts) * 1e3


# ---------------------------------------------------------------- tuning and timing
def tune(ns, func, target):
    """Tune with MetaSchedule; (best schedule or None, seconds)."""
    from tvm.s_tir import meta_schedule as ms

    t0 = time.perf_counter()
    builder = ms.builder.LocalBuilder(timeout_sec=ns.build_timeout)
    database = ms.tune_tir(func, target, ns.work_dir, max_trials_global=ns.trials,
                           num_trials_per_iter=ns.per_iter, seed=ns.seed, builder=builder)
    seconds = time.perf_counter() - t0
    return ms.tir_integration.compile_tir(database, func, target), seconds


def check_and_time(ns, sch, target, shapes, ref) -> dict:
    """Check the best schedule against numpy, then time it as MetaSchedule measured it."""
    import tvm
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    dev = tvm.cpu(0)
    rng = np.random.default_rng(0)
    ins = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
    expect = ref(*ins)
    full = tvm.compile(sch.mod, target=target)
    args = [tvm.runtime.tensor(a, dev) for a in ins]
    args.append(tvm.runtime.tensor(np.zeros(expect.shape, np.float32), dev))
    full["main"](*args)
    rel_err = float(np.abs(args[-1].numpy() - expect).max() / np.abs(expect).max())
    if not rel_err < 1e-4:
        raise AssertionError(f"MetaSchedule's best schedule is wrong: rel. error {rel_err:.3g}")
    # the kernel as measured during tuning: weights already in the rewritten layout
    stripped = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(sch.mod)
    kernel = tvm.compile(stripped, target=target)
    # TVM 0.27: a PrimFunc's params are buffer-like, with shape and dtype
    targs = [tvm.runtime.tensor(rng.uniform(-1, 1, [int(d) for d in p.shape])
                                .astype(str(p.dtype)), dev) for p in stripped["main"].params]
    out = {"rel_err": rel_err, **_time(ns, kernel.mod, dev, targs)}
    if ns.export:
        kernel.export_library(ns.export)
        with open(ns.export + ".json", "w") as f:
            json.dump([[[int(d) for d in p.shape], str(p.dtype)]
                       for p in stripped["main"].params], f)
        out["kernel"] = ns.export
    return out


def _time(ns, mod, dev, targs) -> dict:
    """Median ms (and every repeat's) of ``mod``'s main with ``time_evaluator``."""
    timer = mod.time_evaluator("main", dev, number=ns.number, repeat=ns.repeat,
                               min_repeat_ms=ns.min_repeat_ms)
    res = timer(*targs)
    return {"best_ms": float(np.median(res.results)) * 1e3,
            "repeats_ms": [r * 1e3 for r in res.results]}


def serve(prepare, stdin=None, stdout=None) -> int:
    """Serve mode of a timing process, shared with the driver's ``--time-ours --serve``:
    ``prepare()`` loads the kernel and returns a function timing it once (a dict with
    ``best_ms``).  The first JSON line says ``{"ready": true}`` or carries the error
    (status 1); then every non-blank line read answers with one timing, until EOF.

    Why: timings of the two sides a fraction of a second apart see the same machine; on
    a shared host a slow spell lasts seconds, longer than a fresh process's timing."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    try:
        time_once = prepare()
    except Exception as err:  # noqa: BLE001 - reported to the driver as JSON
        print(json.dumps({"error": f"{type(err).__name__}: {err}"}), file=stdout, flush=True)
        return 1
    print(json.dumps({"ready": True}), file=stdout, flush=True)
    for line in stdin:
        if not line.strip():
            continue
        try:
            out = time_once()
        except Exception as err:  # noqa: BLE001 - the driver decides
            out = {"error": f"{type(err).__name__}: {err}"}
        print(json.dumps(out), file=stdout, flush=True)
    return 0


def time_kernel(ns) -> dict:
    """Load a kernel written with ``--export`` and time it on random inputs."""
    return load_kernel(ns)()


def load_kernel(ns):
    """A function timing the kernel written with ``--export`` on random inputs once."""
    import tvm

    dev = tvm.cpu(0)
    with open(ns.time_kernel + ".json") as f:
        params = json.load(f)
    mod = tvm.runtime.load_module(ns.time_kernel)
    rng = np.random.default_rng(0)
    targs = [tvm.runtime.tensor(rng.uniform(-1, 1, shape).astype(dtype), dev)
             for shape, dtype in params]
    return lambda: {"workload": ns.workload, **_time(ns, mod, dev, targs)}


def run(ns) -> dict:
    import tvm

    target = tvm.target.Target({"kind": "llvm", "mcpu": ns.mcpu, "num-cores": ns.num_cores})
    func, shapes, ref = make_workload(ns.workload)
    os.makedirs(ns.work_dir, exist_ok=True)
    sch, tune_s = tune(ns, func, target)
    if sch is None:
        raise RuntimeError(f"MetaSchedule found no valid schedule in {ns.trials} trials")
    out = {"workload": ns.workload, "trials": ns.trials, "tune_seconds": tune_s,
           "tvm_version": tvm.__version__, "target": str(target)}
    out.update(check_and_time(ns, sch, target, shapes, ref))
    out["gflops"] = FLOPS[ns.workload] / (out["best_ms"] * 1e-3) / 1e9
    out["numpy_ms"] = numpy_probe_ms(ns.repeat)
    out["tvm_num_threads"] = os.environ.get("TVM_NUM_THREADS")
    return out


def main(argv=None) -> int:
    ns = parse_args(sys.argv[1:] if argv is None else argv)
    # TVM's thread pool takes half the hardware threads on x86 unless told (1 of 2 here)
    os.environ.setdefault("TVM_NUM_THREADS", str(ns.num_cores))
    if ns.serve and ns.time_kernel:
        return serve(lambda: load_kernel(ns))
    try:
        out, status = (time_kernel(ns) if ns.time_kernel else run(ns)), 0
    except Exception as err:  # noqa: BLE001 - reported to the driver as JSON
        traceback.print_exc()
        out, status = {"workload": ns.workload, "trials": ns.trials,
                       "error": f"{type(err).__name__}: {err}"}, 1
    sys.stdout.flush()
    print(json.dumps(out), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
