"""Timing of compiled kernels (``Module.time_evaluator``) and CPU cache flushing.

Role: measure a kernel the way TVM's time_evaluator does, but with the loop in native
code: each repeat is ONE ctypes call of ``<name>__repeat(ptrs..., number)``, so the
~0.5 us Python->native call cost is amortized over ``number`` runs.

Invariants:
- Arguments are checked (and aligned copies made) once, before any timing; one untimed
  warm-up call precedes the repeats (page faults, first-touch, lazy binding) unless
  ``warmup`` is off (the caller already ran the kernel).  A kernel
  therefore runs ``1 + number * repeat`` times, plus the discarded repeats that
  ``min_repeat_ms`` made too short.
- ``results[i]`` is the mean time of one run in repeat ``i``, in seconds.
- With ``min_repeat_ms``, a repeat shorter than that is discarded and ``number`` grows
  (as TVM: to the projected count, at least x1.618) until one lasts long enough; the grown
  ``number`` is kept for the following repeats and reported in ``ProfileResult.number``.
- With ``enable_cpu_cache_flush``, every array argument but the first is flushed from the
  caches before each repeat (TVM's ``cache_flush_cpu_non_first_arg``; runtime.cacheflush),
  outside the timed interval.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

import numpy as np

from .cacheflush import flush_arguments

_MAX_NUMBER = 1 << 40          # bounds the growth loop even for an empty kernel


class _TimeStats:
    """mean/median/std/min/max of ``self.results`` (seconds per run)."""

    results: tuple | list

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.results)

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)


@dataclass(frozen=True)
class ProfileResult(_TimeStats):
    """Per-run times in seconds, one entry per repeat (TVM's BenchmarkResult fields)."""
    results: tuple
    number: int

    def __repr__(self) -> str:
        return (f"ProfileResult(mean={_fmt(self.mean)}, median={_fmt(self.median)}, "
                f"std={_fmt(self.std)}, repeat={len(self.results)}, number={self.number})")


@dataclass
class BenchmarkResult(_TimeStats):
    """Seconds per run (TVM's ``BenchmarkResult``: mean/median/std/min/max, results)."""
    results: list

    def __str__(self) -> str:
        ms = [r * 1e3 for r in self.results]
        return (f"Execution time summary:\n mean (ms)   median (ms)    max (ms)     min (ms)     "
                f"std (ms)\n {statistics.fmean(ms):9.4f}   {statistics.median(ms):9.4f}   "
                f"{max(ms):9.4f}   {min(ms):9.4f}   {statistics.pstdev(ms):9.4f}")


def benchmark_evaluator(benchmark, dev, number: int, repeat: int, min_repeat_ms: float):
    """TVM's ``module.module.time_evaluator("run", dev, ...)`` of a graph module whose
    ``benchmark(dev, repeat=, number=, min_repeat_ms=)`` times its runs: a callable
    returning a ProfileResult."""
    def evaluate() -> ProfileResult:
        res = benchmark(dev, repeat=repeat, number=number, min_repeat_ms=min_repeat_ms)
        return ProfileResult(tuple(res.results), number)
    return evaluate


def _fmt(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"


def _check_count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"time_evaluator {name}={value!r}: expected an int")
    if value < minimum:
        raise ValueError(f"time_evaluator {name}={value!r}: expected an int >= {minimum}")
    return int(value)


class Evaluator:
    """``evaluator(*arrays) -> ProfileResult``; see the module docstring for semantics."""

    def __init__(self, func, number=10, repeat=1, min_repeat_ms=0,
                 enable_cpu_cache_flush=False):
        self.func = func
        self.number = _check_count("number", number, 1)
        self.repeat = _check_count("repeat", repeat, 1)
        if isinstance(min_repeat_ms, bool) or not isinstance(min_repeat_ms, (int, float)) \
                or not min_repeat_ms >= 0 or math.isinf(min_repeat_ms):
            raise ValueError(f"time_evaluator min_repeat_ms={min_repeat_ms!r}: expected a "
                             "finite number >= 0")
        self.min_repeat_s = float(min_repeat_ms) / 1e3
        self.flush = bool(enable_cpu_cache_flush)
        self.warmup = True

    def __call__(self, *arrays) -> ProfileResult:
        call = self.func.prepare(arrays)
        ptrs = call.ptrs
        # TVM's cache_flush_cpu_non_first_arg: the first array stays (a network's
        # previous output, still warm)
        flushed = self.func.array_regions(call, arrays)[1:] if self.flush else ()
        run = self.func.run_repeat
        if self.warmup:
            run(ptrs, 1)                              # warm-up, untimed
        number = self.number
        results: list[float] = []
        clock = time.perf_counter
        while len(results) < self.repeat:
            if self.flush:
                flush_arguments(flushed)
            t0 = clock()
            run(ptrs, number)
            elapsed = clock() - t0
            if elapsed < self.min_repeat_s and number < _MAX_NUMBER:
                number = _grown(number, elapsed, self.min_repeat_s)
                continue
            results.append(elapsed / number)
        call.finish()
        return ProfileResult(tuple(results), number)


def _grown(number: int, elapsed: float, target_s: float) -> int:
    if elapsed <= 0:
        return min(number * 10, _MAX_NUMBER)
    projected = int(target_s / (elapsed / number)) + 1
    return min(max(projected, int(number * 1.618) + 1), _MAX_NUMBER)
