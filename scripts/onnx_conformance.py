"""Pass rate of ONNX's backend node cases, per operator type, in one run.

    python3 scripts/onnx_conformance.py

Runs every case of ``tests/onnx_cases.selected_cases()`` through ``from_onnx`` +
``relay.build`` and compares with ONNX's expected outputs; prints per op type the cases,
passes and rate, the rate over cases whose dtypes this compiler has (float8, int4,
bfloat16 ... it has not), and writes results/onnx_conformance.json.
"""
from __future__ import annotations

import collections
import json
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
import onnx_cases  # noqa: E402


def _passes(case) -> tuple:
    try:
        got, expected, rtol, atol = onnx_cases.run_case(case)
    except Exception as e:
        return False, f"{type(e).__name__}: {e}"
    for g, e in zip(got, expected):
        if g.shape != e.shape or g.dtype != e.dtype or not np.allclose(
                g, e, rtol=rtol, atol=atol, equal_nan=True):
            return False, "wrong values"
    return len(got) == len(expected), ""


def main() -> None:
    per_op: dict = collections.defaultdict(lambda: [0, 0, 0])   # cases, passed, exotic dtype
    failures = {}
    for name, case in sorted(onnx_cases.selected_cases().items()):
        ok, why = _passes(case)
        row = per_op[onnx_cases.primary_op(case)]
        row[0] += 1
        row[1] += ok
        if not ok:
            failures[name] = why
            if "dtype" in why or "element type" in why or "bfloat16" in why:
                row[2] += 1
    total = [sum(r[k] for r in per_op.values()) for k in range(3)]
    print(f"{'op':>22} | cases | pass | rate   | exotic-dtype cases")
    for op, (n, p, ex) in sorted(per_op.items()):
        print(f"{op:>22} | {n:5} | {p:4} | {p / n:6.1%} | {ex}")
    rate = total[1] / total[0]
    rate_ours = total[1] / (total[0] - total[2])
    print(f"{'total':>22} | {total[0]:5} | {total[1]:4} | {rate:6.1%} | {total[2]}  "
          f"(rate without exotic-dtype cases: {rate_ours:.1%})")
    out = pathlib.Path("results/onnx_conformance.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"per_op": {k: {"cases": v[0], "passed": v[1],
                                              "exotic_dtype": v[2]} for k, v in per_op.items()},
                               "total": total[0], "passed": total[1], "rate": rate,
                               "rate_without_exotic_dtypes": rate_ours,
                               "failures": failures}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
