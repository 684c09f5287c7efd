"""Fingerprint of serial search rounds, to check that a speed-up changes no result.

    PYTHONPATH=<worktree> python3 scripts/search_fingerprint.py out.txt

For matmul 512, conv2d, dense_bias_relu, softmax and depthwise_conv2d it runs three
serial rounds of ``SketchPolicy.pick_states(64)`` with fixed seeds (synthetic costs
between rounds, so the cost model trains) and writes, per pick, ``str(state)``,
``repr(transform_steps)`` and the SHA-256 of its feature matrix.  Run it on two commits
and compare the files byte for byte: equal files mean the same picks, the same steps
and bit-identical features.  Takes about two minutes.
"""
from __future__ import annotations

import hashlib
import random
import sys

import numpy as np

import autosched as auto
from autosched import catalog  # noqa: F401  (registers the built-in workloads)
from autosched.cost_model import XGBModel
from autosched.measure.measurer import MeasureInput, MeasureResult
from autosched.search.evolution import SearchParams
from autosched.search.policy import SketchPolicy

WORKLOADS = [("matmul", (512, 512, 512)), ("conv2d_nchw", (1, 64, 56, 56, 64, 3, 3, 1, 1)),
             ("dense_bias_relu", (128, 768, 3072)), ("softmax", (128, 1000)),
             ("depthwise_conv2d", (1, 64, 56, 56, 3, 1, 1))]


def fingerprint(name, args, out, rounds: int = 3) -> None:
    task = auto.SearchTask(func=name, args=args, target="llvm")
    model = XGBModel(seed=0)
    pol = SketchPolicy(task, model, seed=0, verbose=0)
    pol.params = SearchParams(search_workers=0)      # serial: one reproducible island
    rng = random.Random(0)
    for r in range(rounds):
        picks = pol.pick_states(64)
        out.write(f"=== {name} round {r}: {len(picks)} picks\n")
        for st, rows in zip(picks, model.extractor.featurize_many(picks)):
            a = np.ascontiguousarray(np.asarray(rows))
            out.write(f"{st}{st.transform_steps!r}\nfeat {a.shape} {a.dtype} "
                      f"{hashlib.sha256(a.tobytes()).hexdigest()}\n")
        results = [MeasureResult(costs=(1e-3 * (1 + rng.random()),), error_no=0, error_msg="",
                                 all_cost=0.1, timestamp=0.0) for _ in picks]
        pol.record_measured([MeasureInput(task, s) for s in picks], results)


def main() -> None:
    with open(sys.argv[1], "w") as out:
        for name, args in WORKLOADS:
            fingerprint(name, args, out)
            print(name, "done", flush=True)


if __name__ == "__main__":
    main()
