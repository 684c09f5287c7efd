"""How timed samples make repeats (``autosched.measure.repeats``), with a fake clock:
a repeat has at least ``number`` samples, with ``min_repeat_ms`` enough to last it, and
never more than ``MAX_SAMPLES_PER_REPEAT`` (a sample then loops over several calls)."""
import pytest

from autosched.measure.repeats import (
    MAX_SAMPLES_PER_REPEAT,
    plan_samples,
    repeat_costs,
    timed_repeats,
)


class FakeSamples:
    """``time_samples(k, m)``: k figures of calls lasting ``seconds`` each; records
    what was asked."""

    def __init__(self, seconds: float):
        self.seconds, self.asked = seconds, []

    def __call__(self, k: int, m: int) -> list:
        self.asked.append((k, m))
        return [self.seconds] * k


def test_plan_samples_sizes_the_window_from_the_warm_up_call():
    assert plan_samples(3, 0, 1e-3) == (3, 1)            # no window: number calls
    assert plan_samples(3, 100, 1e-3) == (100, 1)        # 100 ms of 1 ms calls
    assert plan_samples(3, 100, 0.2) == (3, 1)           # slower than the window
    assert plan_samples(3, 100, 0.0) == (3, 1)           # no estimate
    # 10^5 calls of 1 us: 500 samples of 200 calls each (half the samples stay free
    # for topping up)
    assert plan_samples(3, 100, 1e-6) == (MAX_SAMPLES_PER_REPEAT // 2, 200)
    assert plan_samples(3, 100, 2e-4) == (500, 1)
    assert plan_samples(3, 100, 1.99e-4) == (252, 2)


def test_without_a_window_the_samples_are_cut_into_repeats_of_number():
    more = FakeSamples(1.0)
    groups = timed_repeats([1, 2, 3, 4, 5, 6], 3, 1, 2, 0, more)
    assert groups == [[1, 2, 3], [4, 5, 6]] and more.asked == []


def test_a_short_repeat_is_topped_up_to_the_window():
    # the warm-up call was slow (cold), so 3 calls of 1 ms were planned for 10 ms
    more = FakeSamples(1e-3)
    groups = timed_repeats([1e-3] * 6, 3, 1, 2, 10, more)
    assert [len(g) for g in groups] == [10, 10]
    assert all(sum(g) >= 0.010 - 1e-12 for g in groups)
    assert more.asked == [(7, 1), (7, 1)]                # one top-up per repeat


def test_a_repeat_already_long_enough_is_not_topped_up():
    more = FakeSamples(1.0)
    groups = timed_repeats([0.05] * 4, 2, 1, 2, 100, more)
    assert groups == [[0.05, 0.05], [0.05, 0.05]] and more.asked == []


def test_fast_calls_are_timed_in_loops_to_keep_the_samples_few():
    # an RPC server's first figures: 3 single calls of 1 us for a 100 ms window
    more = FakeSamples(1e-6)
    (g,) = timed_repeats([1e-6] * 3, 3, 1, 1, 100, more)
    assert len(g) <= MAX_SAMPLES_PER_REPEAT
    (k, m), = more.asked
    assert m > 1 and 3e-6 + k * m * 1e-6 >= 0.1 - 1e-9


def test_calls_faster_than_the_warm_up_still_fill_the_window():
    # the warm-up call took 20 us, the calls after it 2 us: the plan for a 20 ms window
    # (500 samples of 2 calls) lasts 2 ms, and the free samples make up the rest
    per, m = plan_samples(3, 20, 2e-5)
    more = FakeSamples(2e-6)
    (g,) = timed_repeats([2e-6] * per, per, m, 1, 20, more)
    spent = per * m * 2e-6 + sum(k * mm * 2e-6 for k, mm in more.asked)
    assert spent >= 0.020 - 1e-9 and len(g) <= MAX_SAMPLES_PER_REPEAT


def test_figures_below_the_clock_stop_the_top_up():
    more = FakeSamples(0.0)
    assert timed_repeats([0.0] * 3, 3, 1, 1, 100, more) == [[0.0] * 3]
    assert more.asked == []


def test_repeat_costs_median_or_mean():
    assert repeat_costs([[1.0, 5.0, 1.2]]) == [1.2]
    assert repeat_costs([[1.0, 5.0, 1.2]], mean=True) == [pytest.approx(7.2 / 3)]
