"""Default topi CPU schedules against numpy (and PyTorch CPU if installed), in one run.

    python3 scripts/bench_topi.py [--json results/bench_topi.json] [--repeat 7] [--quick]
                                  [--threads N] [--only dense,conv2d]

Workloads (the untuned "fallback" a model gets):
  dense      (1024, 1024) x (1024, 1024)^T            numpy: a @ w.T
  dense_pack the same, the weight packed "NC{nr}n" (relay's AlterOpLayout: nr = two
             vectors)                                 numpy: as dense
  bert_ffn   (128, 768) x (3072, 768)^T, plain and packed   numpy: a @ w.T
  conv2d     (1, 64, 56, 56) x (64, 64, 3, 3), pad 1   numpy: im2col (as_strided) + matmul
  conv_deep / conv_packed  (1, 512, 7, 7) x (512, 512, 3, 3), pad 1, the weight OIHW and
             packed "OIHW{v}o" (relay's AlterOpLayout)   numpy: as conv2d
  depthwise  (1, 32, 112, 112) x (32, 1, 3, 3), pad 1  numpy: sum of 9 shifted slices
  softmax    (128, 1000), last axis                    numpy: exp(x - max) / sum
  maxpool    (1, 64, 112, 112), 3x3, stride 2, pad 1   numpy: max of 9 strided slices
Every kernel is checked against the numpy result before it is timed.  Times are
medians over ``--repeat`` repeats (the machine may be shared: medians, not means);
``ratio`` is numpy time / our time (> 1: we are faster).  ``--threads N`` limits both
sides to N threads (our target "llvm -num-cores=N", OPENBLAS/OMP/MKL_NUM_THREADS for
numpy and torch): on a machine shared with other busy processes, a 2-thread fork-join
can wait a whole scheduler time slice (~8 ms), which single-thread numbers avoid.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time


def _threads_from_argv(argv) -> int | None:
    """``--threads N`` must act before numpy/torch start their thread pools."""
    for k, a in enumerate(argv):
        if a == "--threads" and k + 1 < len(argv):
            return int(argv[k + 1])
        if a.startswith("--threads="):
            return int(a.split("=", 1)[1])
    return None


THREADS = _threads_from_argv(sys.argv)
if THREADS:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = str(THREADS)

import numpy as np  # noqa: E402
from numpy.lib.stride_tricks import as_strided  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from compiler import build, te, topi  # noqa: E402
from compiler.relay.transform.alter_op_layout import dense_pack_width, pack_oihw  # noqa: E402
from compiler.runtime.module import as_aligned  # noqa: E402
from compiler.target import parse_target  # noqa: E402

try:  # optional comparison, never a dependency
    import torch  # noqa: E402
except ImportError:  # pragma: no cover - depends on the machine
    torch = None


def _median_time(fn, repeat: int, min_s: float = 0.05) -> float:
    fn()
    n, t = 1, 0.0
    while True:                       # calls per repeat so that a repeat lasts >= min_s
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - t0
        if t >= min_s or n >= 1 << 16:
            break
        n = max(n * 2, int(n * min_s / max(t, 1e-9)) + 1)
    times = [t / n]
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times)


# ---------------------------------------------------------------- numpy references
def np_conv2d(x, w, pad):
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    s = xp.strides
    cols = as_strided(xp, (n, c, kh, kw, oh, ow), (s[0], s[1], s[2], s[3], s[2], s[3]))
    return (w.reshape(oc, -1) @ cols.reshape(n, c * kh * kw, oh * ow)).reshape(n, oc, oh, ow)


def np_depthwise(x, w, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kh, kw = w.shape[2:]
    oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    out = np.zeros((x.shape[0], x.shape[1], oh, ow), x.dtype)
    for i in range(kh):
        for j in range(kw):
            out += xp[:, :, i:i + oh, j:j + ow] * w[None, :, 0, i, j, None, None]
    return out


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_maxpool(x, k, s, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    oh = (xp.shape[2] - k) // s + 1
    ow = (xp.shape[3] - k) // s + 1
    out = np.full((x.shape[0], x.shape[1], oh, ow), -np.inf, x.dtype)
    for i in range(k):
        for j in range(k):
            np.maximum(out, xp[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s], out=out)
    return out


# ---------------------------------------------------------------- workloads
def _packed_dense(rng, name, a, w, shape):
    """dense with the weight packed as relay's AlterOpLayout stores it."""
    nr = dense_pack_width(w.shape[0])
    wp = topi.nn.pack_dense_weight(w, nr)
    A, WP = te.placeholder(a.shape, name="A"), te.placeholder(wp.shape, name="W")
    yield dict(name=name, shape=f"{shape} NC{nr}n", flops=2 * a.shape[0] * w.size,
               tensors=[A, WP], out=topi.nn.dense_pack(A, WP), sched=topi.x86.schedule_dense,
               inputs=[a, wp], ref=lambda: a @ w.T,
               torch=lambda t: torch.nn.functional.linear(t[0], torch.from_numpy(w)))


def workloads(rng):
    f32 = np.float32
    a, w = rng.standard_normal((1024, 1024), f32), rng.standard_normal((1024, 1024), f32)
    A, W = te.placeholder(a.shape, name="A"), te.placeholder(w.shape, name="W")
    yield dict(name="dense", shape="1024x1024x1024", flops=2 * 1024 ** 3,
               tensors=[A, W], out=topi.nn.dense(A, W), sched=topi.x86.schedule_dense,
               inputs=[a, w], ref=lambda: a @ w.T,
               torch=lambda t: torch.nn.functional.linear(t[0], t[1]))
    yield from _packed_dense(rng, "dense_pack", a, w, "1024x1024x1024")
    ab, wb = rng.standard_normal((128, 768), f32), rng.standard_normal((3072, 768), f32)
    AB, WB = te.placeholder(ab.shape, name="A"), te.placeholder(wb.shape, name="W")
    yield dict(name="bert_ffn", shape="128x3072x768", flops=2 * 128 * 768 * 3072,
               tensors=[AB, WB], out=topi.nn.dense(AB, WB), sched=topi.x86.schedule_dense,
               inputs=[ab, wb], ref=lambda: ab @ wb.T,
               torch=lambda t: torch.nn.functional.linear(t[0], t[1]))
    yield from _packed_dense(rng, "bert_ffn_pack", ab, wb, "128x3072x768")
    x, k = rng.standard_normal((1, 64, 56, 56), f32), rng.standard_normal((64, 64, 3, 3), f32)
    X, K = te.placeholder(x.shape, name="X"), te.placeholder(k.shape, name="K")
    yield dict(name="conv2d", shape="(1,64,56,56)x(64,64,3,3) p1",
               flops=2 * 64 * 64 * 9 * 56 * 56, tensors=[X, K],
               out=topi.nn.conv2d_nchw(X, K, 1, 1, 1), sched=topi.x86.schedule_conv2d_nchw,
               inputs=[x, k], ref=lambda: np_conv2d(x, k, 1),
               torch=lambda t: torch.nn.functional.conv2d(t[0], t[1], padding=1))
    # a deep ResNet layer: its width (7) does not fill vectors, so relay's AlterOpLayout
    # packs the weight "OIHW8o"; both layouts, side by side
    xd, kd = rng.standard_normal((1, 512, 7, 7), f32), rng.standard_normal((512, 512, 3, 3), f32)
    v = topi.x86.utils.vector_lanes("float32")
    kp = pack_oihw(kd, v)
    XD, KD, KP = (te.placeholder(a.shape, name=n) for a, n in ((xd, "X"), (kd, "K"), (kp, "K")))
    for name, kk, KK, layout in (("conv_deep", kd, KD, "OIHW"),
                                 ("conv_packed", kp, KP, f"OIHW{v}o")):
        yield dict(name=name, shape=f"(1,512,7,7)x(512,512,3,3) {layout}",
                   flops=2 * 512 * 512 * 9 * 49, tensors=[XD, KK],
                   out=topi.nn.conv2d(XD, KK, 1, 1, 1, "NCHW", layout),
                   sched=topi.x86.schedule_conv2d_nchw, inputs=[xd, kk],
                   ref=lambda: np_conv2d(xd, kd, 1),
                   torch=lambda t: torch.nn.functional.conv2d(t[0], torch.from_numpy(kd),
                                                              padding=1))
    x2, k2 = rng.standard_normal((1, 32, 112, 112), f32), rng.standard_normal((32, 1, 3, 3), f32)
    X2, K2 = te.placeholder(x2.shape, name="X"), te.placeholder(k2.shape, name="K")
    yield dict(name="depthwise", shape="(1,32,112,112)x(32,1,3,3) p1",
               flops=2 * 32 * 9 * 112 * 112, tensors=[X2, K2],
               out=topi.nn.depthwise_conv2d_nchw(X2, K2, 1, 1, 1),
               sched=topi.x86.schedule_depthwise_conv2d_nchw, inputs=[x2, k2],
               ref=lambda: np_depthwise(x2, k2, 1),
               torch=lambda t: torch.nn.functional.conv2d(t[0], t[1], padding=1, groups=32))
    s = rng.standard_normal((128, 1000), f32) * 4
    S = te.placeholder(s.shape, name="S")
    yield dict(name="softmax", shape="(128,1000)", flops=5 * 128 * 1000, tensors=[S],
               out=topi.nn.softmax(S), sched=topi.x86.schedule_softmax, inputs=[s],
               ref=lambda: np_softmax(s), torch=lambda t: torch.softmax(t[0], -1))
    p = rng.standard_normal((1, 64, 112, 112), f32)
    P = te.placeholder(p.shape, name="P")
    yield dict(name="maxpool", shape="(1,64,112,112) 3x3 s2 p1", flops=9 * 64 * 56 * 56,
               tensors=[P], out=topi.nn.pool2d(P, 3, 2, 1, 1, "max"),
               sched=topi.x86.schedule_pool, inputs=[p], ref=lambda: np_maxpool(p, 3, 2, 1),
               torch=lambda t: torch.nn.functional.max_pool2d(t[0], 3, 2, 1))


def bench_one(wl, repeat: int, target: str = "llvm") -> dict:
    out = wl["out"]
    s = wl["sched"](out)
    t0 = time.perf_counter()
    mod = build(s, wl["tensors"] + [out], target=target, name=wl["name"])
    build_s = time.perf_counter() - t0
    args = [as_aligned(a) for a in wl["inputs"]]
    res = as_aligned(np.zeros([int(d.value) for d in out.shape], out.dtype))
    mod(*args, res)
    ref = wl["ref"]()
    np.testing.assert_allclose(res, ref, rtol=1e-3, atol=1e-3)
    prof = mod.time_evaluator(number=1, repeat=repeat, min_repeat_ms=50)(*args, res)
    ours = prof.median
    theirs = _median_time(wl["ref"], repeat)
    row = dict(op=wl["name"], shape=wl["shape"], ours_ms=ours * 1e3, numpy_ms=theirs * 1e3,
               ratio_vs_numpy=theirs / ours, ours_gflops=wl["flops"] / ours / 1e9,
               build_s=build_s)
    if torch is not None:
        targs = [torch.from_numpy(a) for a in wl["inputs"]]
        with torch.no_grad():
            tt = _median_time(lambda: wl["torch"](targs), repeat)
        row.update(torch_ms=tt * 1e3, ratio_vs_torch=tt / ours)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default="results/bench_topi.json")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="3 repeats")
    ap.add_argument("--only", default="", help="comma-separated op names")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for both sides (default: all cores)")
    args = ap.parse_args(argv)
    target = f"llvm -num-cores={args.threads}" if args.threads else "llvm"
    if torch is not None and args.threads:
        torch.set_num_threads(args.threads)
    load_before = os.getloadavg()[0]
    repeat = 3 if args.quick else args.repeat
    only = {x for x in args.only.split(",") if x}
    rows = []
    for wl in workloads(np.random.default_rng(0)):
        if only and wl["name"] not in only:
            continue
        rows.append(bench_one(wl, repeat, target))
        _print_row(rows[-1], header=len(rows) == 1)
    tgt = parse_target(target)
    meta = dict(target=str(tgt), vector_bits=tgt.vector_bits, threads=tgt.num_cores,
                machine=platform.processor() or platform.machine(),
                numpy=np.__version__, torch=getattr(torch, "__version__", None),
                load_avg_before=load_before, load_avg_after=os.getloadavg()[0],
                repeat=repeat)
    print(f"target {tgt}; load average {load_before:.2f} -> {meta['load_avg_after']:.2f}")
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(dict(meta=meta, results=rows), f, indent=2)
        print(f"wrote {args.json}")
    return 0


def _print_row(r: dict, header: bool) -> None:
    cols = ["op", "shape", "ours ms", "numpy ms", "x numpy", "GFLOPS"]
    if "torch_ms" in r:
        cols += ["torch ms", "x torch"]
    if header:
        print(f"{cols[0]:<10} {cols[1]:<30} " + " ".join(f"{c:>9}" for c in cols[2:]))
    vals = [r["ours_ms"], r["numpy_ms"], r["ratio_vs_numpy"], r["ours_gflops"]]
    if "torch_ms" in r:
        vals += [r["torch_ms"], r["ratio_vs_torch"]]
    print(f"{r['op']:<10} {r['shape']:<30} " + " ".join(f"{v:>9.3f}" for v in vals), flush=True)


if __name__ == "__main__":
    sys.exit(main())
