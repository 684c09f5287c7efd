"""Timing several programs side by side: the figures a tuning run reports at its end.

Role: ``tune``'s summary and ``scripts/bench_tune.py`` compare the tuned kernel with the
default schedule and numpy.  Timed one after another, such figures mostly say when each
was taken: on these shared 2-core machines the same kernel measures up to 30% apart
minutes apart, and the first calls after a build phase run several times slower.  So
every callable is timed once per round, round-robin, and each gets the median of its
rounds; drift then hits all of them alike.

Invariants: a timer is a zero-argument callable returning seconds per call; the machine
settles between timings (numpy's OpenBLAS threads and the kernels' OpenMP threads spin
for a while after a call, stealing the cores from whoever runs next): ``settle`` seconds
idle before every timing, or per timer after its own; one untimed call before each
timing absorbs the switch.
"""
from __future__ import annotations

import statistics
import time

__all__ = ["interleaved", "kernel_timer", "numpy_timer"]


def interleaved(timers: dict, rounds: int = 7, settle: float | dict = 0.25) -> dict:
    """Median seconds of each timer over ``rounds`` round-robin rounds.  ``settle``:
    seconds idle before every timing, or per timer the seconds idle after its timing
    (numpy's OpenBLAS threads spin about a tenth of a second, ours a millisecond)."""
    before, after = (0.0, settle) if isinstance(settle, dict) else (settle, {})
    times: dict = {k: [] for k in timers}
    for _ in range(rounds):
        for k, f in timers.items():
            if before:
                time.sleep(before)
            f()
            times[k].append(f())
            if after:
                time.sleep(after.get(k, 0.0))
    return {k: statistics.median(v) for k, v in times.items()}


def kernel_timer(mod, arrays, min_repeat_ms: float = 30):
    """A timer of a built module on ``arrays`` (median of 3 calls, at least
    ``min_repeat_ms`` of calls)."""
    ev = mod.time_evaluator(number=3, repeat=1, min_repeat_ms=min_repeat_ms)
    return lambda: ev(*arrays).median


def numpy_timer(ref, ins, calls: int = 3):
    """A timer of a numpy reference on ``ins`` (mean of ``calls`` calls)."""
    def run():
        t = time.perf_counter()
        for _ in range(calls):
            ref(*ins)
        return (time.perf_counter() - t) / calls
    return run
