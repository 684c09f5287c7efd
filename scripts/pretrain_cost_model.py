"""Pre-train the cost model shipped with the package (the search's prior before a task
has records of its own).

    python3 scripts/pretrain_cost_model.py generate --out DIR [--trials 200]
    python3 scripts/pretrain_cost_model.py fit DIR [DIR ...] [--out FILE]
    python3 scripts/pretrain_cost_model.py check LOG [LOG ...] [--prior FILE]

``generate`` tunes every workload of ``SUITE`` on this machine (one log per workload);
``fit`` trains an XGBModel on all records of the given logs and writes it (JSON, no
pickle); ``check`` scores held-out logs with the prior and with a model trained from
scratch on their first round, the offline evidence that the prior helps.

The suite's shapes are chosen to differ from every benchmark workload (``bench_tune``'s
seven and the ResNet-18 and BERT tasks of ``bench_network``), so the benchmarks measure
transfer to unseen shapes, never recall of a shape the prior was trained on.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from eval_cost_model import load_groups  # noqa: E402

import autosched as auto  # noqa: E402
from autosched import catalog  # noqa: E402,F401  (registers the built-in workloads)
from autosched.cost_model import XGBModel, XGBParams  # noqa: E402
from autosched.cost_model.pretrained import PRETRAINED_PATH  # noqa: E402

# (catalog function, args): operator families of the benchmarks, other shapes
SUITE = [
    ("matmul", (192, 192, 192)),
    ("matmul", (384, 320, 448)),
    ("matmul", (640, 768, 384)),
    ("dense", (64, 512, 1536)),
    ("dense_bias_relu", (256, 1024, 384)),
    ("dense_bias_relu", (32, 640, 960)),
    ("batch_matmul", (4, 96, 80, 112)),
    ("conv2d_nchw", (1, 48, 40, 40, 96, 3, 3, 1, 1)),
    ("conv2d_nchw", (1, 96, 20, 20, 192, 3, 3, 1, 1)),
    ("conv2d_nchw", (1, 32, 64, 64, 48, 3, 3, 2, 1)),
    ("conv2d_nchw", (1, 96, 24, 24, 160, 1, 1, 1, 0)),
    ("conv2d_nchw", (1, 3, 96, 96, 24, 7, 7, 2, 3)),
    ("conv2d_nhwc", (1, 24, 24, 96, 128, 3, 3, 1, 1)),
    ("conv2d_bias_relu", (1, 80, 28, 28, 80, 3, 3, 1, 1)),
    ("conv2d_bias_relu", (1, 40, 48, 48, 64, 3, 3, 2, 1)),
    ("conv2d_bias_relu", (1, 48, 36, 36, 96, 1, 1, 2, 0)),
    ("depthwise_conv2d", (1, 48, 56, 56, 3, 1, 1)),
    ("depthwise_conv2d", (1, 96, 30, 30, 3, 2, 1)),
    ("softmax", (64, 1536)),
    ("softmax", (256, 384)),
]


def _log_name(func, args) -> str:
    return f"{func}_" + "_".join(str(a) for a in args) + ".json"


def generate(out: str, trials: int, per_round: int) -> None:
    os.makedirs(out, exist_ok=True)
    for i, (func, args) in enumerate(SUITE):
        log = os.path.join(out, _log_name(func, args))
        if os.path.exists(log):
            print(f"{func}{args}: {log} exists, skipped", flush=True)
            continue
        task = auto.SearchTask(func=func, args=args, target="llvm")
        # the log only gets complete rounds: a partial file from an interrupted run
        # would be kept otherwise, so write to a temporary name first
        tmp = log + ".part"
        if os.path.exists(tmp):
            os.remove(tmp)
        opts = auto.TuningOptions(num_measure_trials=trials, num_measures_per_round=per_round,
                                  verbose=0, measure_callbacks=[auto.RecordToFile(tmp)])
        policy = auto.SketchPolicy(task, XGBModel(seed=i), seed=i, verbose=0)
        t0 = time.perf_counter()
        stats = task.tune(opts, policy)
        os.replace(tmp, log)
        print(f"{func}{args}: {stats.trials} trials in {time.perf_counter() - t0:.0f} s, "
              f"best {task.compute_dag.flop_ct / stats.best_cost / 1e9:.1f} GFLOPS", flush=True)


def _logs(dirs) -> list:
    out: list = []
    for d in dirs:
        out += sorted(glob.glob(os.path.join(d, "*.json"))) if os.path.isdir(d) else [d]
    return out


def fit(dirs, out: str, rounds: int, depth: int) -> XGBModel:
    """A fixed number of rounds of shallower trees than the tuning model's: on held-out
    logs (``check``) depth 6 x 60 rounds ranked other shapes as well as or better than
    depth 8-10 with early stopping, which fit the training shapes more closely."""
    model = XGBModel(XGBParams(max_depth=depth, num_boost_round=rounds,
                               early_stopping_rounds=None), seed=0, prior=None)
    n = 0
    for log in _logs(dirs):
        n += model.add_from_file(log)
    model.train()
    model.save(out)
    print(f"trained on {n} records of {len(_logs(dirs))} logs -> {out} "
          f"({os.path.getsize(out) / 1e3:.0f} kB)")
    return model


def _pairs(log):
    """(MeasureInput, MeasureResult) of a log's records, in log order."""
    groups = load_groups([log])
    return [p for v in groups.values() for p in v]


def _top_median(model, pairs, k: int) -> float:
    """Median normalized throughput (best of the log = 1) of the k best-scored records."""
    valid = [(i, r) for i, r in pairs if r.error_no == 0]
    scores = np.array(model.predict(valid[0][0].task, [i.state for i, _ in valid]))
    thr = np.array([1.0 / r.mean_cost for _, r in valid])
    return float(np.median(thr[np.argsort(-scores, kind="stable")[:k]]))


def check(holdout, prior: str, k: int, first: int, rounds: int) -> None:
    """Offline evidence: for each held-out log, the records the prior would pick first
    and, after fine-tuning on the log's first ``first`` records, the picks among the rest;
    against a model trained from scratch on the same records and a random pick."""
    print(f"{'held-out log':44s} {'random':>7s} {'prior':>7s} | after {first}: "
          f"{'random':>7s} {'scratch':>7s} {'prior':>7s} {'tuned':>7s}")
    for log in holdout:
        pairs = _pairs(log)
        if sum(r.error_no == 0 for _, r in pairs[first:]) < k:
            print(f"{os.path.basename(log)[:44]:44s} skipped: fewer than {k} valid records "
                  f"after the first {first}")
            continue
        best = max(1.0 / r.mean_cost for _, r in pairs if r.error_no == 0)
        rnd = np.median([1.0 / r.mean_cost for _, r in pairs if r.error_no == 0])
        pri = XGBModel(seed=0, prior=prior)
        head, rest = pairs[:first], pairs[first:]
        rnd_rest = np.median([1.0 / r.mean_cost for _, r in rest if r.error_no == 0])
        scratch = XGBModel(XGBParams(num_warmup_sample=0), seed=0, prior=None)
        scratch.update([i for i, _ in head], [r for _, r in head])
        tuned = XGBModel(XGBParams(prior_warmup_sample=0, num_boost_round=rounds), seed=0,
                         prior=prior)
        tuned.update([i for i, _ in head], [r for _, r in head])
        row = [rnd, _top_median(pri, pairs, k), rnd_rest, _top_median(scratch, rest, k),
               _top_median(pri, rest, k), _top_median(tuned, rest, k)]
        print(f"{os.path.basename(log)[:44]:44s} " + " ".join(
            f"{v / best:7.2f}" for v in row[:2]) + " |        " + " ".join(
            f"{v / best:7.2f}" for v in row[2:]), flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--out", required=True)
    g.add_argument("--trials", type=int, default=200)
    g.add_argument("--per-round", type=int, default=64)
    f = sub.add_parser("fit")
    f.add_argument("dirs", nargs="+")
    f.add_argument("--out", default=PRETRAINED_PATH)
    f.add_argument("--rounds", type=int, default=60)
    f.add_argument("--depth", type=int, default=6)
    c = sub.add_parser("check")
    c.add_argument("holdout", nargs="+", help="tuning logs the prior was not trained on")
    c.add_argument("--prior", default=PRETRAINED_PATH)
    c.add_argument("--top-k", type=int, default=64)
    c.add_argument("--first", type=int, default=64)
    c.add_argument("--rounds", type=int, default=XGBParams.num_boost_round,
                   help="most boosting rounds of the fine-tuning on the first records")
    ns = p.parse_args(argv)
    if ns.cmd == "generate":
        generate(ns.out, ns.trials, ns.per_round)
    elif ns.cmd == "fit":
        fit(ns.dirs, ns.out, ns.rounds, ns.depth)
    else:
        check(ns.holdout, ns.prior, ns.top_k, ns.first, ns.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
