"""The machine's float32 FMA peak, measured: the ceiling every GFLOPS figure is read against.

    python3 scripts/bench_peak.py [--threads N] [--json results/bench_peak.json]

Why measured: sessions run on different machines (a Zen 4 with AVX-512, a Zen 3 with
AVX2), both virtual, where the clock a vCPU really runs at is not what the CPU's name
promises; a goal such as "1.5x MetaSchedule" is only reachable when 1.5x the other side's
figure is below the peak.  The Zen 4 figure in the README (234 GFLOPS) was arithmetic
from the clock; this script measures it.

How: a JIT-compiled loop (hand-written LLVM IR, through the compiler's own
``compile_ir_full`` and ``link_object``) updates ``chains`` independent accumulators of
the target's native vector width with ``llvm.fma`` each iteration.  Enough independent
chains hide the FMA latency, so the loop runs at the FMA ports' throughput.  One call
runs in each of ``threads`` Python threads at once (ctypes releases the GIL), and the
peak is the best of several timings over a few chain counts: a peak is a maximum, and
every slower figure is interference.

Invariants: the accumulators converge (multiplier just under 1, a small addend), so no
input or result is ever a denormal or infinite; without fast-math flags LLVM may neither
fold nor reassociate the chains, so the code does exactly ``2 * lanes * chains * n``
flops per call; the loop count is calibrated so a call takes ``seconds``.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import struct
import sys
import threading
import time

from compiler.runtime.jit import compile_ir_full, link_object
from compiler.target import host_target

CHAIN_COUNTS = (8, 10, 12)      # independent accumulators tried (12 + 2 constants < 16)
MULTIPLIER = 0.99999994         # 1 - 2^-24: the accumulators decay towards ADDEND / 2^-24
ADDEND = 1e-9


def fma_ir(lanes: int, chains: int) -> str:
    """LLVM IR of ``void fma_peak(i64 n, float* out)``: ``n`` iterations of ``chains``
    vector FMAs of ``lanes`` float32 lanes each; the lanes' sum goes to ``out[0]`` so
    nothing is dead code."""
    vt = f"<{lanes} x float>"
    mul, add, one = (_splat(_hex(v), lanes) for v in (MULTIPLIER, ADDEND, 1.0))
    phis = "\n".join(f"  %a{c} = phi {vt} [ {one}, %entry ], [ %b{c}, %loop ]"
                     for c in range(chains))
    fmas = "\n".join(f"  %b{c} = call {vt} @llvm.fma.v{lanes}f32({vt} %a{c}, {vt} {mul}, "
                     f"{vt} {add})" for c in range(chains))
    sums = [f"  %s0 = fadd {vt} %b0, %b1"] + [
        f"  %s{c - 1} = fadd {vt} %s{c - 2}, %b{c}" for c in range(2, chains)]
    last = f"%s{chains - 2}"
    return f"""declare {vt} @llvm.fma.v{lanes}f32({vt}, {vt}, {vt})

define void @fma_peak(i64 %n, float* %out) {{
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
{phis}
{fmas}
  %i1 = add i64 %i, 1
  %done = icmp uge i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
{chr(10).join(sums)}
  %r = extractelement {vt} {last}, i32 0
  store float %r, float* %out
  ret void
}}
"""


def _splat(const: str, lanes: int) -> str:
    return "<" + ", ".join([f"float {const}"] * lanes) + ">"


def _hex(x: float) -> str:
    """A float constant as LLVM writes it exactly (a double's bit pattern, which must
    be representable as a float: ``x`` is rounded to float32 first)."""
    f32 = struct.unpack("<f", struct.pack("<f", x))[0]
    return "0x" + struct.pack(">d", f32).hex().upper()


class PeakKernel:
    """The compiled loop of ``chains`` accumulators for ``target``; calling it runs
    ``n`` iterations and returns the seconds it took."""

    def __init__(self, target, chains: int):
        self.lanes = target.vector_lanes(32)
        self.chains = chains
        out = compile_ir_full(fma_ir(self.lanes, chains), target, 3)
        self._tracker = link_object(out.object, ["fma_peak"])      # keeps the code mapped
        proto = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p)
        self._fn = proto(self._tracker["fma_peak"])

    def flops(self, n: int) -> float:
        return 2.0 * self.lanes * self.chains * n

    def run(self, n: int, threads: int = 1) -> float:
        """Wall seconds of ``threads`` concurrent calls of ``n`` iterations each."""
        outs = [ctypes.c_float() for _ in range(threads)]
        start = threading.Barrier(threads + 1)

        def call(k):
            start.wait()
            self._fn(n, ctypes.addressof(outs[k]))

        pool = [threading.Thread(target=call, args=(k,)) for k in range(threads)]
        for t in pool:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        for t in pool:
            t.join()
        return time.perf_counter() - t0


def measure_peak(target=None, threads: int | None = None, seconds: float = 0.2,
                 repeats: int = 5) -> dict:
    """The FMA peak of ``target`` (default: the host) on ``threads`` threads (default:
    its cores) and on one, in GFLOPS: the best timing over ``CHAIN_COUNTS``."""
    target = target or host_target()
    threads = threads or target.num_cores
    best: dict = {"gflops": 0.0, "gflops_1_thread": 0.0}
    for chains in CHAIN_COUNTS:
        k = PeakKernel(target, chains)
        n = _calibrate(k, seconds)
        for key, t in (("gflops", threads), ("gflops_1_thread", 1)):
            secs = min(k.run(n, t) for _ in range(repeats))
            g = k.flops(n) * t / secs / 1e9
            if g > best[key]:
                best[key] = g
                if key == "gflops":
                    best["chains"] = chains
    return {"target": str(target), "mcpu": target.mcpu, "float32_lanes": target.vector_lanes(32),
            "threads": threads, **best,
            "gflops_per_thread": best["gflops"] / threads}


def _calibrate(kernel: PeakKernel, seconds: float) -> int:
    """Iterations for one call of about ``seconds``."""
    n = 1 << 16
    while True:
        dt = kernel.run(n)
        if dt >= seconds / 4 or n >= 1 << 34:
            return max(1, int(n * seconds / max(dt, 1e-9)))
        n *= 4


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=None,
                   help="threads run at once (default: the host target's num_cores)")
    p.add_argument("--seconds", type=float, default=0.2, help="length of one timed call")
    p.add_argument("--json", default="results/bench_peak.json")
    ns = p.parse_args(argv)
    res = measure_peak(threads=ns.threads, seconds=ns.seconds)
    print(f"target {res['target']}: {res['float32_lanes']} float32 lanes")
    print(f"FMA peak: {res['gflops']:.1f} GFLOPS on {res['threads']} threads "
          f"({res['gflops_per_thread']:.1f} per thread; one thread alone "
          f"{res['gflops_1_thread']:.1f}; {res['chains']} chains)")
    write_json(ns.json, res)
    return 0


def write_json(path: str, obj) -> None:
    """Write a benchmark's results (making the directory) and say where."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
