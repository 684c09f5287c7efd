"""Fuzz schedules: N random states built, run and compared with numpy.

    python3 scripts/fuzz_schedules.py --n 10000 --seed 0 --jobs 2

States come from the tuner's own rules (sketch + init rules + mutations) and from random
step sequences (see autosched/fuzz.py), over the workload families in ``fuzz.FAMILIES``.
Each case runs in an isolated worker process: a segfault is a ``crash``, a case slower
than --timeout a ``hang``.  Prints a table per family and source, lists every finding
with the command that reproduces it, and writes JSON (default results/fuzz_<seed>.json).
Exit status 1 if anything was wrong, crashed, hung or refused.
"""
from __future__ import annotations

import argparse
import collections
import json
import pathlib
import sys
import time

from autosched import fuzz
from autosched.fuzz_runner import run_cases

STATUSES = ("ok", "wrong", "refused", "crash", "hang")


def _table(outcomes) -> str:
    rows = collections.defaultdict(collections.Counter)
    for o in outcomes:
        rows[(o.family, o.source)][o.status] += 1
    total = collections.Counter(o.status for o in outcomes)
    head = f"{'family':18s} {'source':7s} {'tried':>6s} {'built':>6s} " + \
        " ".join(f"{s:>7s}" for s in STATUSES[1:])
    lines = [head, "-" * len(head)]
    for (fam, src), c in sorted(rows.items()) + [(("TOTAL", ""), total)]:
        tried = sum(c.values())
        built = c["ok"] + c["wrong"]
        lines.append(f"{fam:18s} {src:7s} {tried:6d} {built:6d} " +
                     " ".join(f"{c[s]:7d}" for s in STATUSES[1:]))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=200, help="number of states (default 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first case number")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    ap.add_argument("--json", default=None, help="output file (default results/fuzz_<seed>.json)")
    args = ap.parse_args(argv)
    t0 = time.time()
    done = [0]

    def progress(o):
        done[0] += 1
        if o.status != "ok":
            print(f"case {o.case}: {o.status} ({o.family}, {o.source}): {o.detail}", flush=True)
        elif done[0] % 500 == 0:
            print(f"... {done[0]}/{args.n} cases, {time.time() - t0:.0f} s", flush=True)

    outcomes = run_cases(args.seed, range(args.start, args.start + args.n), args.jobs,
                         args.timeout, progress)
    wall = time.time() - t0
    print(_table(outcomes))
    print(f"{len(outcomes)} states in {wall:.0f} s ({len(fuzz.FAMILIES)} families, seed "
          f"{args.seed})")
    bad = [o for o in outcomes if o.status != "ok"]
    for o in bad:
        print(f"\n{o.status}: case {o.case} ({o.family}, {o.source}) {o.detail}\n  steps: "
              f"{list(o.steps)}\n  reproduce: python3 -c \"from autosched import fuzz; "
              f"print(fuzz.check_case({args.seed}, {o.case}))\"")
    out = pathlib.Path(args.json or f"results/fuzz_{args.seed}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    counts = collections.Counter(o.status for o in outcomes)
    out.write_text(json.dumps({
        "seed": args.seed, "start": args.start, "n": args.n, "wall_seconds": round(wall, 1),
        "families": sorted(fuzz.FAMILIES), "counts": {s: counts[s] for s in STATUSES},
        "built": counts["ok"] + counts["wrong"],
        "findings": [o.to_json() for o in bad]}, indent=1) + "\n")
    print(f"wrote {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
