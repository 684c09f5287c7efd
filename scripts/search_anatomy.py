"""Anatomy of an evolved generation: what one state costs, and how alike the states are.

    python3 scripts/search_anatomy.py [--workloads matmul:256 conv2d ...]
        [--population 1024] [--json results/search_anatomy.json]

Why: ``bench_search`` times a round by phase; this says what a search speed-up has to
work with.  Per workload, one fresh policy runs two rounds (synthetic costs recorded, so
its model is trained, as in tuning), samples an island of ``--population`` states and
evolves it for three generations with that model.  Of the third generation's children,
in CPU microseconds per state (the children that repeat one seen before in that
generation are not counted twice):
- make: ``evolution.next_generation`` (parent selection, mutation, scope check), per child;
- nests: ``features.extract.state_jobs`` (the loop nests of every store);
- rows: ``features.extract.rows_for`` on all the generation's jobs at once (one batch);
- predict: the cost model's prediction from the finished feature rows.

It also counts the generation's distinct structures (states sharing a ``struct_memo``:
same stages, iterators, annotations and attach points, other split lengths) and its
loop shapes (the same attach points and number of loops per stage), with the mean
number of states per group: featurizing states as arrays one structure (or one loop
shape) at a time only pays when the groups are large.

The garbage collector is paused as in a search round (``paused_gc``).  Writes JSON.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib
import random
import time

from autosched.features.extract import rows_for, state_jobs
from autosched.features.nest import leaves_of
from autosched.search import evolution
from autosched.search.evolution import SearchParams
from autosched.search.gc_pause import paused_gc, tuning_scope
from autosched.search.heap import retained_heap

DEFAULT_WORKLOADS = ["matmul:256", "matmul:512", "conv2d", "dense_bias_relu", "depthwise"]
COSTS = ("make", "nests", "rows", "predict")

# the workload names, the policy and the synthetic records are bench_search's
_spec = importlib.util.spec_from_file_location(
    "bench_search", pathlib.Path(__file__).resolve().parent / "bench_search.py")
bench_search = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_search)


def loop_shape(state) -> tuple:
    """The attach points and the number of loops of every stage."""
    return (tuple(sorted(state.attach_map.items())),
            tuple(len(stage) for stage in leaves_of(state)))


def _timed(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def anatomy(func: str, args, population: int, seed: int = 0) -> dict:
    """Per-state costs (µs) and group counts of one workload's third generation."""
    params = SearchParams(search_workers=0, evolutionary_search_population=population)
    policy = bench_search.make_policy(func, args, params, seed)
    task, model, rng, cores = policy.task, policy.model, random.Random(seed), policy.num_cores
    with tuning_scope(), retained_heap():
        for _ in range(2):
            bench_search._record_synthetic(policy, policy.pick_states(64), rng)
        with paused_gc():
            pop = policy.sample_initial_population(population)
            scores = model.predict(task, pop)
            for _ in range(2):
                pop = evolution.next_generation(pop, scores, params, rng, cores)
                scores = model.predict(task, pop)
            kids, make_s = _timed(
                lambda: evolution.next_generation(pop, scores, params, rng, cores))
            fresh = list({str(k): k for k in kids}.values())
            jobs, nests_s = _timed(lambda: [state_jobs(k) for k in fresh])
            _, rows_s = _timed(lambda: rows_for([j for js in jobs for j in js]))
            feats = model.extractor.featurize_many(fresh)
            _, predict_s = _timed(lambda: model.predict_rows(feats))
    n = max(1, len(fresh))
    structures = len({id(k.struct_memo()) for k in fresh})
    shapes = len({loop_shape(k) for k in fresh})
    return {"args": list(args), "population": population, "children": len(kids),
            "distinct": len(fresh),
            "us_per_state": {"make": 1e6 * make_s / max(1, len(kids)),
                             "nests": 1e6 * nests_s / n, "rows": 1e6 * rows_s / n,
                             "predict": 1e6 * predict_s / n},
            "structures": structures, "loop_shapes": shapes,
            "states_per_structure": len(fresh) / max(1, structures),
            "states_per_loop_shape": len(fresh) / max(1, shapes)}


def print_table(results: dict) -> None:
    print(f"{'workload':16s} {'states':>6s} " + " ".join(f"{c + ' us':>10s}" for c in COSTS)
          + f" {'structures':>10s} {'per':>5s} {'shapes':>6s} {'per':>5s}")
    for name, r in results.items():
        us = r["us_per_state"]
        print(f"{name:16s} {r['distinct']:6d} " + " ".join(f"{us[c]:10.0f}" for c in COSTS)
              + f" {r['structures']:10d} {r['states_per_structure']:5.1f}"
              f" {r['loop_shapes']:6d} {r['states_per_loop_shape']:5.1f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", nargs="+", default=DEFAULT_WORKLOADS,
                    help="matmul:N or one of " + ", ".join(bench_search.bench_tune.SPECS))
    ap.add_argument("--population", type=int, default=1024,
                    help="the island's population (the tuner's share of 2048 on 2 cores)")
    ap.add_argument("--json", help="write the results here")
    ns = ap.parse_args(argv)
    if ns.population < 2:
        raise SystemExit("search_anatomy: --population must be >= 2")
    results = {w: anatomy(*bench_search.parse_workload(w), ns.population)
               for w in ns.workloads}
    print_table(results)
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump({"workloads": results, "population": ns.population}, f, indent=1)
        print(f"wrote {ns.json}")


if __name__ == "__main__":
    main()
