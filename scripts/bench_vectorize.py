"""How ``vectorize_loops`` cuts widths without a factor of 8, against the rule it
replaced, both built in one process and timed interleaved.

    python3 scripts/bench_vectorize.py [--rounds 9] [--json OUT]

Rules: ``current`` (vectors of 8 lanes and one tail vector: 58 = 7 x 8 + 2) and
``previous`` (session 26: vectors of the largest power of two dividing the width, so 58
lanes were 29 vectors of 2; an odd width up to 64 stayed one whole vector, a prime
width above 64 a scalar loop).  Kernels, single-threaded:
- ``ew<N>``: B[i, j] = 2 A[i, j + 1] + A[i, j] over rows of N lanes (16 MB in and out,
  bound by memory), the shape of a convolution's padding stage;
- ``tile4x<N>``: a 4 x N register tile of a 64 x 256 x 16N matmul (cache_write
  accumulator, the tile unrolled over rows and vectorized over N), as the search writes
  them.
Every build is checked against numpy.  Per kernel: the median seconds of each rule over
``--rounds`` round-robin rounds and the median of the per-round ratios previous/current
(the speedup).  Writes JSON.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics

import numpy as np

from autosched.side_by_side import kernel_timer
from compiler import build, te
from compiler.passes import vectorize as vec

EW_WIDTHS = (12, 20, 21, 57, 58, 67, 100, 114, 226, 9, 15, 23, 33, 63)
TILE_WIDTHS = (9, 12, 15, 20, 21, 28)


def previous_chunks(n: int):
    """Session 26's rule as (lanes, count, tail); None where it left the loop scalar."""
    pow2 = min(n & -n, vec.MAX_LANES)
    if n <= vec.SMALL_LANES or (n <= vec.MAX_LANES and pow2 == 1):
        return n, 1, 0
    if pow2 >= 2:
        return pow2, n // pow2, 0
    d = next(d for d in range(vec.MAX_LANES, 0, -1) if n % d == 0)
    return (d, n // d, 0) if d > 1 else None


def elementwise(n: int, vectorized: bool = True):
    """(schedule, tensors, arrays, check) of the ``ew<n>`` kernel."""
    rows = max(1, 2_000_000 // n)
    a_t = te.placeholder((rows, n + 2), name="A")
    b_t = te.compute((rows, n), lambda i, j: a_t[i, j + 1] * 2.0 + a_t[i, j], name="B")
    s = te.create_schedule(b_t.op)
    if vectorized:
        s[b_t].vectorize(b_t.op.axis[1])
    rng = np.random.default_rng(n)
    a = rng.random((rows, n + 2), dtype=np.float32)
    b = np.zeros((rows, n), np.float32)
    return s, [a_t, b_t], [a, b], lambda: np.allclose(b, a[:, 1:n + 1] * 2 + a[:, :n])


def register_tile(nr: int):
    """(schedule, tensors, arrays, check) of the ``tile4x<nr>`` kernel."""
    m, k, n = 64, 256, 16 * nr
    a_t, b_t = te.placeholder((m, k), name="A"), te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="r")
    c_t = te.compute((m, n), lambda i, j: te.sum(a_t[i, r] * b_t[r, j], axis=r), name="C")
    s = te.create_schedule(c_t.op)
    acc = s.cache_write(c_t, "local")
    io, ii = s[c_t].split(c_t.op.axis[0], factor=4)
    jo, ji = s[c_t].split(c_t.op.axis[1], factor=nr)
    s[c_t].reorder(io, jo, ii, ji)
    s[c_t].vectorize(ji)
    s[acc].compute_at(s[c_t], jo)
    ai, aj = s[acc].op.axis
    s[acc].reorder(s[acc].op.reduce_axis[0], ai, aj)
    s[acc].unroll(ai)
    s[acc].vectorize(aj)
    rng = np.random.default_rng(nr)
    a = rng.random((m, k), dtype=np.float32)
    b = rng.random((k, n), dtype=np.float32)
    c = np.zeros((m, n), np.float32)
    return s, [a_t, b_t, c_t], [a, b, c], lambda: np.allclose(c, a @ b, rtol=1e-3)


def timer(make, rule, width: int):
    """A kernel timer of ``make`` compiled under ``rule`` (the pass's chunking)."""
    current = vec._chunks
    scalar = rule is previous_chunks and previous_chunks(width) is None
    vec._chunks = rule
    try:
        s, tensors, arrays, check = elementwise(width, False) if scalar else make()
        mod = build(s, tensors, "llvm")
    finally:
        vec._chunks = current
    mod(*arrays)
    if not check():
        raise SystemExit(f"bench_vectorize: the {rule.__name__} build of width {width} "
                         "computed a wrong result")
    return kernel_timer(mod, arrays)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--json", default="results/bench_vectorize.json")
    ns = p.parse_args()
    kernels = {f"ew{n}": (lambda n=n: elementwise(n), n, 0) for n in EW_WIDTHS}
    kernels.update({f"tile4x{n}": (lambda n=n: register_tile(n), n, 2 * 64 * 256 * 16 * n)
                    for n in TILE_WIDTHS})
    timers = {(name, rule.__name__): timer(make, rule, width)
              for name, (make, width, _) in kernels.items()
              for rule in (previous_chunks, vec._chunks)}
    figures: dict = {k: [] for k in timers}
    for _ in range(ns.rounds):
        for k, f in timers.items():
            f()
            figures[k].append(f())
    rows = []
    print(f"{'kernel':10s} {'previous':>12s} {'current':>12s} {'speedup':>8s} {'GFLOPS':>14s}")
    for name, (_, _, flops) in kernels.items():
        old, new = figures[(name, "previous_chunks")], figures[(name, "_chunks")]
        speedup = statistics.median(a / b for a, b in zip(old, new))
        o, n = statistics.median(old), statistics.median(new)
        gflops = f"{flops / o / 1e9:.1f} -> {flops / n / 1e9:.1f}" if flops else ""
        print(f"{name:10s} {o * 1e6:9.1f} us {n * 1e6:9.1f} us {speedup:7.2f}x {gflops:>14s}")
        rows.append({"kernel": name, "previous_s": o, "current_s": n, "speedup": speedup,
                     "flops": flops})
    out = pathlib.Path(ns.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rounds": ns.rounds, "kernels": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
