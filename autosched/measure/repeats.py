"""How a candidate's timed calls make its repeats, and a repeat its cost (the runners').

Role: ``LocalRunner``, ``RPCRunner`` and ``DaskRunner`` time a candidate in samples and give
one cost per repeat; this module decides how many samples a repeat has, how many calls
a sample times, and what cost a repeat reports.

Semantics (TVM's ``min_repeat_ms``, per sample): a repeat is at least ``number``
samples, and with ``min_repeat_ms`` as many more as make the repeat last that long.
TVM grows a repeat's loop of ``number`` calls the same way, so
``LocalRunner(number=3, min_repeat_ms=100)`` spends about 100 ms per repeat in both.
(Before the thirty-fourth session each of the ``number`` calls was a loop lasting the
whole window, and a repeat took ``number`` times as long as in TVM.)  A sample is one
call, or, when a repeat would need more than ``MAX_SAMPLES_PER_REPEAT`` calls (a
microsecond kernel in a 100 ms window), a loop of as many calls as keep the samples
under that number (the plan uses at most half of them, so that a repeat the warm-up call
misjudged can still be topped up to the window): the figures then stay few enough to send
back from an RPC server (its replies are capped at 1 MB) and to take a median of cheaply.

Invariants: a repeat has at least ``number`` samples and at most
``max(number, MAX_SAMPLES_PER_REPEAT)``; every figure is seconds per call; a repeat's
cost is the median of its samples (``mean``: their mean), so one call that waited a
time slice for its second thread does not decide the rank.
"""
from __future__ import annotations

import math
import statistics

MAX_SAMPLES_PER_REPEAT = 1000
# The plan, and each top-up, takes at most half the samples still free.  The plan comes
# from the warm-up call, which is often slower than the calls after it: a plan that used
# every sample left no room to top the repeat up, and it ended short of the window (a
# 20 ms window of a microsecond kernel measured 35 ms for two repeats).
_PLAN_SAMPLES = MAX_SAMPLES_PER_REPEAT // 2


def plan_samples(number: int, min_repeat_ms: float, estimate: float) -> tuple:
    """``(samples per repeat, calls per sample)`` for calls of about ``estimate``
    seconds (the warm-up call): ``number`` single calls, or enough to last
    ``min_repeat_ms`` when that is more."""
    if min_repeat_ms <= 0 or estimate <= 0:
        return number, 1
    calls = math.ceil(round(min_repeat_ms / 1e3 / estimate, 6))   # 0.1 / 1e-6 is 100000.00000000001
    if calls <= _PLAN_SAMPLES:
        return max(number, calls), 1
    per_sample = math.ceil(calls / _PLAN_SAMPLES)
    return max(number, math.ceil(calls / per_sample)), per_sample


def timed_repeats(samples: list, per: int, calls_per_sample: int, repeat: int,
                  min_repeat_ms: float, time_samples) -> list:
    """The samples of each repeat: ``samples`` (``per * repeat`` figures of
    ``calls_per_sample`` calls each, in order) cut into ``repeat`` groups of ``per``,
    each topped up with ``time_samples(k, m)`` (``k`` more figures of ``m`` calls each)
    until it lasts ``min_repeat_ms``.

    Why top up: the plan comes from the warm-up call, which is often the slowest (cold
    caches), and an RPC server's first figures come without any plan."""
    groups = [list(samples[i * per:(i + 1) * per]) for i in range(repeat)]
    target = min_repeat_ms / 1e3
    if target <= 0:
        return groups
    for g in groups:
        calls = len(g) * calls_per_sample
        spent = sum(g) * calls_per_sample
        while spent < target and len(g) < MAX_SAMPLES_PER_REPEAT:
            per_call = spent / calls if calls else 0.0
            if per_call <= 0:
                break               # nothing to plan with (figures below the clock)
            need = math.ceil((target - spent) / per_call)
            room = max(1, (MAX_SAMPLES_PER_REPEAT - len(g)) // 2)
            m = math.ceil(need / room)
            k = max(1, min(room, math.ceil(need / m)))
            got = list(time_samples(k, m))
            if not got:
                break
            g += got
            calls += len(got) * m
            spent += sum(got) * m
    return groups


def repeat_costs(groups: list, mean: bool = False) -> list:
    """One cost per repeat: the median (``mean``: the mean) of its samples."""
    agg = statistics.fmean if mean else statistics.median
    return [float(agg(g)) for g in groups]
