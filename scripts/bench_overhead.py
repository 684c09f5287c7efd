"""Search-overhead benchmark: ``bench_tune``'s tuning runs, this tree against another,
in alternating fresh processes, and where each run's wall time went.

    python3 scripts/bench_overhead.py --against /tmp/old-tree [--workloads matmul:256 ...]
                                      [--seeds 0 1 2] [--json results/bench_overhead.json]

Why: ``bench_tune`` reports the share of a run's wall time outside building and running
candidates (the search overhead), but on these shared VMs the same run's search and
builds take 1.3-1.5x longer from one day to the next, so figures of two sessions do not
show what a change did.  Here every (workload, seed) is tuned by both trees, one after
the other, in fresh interpreters (``PYTHONPATH`` puts the other tree first), exactly as
``bench_tune`` tunes it (its ``tune_once``: the budgets' calls in one process, 64 then
136 more trials); the order alternates from seed to seed.  Reported per run: wall
seconds, the overhead share, the search rounds' seconds and the rest (neither search nor
build nor run: e.g. waiting for an import), and per workload the medians and the median
ratio of the paired overheads (this / other).  Writes JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent

# run in the child: bench_tune's tuning of one (workload, seed), its statistics as JSON
_CHILD = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("bench_tune", {bench!r})
bt = importlib.util.module_from_spec(spec); spec.loader.exec_module(bt)
import autosched
name, args = bt.parse_workload({workload!r})
r = bt.tune_once(name, args, "xgb", {budgets!r}, {seed!r}, 64, 4, 4)
stats = r.pop("stats")
print("RESULT " + json.dumps({{"tree": autosched.__file__, "wall_s": r["wall_s"],
      "overhead_share": r["overhead_share"], "candidates_per_s": r["candidates_per_s"],
      **stats}}))
"""


def run_one(tree: str | None, workload: str, seed: int, budgets) -> dict:
    """One tuning run in a fresh interpreter, with ``tree`` first on the path (None:
    this tree)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([tree] + [p for p in [env.get("PYTHONPATH")] if p])
    code = _CHILD.format(bench=str(HERE / "bench_tune.py"), workload=workload,
                         budgets=list(budgets), seed=seed)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=3600, cwd=tree or str(ROOT))
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"bench_overhead: the run of {workload} seed {seed} "
                         f"({tree or 'this tree'}) failed:\n{out.stderr[-2000:]}")
    res = json.loads(lines[-1][len("RESULT "):])
    expected = str(pathlib.Path(tree or ROOT).resolve())
    if not str(pathlib.Path(res["tree"]).resolve()).startswith(expected):
        raise SystemExit(f"bench_overhead: the run imported {res['tree']}, not the tree "
                         f"at {expected}")
    return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--against", required=True, metavar="TREE",
                   help="another source tree (e.g. a git worktree of an older commit)")
    p.add_argument("--workloads", nargs="+", default=["matmul:256", "depthwise"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--trials", type=int, nargs="+", default=[64, 200])
    p.add_argument("--json", default="results/bench_overhead.json")
    ns = p.parse_args(argv)
    out: dict = {}
    print(f"{'workload':14s} {'seed':>4s} {'tree':5s} {'wall s':>7s} {'search s':>8s} "
          f"{'rest s':>6s} {'overhead':>8s}")
    for spec in ns.workloads:
        runs: dict = {"this": [], "other": []}
        for k, seed in enumerate(ns.seeds):
            order = [("this", None), ("other", ns.against)]
            for label, tree in (order if k % 2 == 0 else order[::-1]):
                r = run_one(tree, spec, seed, sorted(ns.trials))
                r["seed"] = seed
                runs[label].append(r)
                print(f"{spec:14s} {seed:4d} {label:5s} {r['wall_s']:7.2f} "
                      f"{r['search_s']:8.2f} {r['rest_s']:6.2f} "
                      f"{r['overhead_share']:8.1%}", flush=True)
        ratios = [a["overhead_share"] / b["overhead_share"]
                  for a, b in zip(runs["this"], runs["other"]) if b["overhead_share"] > 0]
        out[spec] = {**runs, "overhead_ratios": ratios,
                     "overhead_ratio_median": statistics.median(ratios) if ratios else None}
    print(f"\n{'workload':14s} {'this':>8s} {'other':>8s} {'ratio':>6s} {'min-max':>11s} "
          f"{'rest this/other':>16s}")
    for spec, res in out.items():
        med = {k: statistics.median(r["overhead_share"] for r in res[k]) for k in ("this", "other")}
        rest = {k: statistics.median(r["rest_s"] for r in res[k]) for k in ("this", "other")}
        rs = res["overhead_ratios"]
        print(f"{spec:14s} {med['this']:8.1%} {med['other']:8.1%} "
              f"{res['overhead_ratio_median']:6.2f} {f'{min(rs):.2f}-{max(rs):.2f}':>11s} "
              f"{rest['this']:7.2f} / {rest['other']:.2f}")
    os.makedirs(os.path.dirname(ns.json) or ".", exist_ok=True)
    with open(ns.json, "w") as f:
        json.dump({"against": ns.against, "seeds": ns.seeds, "trials": ns.trials,
                   "workloads": out}, f, indent=2)
    print(f"wrote {ns.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
