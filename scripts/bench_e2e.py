"""End-to-end latency against onnxruntime, side by side in one run.

    python3 scripts/bench_e2e.py [--models resnet18 bert_layer] [--log tuned.json]

Per model (``relay.testing.onnx_models.MODELS``, seeded weights): import with
``from_onnx``, build at opt_level 3 with default schedules (and, with ``--log``, again
with the tuning log under ``ApplyHistoryBest``), check the output against onnxruntime's,
then time onnxruntime (2 intra-op threads, spinning off so its idle threads do not steal
the cores from the next measurement) and ours in alternation, ``--rounds`` rounds of
``--number`` runs each; each latency is the median over rounds, and the ratio is taken
per round (the machines are noisy: only side-by-side ratios are meaningful).  Also prints the top 5
kernels by time of the default build.  Writes results/bench_e2e.json.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import time

import numpy as np
import onnxruntime as ort

import autosched as auto
import compiler
from compiler import relay
from compiler.relay.backend.graph_executor import GraphModule, profile
from compiler.relay.testing import onnx_models


def _build(mod, params, log=None):
    t0 = time.perf_counter()
    if log:
        with auto.ApplyHistoryBest(log), compiler.transform.PassContext(
                opt_level=3, config={"relay.backend.use_auto_scheduler": True}):
            lib = relay.build(mod, "llvm", params=params)
    else:
        with compiler.transform.PassContext(opt_level=3):
            lib = relay.build(mod, "llvm", params=params)
    return lib, time.perf_counter() - t0


def _time(fn, number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def ort_session(model):
    """onnxruntime on 2 intra-op threads, spinning off (its idle threads would otherwise
    steal the cores from the next measurement)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def race(sess, x, ref, mods: dict, rounds: int, number: int, row: dict) -> None:
    """Check every module's output against onnxruntime's ``ref``, then time onnxruntime
    and the modules in alternation; medians and per-round ratios go into ``row``."""
    for kind, m in mods.items():
        m.set_input("data", x)
        m.run()
        out = m.get_output(0).numpy()
        row[f"{kind}_rel_err"] = float(np.abs(out - ref).max() / np.abs(ref).max())
    samples: dict = {k: [] for k in ["ort", *mods]}
    for _ in range(rounds):
        samples["ort"].append(_time(lambda: sess.run(None, {"data": x}), number))
        for kind, m in mods.items():
            samples[kind].append(_time(m.run, number))
    row["ort_ms"] = round(statistics.median(samples["ort"]) * 1e3, 3)
    for kind in mods:
        row[f"{kind}_ms"] = round(statistics.median(samples[kind]) * 1e3, 3)
        row[f"{kind}_vs_ort"] = round(statistics.median(
            a / b for a, b in zip(samples[kind], samples["ort"])), 3)
        row[f"{kind}_speedup_vs_default"] = round(statistics.median(
            d / a for a, d in zip(samples[kind], samples["default"])), 3)


def bench(name: str, rounds: int, number: int, log=None) -> dict:
    model, inputs = onnx_models.MODELS[name]()
    x = np.random.default_rng(0).standard_normal(inputs["data"]).astype("float32")
    sess = ort_session(model)
    ref = sess.run(None, {"data": x})[0]
    mod, params = relay.frontend.from_onnx(model)
    builds = {"default": _build(mod, params)}
    if log:
        builds["tuned"] = _build(mod, params, log)
    row: dict = {"model": name}
    mods = {}
    for kind, (lib, secs) in builds.items():
        row[f"{kind}_build_s"] = round(secs, 2)
        mods[kind] = GraphModule(lib["default"](compiler.cpu(0)))
    race(sess, x, ref, mods, rounds, number, row)
    row["top_kernels"] = profile(mods["default"])[:5]
    return row


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=["resnet18", "bert_layer", "mobilenet_v2",
                                                    "mlp"], choices=sorted(onnx_models.MODELS))
    ap.add_argument("--log", default=None, help="tuning log: also build and time it tuned")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--number", type=int, default=10)
    ap.add_argument("--out", default="results/bench_e2e.json")
    args = ap.parse_args(argv)
    rows = [bench(n, args.rounds, args.number, args.log) for n in args.models]
    cols = ["model", "ort_ms", "default_ms", "default_vs_ort"]
    if args.log:
        cols += ["tuned_ms", "tuned_vs_ort"]
    print(" | ".join(f"{c:>14}" for c in cols))
    for r in rows:
        print(" | ".join(f"{r[c]!s:>14}" for c in cols))
    for r in rows:
        print(f"{r['model']}: top kernels of the default build (ms per run):")
        for k in r["top_kernels"]:
            print(f"    {k['kernel']:<44} x{k['calls']}  {k['ms']:8.3f}  {k['share']:6.1%}")
    path = pathlib.Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cores": os.cpu_count(), "date": time.strftime("%F %T"),
                                "rows": rows}, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
