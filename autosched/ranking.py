"""How a state's several measured figures rank it: the rules shared by the tuner's
re-timing, the log's ranking (``tuning.rank_records``), ``ApplyHistoryBest`` and the
measurer's confirmation of the best few.

Role: a state may be measured more than once (confirmed on entering its task's best
few while tuning, re-timed side by side at the end of ``tune``, or logged by several
runs); these functions turn its figures into the one cost states are compared by
(``retimed_cost``), order states by their figures (``rank_figures``, which keeps the
default schedule first unless a tuned state ranked before it is ``PREFER_MARGIN``
faster by every measure: ``clears``), and give the costs a new candidate must beat
to be confirmed (``settled_best``).

Invariants: pure functions of the figures (lists of seconds), independent of the order
the figures were measured or logged in, so merged logs rank as one.
"""
from __future__ import annotations

import statistics

# a tuned state must beat the default schedule's state by this share to replace it
PREFER_MARGIN = 0.03
# a figure this many times the state's median is an interruption, not the kernel
OUTLIER_FACTOR = 3.0


def retimed_cost(costs) -> float:
    """What a state measured ``costs`` costs when states are compared: once it was
    measured again (2 or more figures: confirmed on entering the best few while tuning,
    or re-timed at the end), its second-lowest figure, else its only one.

    Why not the lowest: a state is re-timed because one of its figures was among the
    best few of many single measurements, so that figure is biased low.  Why not the
    median: each figure is already the median of at least ``tuning.RETIME_CALLS``
    calls, so what remains is whole measurements slowed by something else on the
    machine (seen here: 20-60% on a 1 ms conv, 100x on a 50 us depthwise kernel), and
    that noise only ever adds.  A median of four figures is broken by two such
    measurements; in the two logs here where it picked a tuned state that a long
    interleaved re-timing found slower than the default schedule (by 7% and by 85%),
    the second-lowest figure picks the default.  The rule does not depend on the
    records' order, so it holds for merged logs and for ``ApplyHistoryBest``."""
    ordered = sorted(costs)
    return ordered[1] if len(ordered) >= 2 else ordered[0]


def capped_mean(costs) -> float:
    """The mean of ``costs`` with each figure capped at ``OUTLIER_FACTOR`` times their
    median.  The mean is what catches a kernel with a few slow figures (half as fast,
    see ``tuning.rank_records``); a single measurement that an interruption made 10x
    slower (seen here: a 3.3 ms conv2d measured once at 36 ms among 12 figures within
    4% of each other) would otherwise decide alone, and keep the default schedule."""
    cap = statistics.median(costs) * OUTLIER_FACTOR
    return statistics.mean(min(c, cap) for c in costs)


def rank_figures(figures: dict, prefer=None) -> list:
    """``rank_records``' order of the keys of ``figures`` (key -> the costs measured for
    that state); ``prefer``: the default schedule's key.

    The default goes first unless a state ranked before it ``clears`` it; then the first
    such state, in rank order, goes first.  Why not only the first-ranked state: on the
    Zen 4 of the forty-fourth session, 5 of 42 answers of a benchmark run were the
    default schedule because the state with the lowest ``retimed_cost`` led it by under
    ``PREFER_MARGIN`` on one measure while the next re-timed state led it on all three;
    re-timed side by side (15 interleaved rounds, several runs), those five ran at
    1.00x (a kernel whose runs spread 0.74-1.10x), 1.00-1.04x, 1.03x, 1.07x and 1.5x
    the default's speed."""
    keyed = sorted(figures, key=lambda k: (len(figures[k]) < 3, retimed_cost(figures[k])))
    pos = keyed.index(prefer) if prefer in figures else None
    if pos:
        dflt = figures[prefer]
        lead = next((i for i, k in enumerate(keyed[:pos]) if clears(figures[k], dflt)), pos)
        keyed.insert(0, keyed.pop(lead))
    return keyed


def clears(costs, dflt) -> bool:
    """Whether a tuned state measured ``costs`` may replace the default schedule's state
    measured ``dflt``: it was re-timed a different number of times (a state with 3 or
    more figures against one with fewer: the re-timing compared them), or it is more
    than ``PREFER_MARGIN`` faster by ``retimed_cost``, by the median figure and by the
    capped mean alike."""
    if (len(dflt) < 3) != (len(costs) < 3):
        return True
    m = 1 + PREFER_MARGIN
    return not (retimed_cost(dflt) <= retimed_cost(costs) * m or
                statistics.median(dflt) <= statistics.median(costs) * m or
                capped_mean(dflt) <= capped_mean(costs) * m)


def settled_best(figures, k: int) -> list:
    """The ``k`` lowest ``retimed_cost`` of the states whose figures are ``figures``
    (an iterable of per-state lists), sorted: what a candidate must beat to enter its
    task's best ``k``, when the measurer's confirmation (``confirm_top_k``) continues
    from states measured before (an earlier ``tune`` call, a preloaded log)."""
    return sorted(retimed_cost(f) for f in figures if f)[:k]
