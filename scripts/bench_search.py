"""Search benchmark: the CPU time of search rounds, by phase, beside an earlier run.

    python3 scripts/bench_search.py [--workloads matmul:512 depthwise ...] [--rounds 4]
        [--repeat 3] [--islands] [--baseline results/bench_search_X.json]
        [--json out.json]

Why: ``bench_tune``'s search overhead is a share of a wall time whose builds vary by
25% from run to run on a shared machine, so it cannot show a search change of 10%.
This times the search alone: per workload, ``rounds`` serial rounds of
``SketchPolicy.pick_states(64)`` (one island of ``--population`` states, as the tuner
evolves beside its helper's; 4 generations; synthetic costs recorded between rounds,
so the model trains from the second round on, as in tuning).  Each phase is timed in
CPU seconds of this process (``time.process_time``: steal time and other processes'
bursts are left out), summed over the rounds after the first (the first round uses
the prior and fills the memos), and the minimum over ``--repeat`` fresh policies is
reported:
- sample: the random initial population;
- mutate: making the next generations (mutations and selection);
- featurize: feature rows of the states the memo does not hold;
- train: training the cost model (lazily, at its first use in a round);
- score: the rest of the cost model's predictions (memo lookups, the booster);
- other: the rest of ``pick_states`` (heaps, keys, picking).

The picks' fingerprint (a hash of their printouts) shows whether two runs searched
alike: a speed-up should change the time, not the fingerprint.  ``--baseline`` adds
the ratio of each round's time to an earlier JSON's.

``--against TREE`` times this tree and another (a worktree of the commit before a
change: its package is imported through ``PYTHONPATH``) in alternating fresh processes,
``--pairs`` pairs in ABBA order, and reports the median of the pairs' ratios: on a
machine whose speed drifts by 20% within minutes, a change of 5% shows only in such
pairs.

``--islands`` times what the serial rounds leave out: the tuner's rounds as ``tune``
runs them, with the default parameters (2048 states split into islands evolved by
helper processes), in wall seconds per round over rounds 3.. (the first trains no
model, the second trains the first booster), with the tuner's wait for its helpers and its
training.  Wall time on a shared machine: compare runs that alternate (e.g. this
commit and, with ``PYTHONPATH``, another), several times.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import os
import pathlib
import random
import statistics
import subprocess
import sys
import tempfile
import time

import autosched as auto
from autosched.cost_model import PRIOR_BUILTIN, XGBModel, xgb_model
from autosched.measure.measurer import MeasureInput, MeasureResult
from autosched.search import evolution, islands
from autosched.search import policy as policy_mod
from autosched.search.evolution import SearchParams
from autosched.search.policy import SketchPolicy

try:    # a tree from before the tuning scope (with --against) times its rounds without it
    from autosched.search.gc_pause import tuning_scope
except ImportError:
    tuning_scope = contextlib.nullcontext
try:    # and one from before the retained heap (search/heap.py) without that
    from autosched.search.heap import retained_heap
except ImportError:
    def retained_heap(enabled=True):
        return contextlib.nullcontext()

DEFAULT_WORKLOADS = ["matmul:256", "matmul:512", "depthwise", "dense_bias_relu"]
PHASES = ("sample", "mutate", "featurize", "train", "score", "other")

# the workload names are bench_tune's (matmul:N or one of its SPECS), parsed by it
_spec = importlib.util.spec_from_file_location(
    "bench_tune", pathlib.Path(__file__).resolve().parent / "bench_tune.py")
bench_tune = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_tune)
parse_workload = bench_tune.parse_workload


class PhaseClock:
    """Exclusive seconds per phase while ``active``, by wrapping the search's functions
    (``close`` removes the wrappers): a phase running inside another (the features
    inside a prediction) is charged to itself only.  By default the serial rounds'
    phases in CPU seconds; ``targets`` ({phase: (owner, attribute)}) and ``timer``
    choose others (``--islands``: wall seconds of the wait and the training)."""

    def __init__(self, targets: dict | None = None, timer=None):
        self.seconds = dict.fromkeys(PHASES if targets is None else targets, 0.0)
        self.active = False
        self._timer = timer         # None: time.process_time, looked up at each call
        self._stack: list = []      # per running wrapped call: its nested phases' time
        self._undo: list = []
        if targets is None:
            targets = {"sample": (policy_mod, "sample_population"),
                       "mutate": (evolution, "next_generation"),
                       "featurize": (xgb_model.XGBModel, "_featurize"),
                       "train": (xgb_model.XGBModel, "train"),
                       "score": (xgb_model.XGBModel, "predict")}
        for phase, (owner, attr) in targets.items():
            self._wrap(owner, attr, phase)

    def _wrap(self, owner, attr: str, phase: str) -> None:
        original = getattr(owner, attr)
        clock, stack = self, self._stack

        def timed(*args, **kwargs):
            if not clock.active:
                return original(*args, **kwargs)
            stack.append(0.0)
            timer = clock._timer or time.process_time
            t0 = timer()
            try:
                return original(*args, **kwargs)
            finally:
                dt = timer() - t0
                clock.seconds[phase] += dt - stack.pop()
                if stack:
                    stack[-1] += dt

        setattr(owner, attr, timed)
        self._undo.append((owner, attr, original))

    def close(self) -> None:
        for owner, attr, original in reversed(self._undo):
            setattr(owner, attr, original)


def _record_synthetic(policy, picks, rng) -> None:
    """Measurements of ``picks`` with made-up costs, so the model trains."""
    policy.record_measured([MeasureInput(policy.task, s) for s in picks],
                           [MeasureResult([1e-3 * (1 + rng.random())], 0, "", 0.1, 0.0)
                            for _ in picks])


def make_policy(func: str, args, params: SearchParams, seed: int) -> SketchPolicy:
    """A fresh SketchPolicy of the built-in workload, scoring with the shipped prior."""
    task = auto.SearchTask(func=func, args=args, target="llvm")
    return SketchPolicy(task, XGBModel(seed=seed, prior=PRIOR_BUILTIN), params=params,
                        seed=seed, verbose=0)


def one_search(func: str, args, rounds: int, population: int, seed: int) -> dict:
    """Phase CPU seconds of rounds 2..``rounds`` of one fresh policy, and its picks'
    fingerprint."""
    params = SearchParams(search_workers=0, evolutionary_search_population=population)
    policy = make_policy(func, args, params, seed)
    rng = random.Random(seed)
    digest = hashlib.sha256()
    clock = PhaseClock()
    total = 0.0
    # rounds as the tuner runs them, their survivors frozen (search/gc_pause.py)
    with tuning_scope(), retained_heap(), contextlib.closing(clock):
        for r in range(rounds):
            clock.active = r >= 1        # the first round fills the memos
            t0 = time.process_time()
            picks = policy.pick_states(64)
            if r >= 1:
                total += time.process_time() - t0
            clock.active = False
            for st in picks:
                digest.update(str(st).encode())
            _record_synthetic(policy, picks, rng)
    phases = dict(clock.seconds)
    phases["other"] = max(0.0, total - sum(v for k, v in phases.items() if k != "other"))
    return {"round_s": total / max(1, rounds - 1),
            "phases_s": {k: v / max(1, rounds - 1) for k, v in phases.items()},
            "fingerprint": digest.hexdigest()[:16]}


def islands_search(func: str, args, rounds: int, seed: int,
                   population: int = SearchParams.evolutionary_search_population) -> dict:
    """Wall seconds per round (rounds 3..``rounds``) of a fresh policy with the default
    parameters (but ``population``) and helpers, the tuner's wait for its helpers and
    its training in them, and the picks' fingerprint."""
    params = SearchParams(evolutionary_search_population=population)
    policy = make_policy(func, args, params, seed)
    rng = random.Random(seed)
    digest = hashlib.sha256()
    clock = PhaseClock({"wait": (islands.IslandRun, "results"),
                        "train": (xgb_model.XGBModel, "train")}, timer=time.perf_counter)
    total = 0.0
    with tuning_scope(), retained_heap(), contextlib.closing(clock):
        for r in range(rounds):
            clock.active = r >= 2
            t0 = time.perf_counter()
            picks = policy.pick_states(64)
            if r >= 2:
                total += time.perf_counter() - t0
            for st in picks:
                digest.update(str(st).encode())
            _record_synthetic(policy, picks, rng)
    n = max(1, rounds - 2)
    return {"round_s": total / n, "wait_s": clock.seconds["wait"] / n,
            "train_s": clock.seconds["train"] / n,
            "helpers": islands.helpers_for(policy.params, policy.num_cores),
            "fingerprint": digest.hexdigest()[:16]}


def bench_islands(text: str, rounds: int, repeat: int) -> dict:
    """``repeat`` island searches of one workload: their mean round time, and whether
    all searched alike."""
    func, args = parse_workload(text)
    runs = [islands_search(func, args, rounds, seed=0) for _ in range(repeat)]
    prints = {r["fingerprint"] for r in runs}
    if len(prints) != 1:
        raise SystemExit(f"bench_search: {text}: repeated searches differ ({prints}); "
                         "the search is not deterministic")
    mean = {k: sum(r[k] for r in runs) / len(runs) for k in ("round_s", "wait_s", "train_s")}
    return dict(mean, args=list(args), rounds=rounds, helpers=runs[0]["helpers"],
                fingerprint=runs[0]["fingerprint"],
                round_s_all=[r["round_s"] for r in runs])


def print_islands_table(results: dict, baseline: dict | None) -> None:
    print(f"{'workload':16s} {'helpers':>7s} {'round s':>8s} {'wait s':>7s} {'train s':>7s} "
          f"{'fingerprint':>16s}" + (f" {'vs before':>9s}" if baseline else ""))
    for name, r in results.items():
        row = (f"{name:16s} {r['helpers']:7d} {r['round_s']:8.3f} {r['wait_s']:7.3f} "
               f"{r['train_s']:7.3f} {r['fingerprint']:>16s}")
        old = (baseline or {}).get("workloads", {}).get(name)
        if old:
            same = "=" if old["fingerprint"] == r["fingerprint"] else "!"
            row += f" {r['round_s'] / old['round_s']:8.2f}{same}"
        elif baseline:
            row += f" {'-':>9s}"
        print(row)


def bench(text: str, rounds: int, population: int, repeat: int) -> dict:
    """The fastest of ``repeat`` searches (by round time), and whether all searched
    alike."""
    func, args = parse_workload(text)
    runs = [one_search(func, args, rounds, population, seed=0) for _ in range(repeat)]
    best = min(runs, key=lambda r: r["round_s"])
    prints = {r["fingerprint"] for r in runs}
    if len(prints) != 1:
        raise SystemExit(f"bench_search: {text}: repeated searches differ ({prints}); "
                         "the search is not deterministic")
    return dict(best, args=list(args), population=population, rounds=rounds,
                round_s_all=[r["round_s"] for r in runs])


def print_table(results: dict, baseline: dict | None) -> None:
    head = f"{'workload':16s} {'round s':>8s} " + " ".join(f"{p:>9s}" for p in PHASES)
    print(head + f" {'fingerprint':>16s}" + (f" {'vs before':>9s}" if baseline else ""))
    for name, r in results.items():
        row = f"{name:16s} {r['round_s']:8.3f} " + " ".join(
            f"{r['phases_s'][p]:9.3f}" for p in PHASES) + f" {r['fingerprint']:>16s}"
        if baseline:
            old = baseline.get("workloads", {}).get(name)
            if old:
                same = "=" if old["fingerprint"] == r["fingerprint"] else "!"
                row += f" {r['round_s'] / old['round_s']:8.2f}{same}"
            else:
                row += f" {'-':>9s}"
        print(row)
    if baseline:
        print("vs before: this run's round time / the baseline's; '=' same picks, "
              "'!' other picks")


def _run_tree(tree: pathlib.Path, args: list) -> dict:
    """This script's JSON for ``args``, run in a fresh process importing the package of
    ``tree``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "r.json"
        env = dict(os.environ, PYTHONPATH=str(tree))
        subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), *args,
                        "--repeat", "1", "--json", str(out)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())


def bench_against(other: str, pairs: int, args: list) -> dict:
    """Per workload, this tree's and ``other``'s round times over ``pairs`` ABBA pairs
    of fresh processes, and the ratio of each pair (this / other)."""
    here = pathlib.Path(__file__).resolve().parents[1]
    there = pathlib.Path(other).resolve()
    if not (there / "autosched" / "__init__.py").exists():
        raise SystemExit(f"bench_search: --against {other}: no autosched package there "
                         "(expected a source tree, e.g. a git worktree)")
    runs: dict = {"this": [], "other": []}
    for k in range(pairs):
        order = [("this", here), ("other", there)]
        for name, tree in (order if k % 2 == 0 else order[::-1]):
            runs[name].append(_run_tree(tree, args)["workloads"])
    out = {}
    for w in runs["this"][0]:
        mine = [r[w]["round_s"] for r in runs["this"]]
        theirs = [r[w]["round_s"] for r in runs["other"]]
        ratios = [a / b for a, b in zip(mine, theirs)]
        out[w] = {"this_s": mine, "other_s": theirs, "ratios": ratios,
                  "ratio_median": statistics.median(ratios),
                  "same_picks": len({r[w]["fingerprint"] for r in
                                     runs["this"] + runs["other"]}) == 1}
    return out


def print_against_table(results: dict, other: str) -> None:
    print(f"this tree against {other}, in ABBA pairs of fresh processes "
          "(ratio = this / other; '=' same picks, '!' other picks)")
    print(f"{'workload':16s} {'this s':>8s} {'other s':>8s} {'ratio':>6s} {'min-max':>11s}")
    for name, r in results.items():
        print(f"{name:16s} {statistics.median(r['this_s']):8.3f} "
              f"{statistics.median(r['other_s']):8.3f} {r['ratio_median']:5.2f}"
              f"{'=' if r['same_picks'] else '!'} {min(r['ratios']):5.2f}-"
              f"{max(r['ratios']):.2f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", nargs="+", default=DEFAULT_WORKLOADS,
                    help="matmul:N or one of " + ", ".join(bench_tune.SPECS))
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--population", type=int, default=1024,
                    help="one island's population (the tuner's share of 2048 on 2 cores)")
    ap.add_argument("--islands", action="store_true",
                    help="time the tuner's rounds with helpers (wall seconds)")
    ap.add_argument("--baseline", help="an earlier bench_search JSON to compare with")
    ap.add_argument("--against", metavar="TREE",
                    help="another source tree, timed in alternating fresh processes")
    ap.add_argument("--pairs", type=int, default=3, help="with --against: ABBA pairs")
    ap.add_argument("--json", help="write the results here")
    ns = ap.parse_args(argv)
    if ns.rounds < 2 or ns.repeat < 1 or ns.pairs < 1:
        raise SystemExit("bench_search: --rounds must be >= 2, --repeat and --pairs >= 1")
    if ns.against:
        args = ["--workloads", *ns.workloads, "--rounds", str(ns.rounds),
                "--population", str(ns.population)] + (["--islands"] if ns.islands else [])
        results = bench_against(ns.against, ns.pairs, args)
        print_against_table(results, ns.against)
        if ns.json:
            with open(ns.json, "w") as f:
                json.dump({"against": ns.against, "pairs": ns.pairs, "workloads": results,
                           "mode": "islands" if ns.islands else "serial"}, f, indent=1)
            print(f"wrote {ns.json}")
        return
    baseline = None
    if ns.baseline:
        with open(ns.baseline) as f:
            baseline = json.load(f)
        mode = "islands" if ns.islands else "serial"
        if baseline.get("mode", "serial") != mode:
            raise SystemExit(f"bench_search: {ns.baseline} timed {baseline.get('mode', 'serial')}"
                             f" rounds, this run times {mode} rounds")
    if ns.islands:
        if ns.rounds < 3:
            raise SystemExit("bench_search: --islands needs --rounds >= 3")
        results = {w: bench_islands(w, ns.rounds, ns.repeat) for w in ns.workloads}
        print_islands_table(results, baseline)
    else:
        results = {w: bench(w, ns.rounds, ns.population, ns.repeat) for w in ns.workloads}
        print_table(results, baseline)
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump({"workloads": results, "population": ns.population,
                       "rounds": ns.rounds, "repeat": ns.repeat,
                       "mode": "islands" if ns.islands else "serial"}, f, indent=1)
        print(f"wrote {ns.json}")


if __name__ == "__main__":
    main()
