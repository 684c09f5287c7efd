"""Offline evaluation of the learned cost model: leave one workload out.

    python3 scripts/eval_cost_model.py LOG [LOG ...] [--top-k 10] [--seed 0] [--json out]

The records of all logs are grouped by workload (key and target).  For each workload W
with at least two valid records, an XGBModel is trained on the records of the other
workloads and scores W's valid records; the scores are compared with the measured
throughput.  Reported per held-out workload and on average:

- pairwise ranking accuracy: over pairs with different costs, the share the model orders
  like the measurements (0.5 = chance);
- R^2 of the predicted score against the normalized throughput ``best cost / cost``
  (sklearn.metrics.r2_score; the model is trained on that target);
- top-k recall: the share of the k fastest records found among the k best-scored.

A RandomModel row gives the chance level.  Built-in workloads are registered by
``autosched.catalog``; records of unknown workloads or stale steps are skipped.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
from sklearn.metrics import r2_score
from sklearn.model_selection import LeaveOneGroupOut

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from autosched import catalog  # noqa: E402,F401  (registers the built-in workloads)
from autosched.cost_model import RandomModel, XGBModel, XGBParams  # noqa: E402
from autosched.errors import InvalidStepError, WorkloadError  # noqa: E402
from autosched.measure import MeasureInput, MeasureResult  # noqa: E402
from autosched.steps import serialize  # noqa: E402
from autosched.task import SearchTask  # noqa: E402
from records import load_records  # noqa: E402


def load_groups(logs) -> dict:
    """workload (key, target) -> list of (MeasureInput, MeasureResult)."""
    groups: dict = {}
    tasks: dict = {}
    for log in logs:
        for rec in load_records(log):
            key = (rec.input.workload_key, rec.input.target)
            try:
                task = tasks.get(key) or tasks.setdefault(
                    key, SearchTask(workload_key=key[0], target=key[1]))
                state = serialize.state_from_record(task, rec)
            except (WorkloadError, InvalidStepError):
                continue
            r = rec.result
            res = MeasureResult(list(r.costs), r.error_no, "", r.all_cost, r.timestamp)
            groups.setdefault(key, []).append((MeasureInput(task, state), res))
    return groups


def pairwise_accuracy(scores, throughput) -> float:
    s, t = np.asarray(scores), np.asarray(throughput)
    ds, dt = s[:, None] - s[None, :], t[:, None] - t[None, :]
    mask = dt > 0
    return float(((ds > 0) & mask).sum() / max(mask.sum(), 1))


def top_k_recall(scores, throughput, k: int) -> float:
    k = min(k, len(scores))
    best = set(np.argsort(-np.asarray(throughput), kind="stable")[:k])
    picked = set(np.argsort(-np.asarray(scores), kind="stable")[:k])
    return len(best & picked) / k


def evaluate(model, held_out, k: int) -> dict:
    valid = [(i, r) for i, r in held_out if r.error_no == 0]
    task = valid[0][0].task
    t0 = time.perf_counter()
    scores = np.array(model.predict(task, [i.state for i, _ in valid]))
    pred_s = time.perf_counter() - t0
    costs = np.array([r.mean_cost for _, r in valid])
    norm = costs.min() / costs
    return {"n": len(valid), "pairwise_acc": pairwise_accuracy(scores, 1.0 / costs),
            "r2": float(r2_score(norm, scores)), f"top{k}_recall":
            top_k_recall(scores, 1.0 / costs, k), "predict_ms_per_state":
            1e3 * pred_s / len(valid)}


def run(groups: dict, k: int, seed: int, params: XGBParams) -> dict:
    keys = sorted(groups)
    items = [(ki, pair) for ki, key in enumerate(keys) for pair in groups[key]]
    labels = np.array([ki for ki, _ in items])
    out = {}
    for train_idx, test_idx in LeaveOneGroupOut().split(items, groups=labels):
        key = keys[labels[test_idx[0]]]
        held = [items[i][1] for i in test_idx]
        if sum(r.error_no == 0 for _, r in held) < 2:
            continue
        model = XGBModel(params, seed=seed)
        t0 = time.perf_counter()
        model.update([items[i][1][0] for i in train_idx], [items[i][1][1] for i in train_idx])
        train_s = time.perf_counter() - t0
        res = evaluate(model, held, k)
        res["train_s"] = train_s
        res["random"] = evaluate(RandomModel(seed), held, k)
        out[key[0]] = res
    return out


def _print(results: dict, k: int) -> None:
    print(f"{'held-out workload':44s} {'n':>5s} {'pair':>6s} {'R^2':>7s} {'top' + str(k):>6s}"
          f" {'rand pair':>9s} {'rand top':>8s} {'train s':>8s}")
    for key, r in results.items():
        print(f"{key[:44]:44s} {r['n']:5d} {r['pairwise_acc']:6.3f} {r['r2']:7.3f} "
              f"{r[f'top{k}_recall']:6.2f} {r['random']['pairwise_acc']:9.3f} "
              f"{r['random'][f'top{k}_recall']:8.2f} {r['train_s']:8.2f}")
    if results:
        mean = {m: float(np.mean([r[m] for r in results.values()]))
                for m in ("pairwise_acc", "r2", f"top{k}_recall")}
        print(f"{'mean':44s} {'':5s} {mean['pairwise_acc']:6.3f} {mean['r2']:7.3f} "
              f"{mean[f'top{k}_recall']:6.2f}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("logs", nargs="+", help="tuning logs (JSON lines records)")
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=XGBParams.num_boost_round)
    p.add_argument("--json", default=None, help="also write the results as JSON here")
    ns = p.parse_args(argv)
    groups = load_groups(ns.logs)
    if len(groups) < 2:
        print(f"need records of at least 2 workloads, found {len(groups)}", file=sys.stderr)
        return 1
    params = XGBParams(num_boost_round=ns.rounds, num_warmup_sample=0)
    results = run(groups, ns.top_k, ns.seed, params)
    _print(results, ns.top_k)
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
