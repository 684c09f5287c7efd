"""glibc's heap settings around search rounds (search/heap.py): the outermost
``retained_heap`` keeps freed memory in the process and its exit restores glibc's
defaults and trims; helpers keep the setting for life; tuning enters the scope unless
``SearchParams(retain_heap=False)``."""
import resource

import autosched_helpers  # noqa: F401  (registers the steps_test_* workloads)
import numpy as np
import pytest
from autosched_helpers import SMALL_SEARCH, Fine

import autosched as auto
from autosched.search import heap
from autosched.search.evolution import SearchParams
from autosched.search.heap import retained_heap

RETAINED = [(heap.M_MMAP_THRESHOLD, heap.MMAP_BYTES), (heap.M_TRIM_THRESHOLD, heap.TRIM_BYTES),
            (heap.M_TOP_PAD, heap.TOP_PAD_BYTES)]
DEFAULTS = [(heap.M_MMAP_THRESHOLD, heap.DEFAULT_BYTES),
            (heap.M_TRIM_THRESHOLD, heap.DEFAULT_BYTES), (heap.M_TOP_PAD, heap.DEFAULT_BYTES)]


class RecordingLibc:
    """Stands in for the C library: records mallopt and malloc_trim calls."""

    def __init__(self):
        self.calls = []

    def mallopt(self, param, value):
        self.calls.append((param, value))
        return 1

    def malloc_trim(self, pad):
        self.calls.append(("trim", pad))
        return 1


@pytest.fixture
def libc(monkeypatch):
    fake = RecordingLibc()
    monkeypatch.setattr(heap, "_LIBC", fake)
    monkeypatch.setattr(heap, "_RETAINED_FOR_LIFE", [False])
    monkeypatch.setattr(heap, "_DEPTH", [0])
    return fake


def test_the_outermost_scope_retains_and_its_exit_restores_and_trims(libc):
    with retained_heap():
        assert libc.calls == RETAINED
        with retained_heap():
            pass
        assert libc.calls == RETAINED            # an inner scope changes nothing
    assert libc.calls == RETAINED + DEFAULTS + [("trim", 0)]


def test_the_scope_restores_when_tuning_raises(libc):
    with pytest.raises(KeyboardInterrupt):
        with retained_heap():
            raise KeyboardInterrupt
    assert libc.calls[-4:] == DEFAULTS + [("trim", 0)] and heap._DEPTH == [0]


def test_a_disabled_scope_and_a_library_without_mallopt_change_nothing(libc, monkeypatch):
    with retained_heap(enabled=False):
        pass
    assert libc.calls == []
    monkeypatch.setattr(heap, "_LIBC", None)
    with retained_heap():
        pass
    assert not heap.retain_in_this_process() and not heap.heap_settings_supported()


def test_a_helper_retains_for_life_once_and_its_scopes_then_restore_nothing(libc):
    assert heap.retain_in_this_process() and heap.retain_in_this_process()
    assert libc.calls == RETAINED                # set once
    with retained_heap():
        pass
    assert libc.calls == RETAINED                # a helper never gives it back


def test_retains_heap_reads_each_policys_params():
    class Own:                                   # a user's policy without SearchParams
        pass

    class Sketch:
        def __init__(self, on):
            self.params = SearchParams(retain_heap=on)

    assert heap.retains_heap([Own(), Sketch(True)])
    assert not heap.retains_heap([Sketch(True), Sketch(False)])


def _faults_of_reallocations(n_bytes: int, times: int) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(times):
        a = np.ones(n_bytes // 8)               # touches every page
        del a
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.skipif(not heap.heap_settings_supported(), reason="needs glibc's mallopt")
def test_inside_the_scope_a_freed_block_is_reused_without_page_faults():
    """3 MiB arrays (under the 4 MiB from which numpy asks for huge pages) made and
    freed 20 times: each faults its 768 pages in again with glibc's default values (as
    a scope leaves them), once in all inside a scope."""
    size = 3 << 20
    pages = size // resource.getpagesize()
    with retained_heap():
        _faults_of_reallocations(size, 1)        # the heap grows once
        inside = _faults_of_reallocations(size, 20)
    after = _faults_of_reallocations(size, 20)
    assert inside < pages, inside
    assert after > 10 * pages, after


def _tune(params, fine):
    task = auto.SearchTask(func="steps_test_matmul", args=(16, 16, 16))
    policy = auto.SketchPolicy(task, auto.RandomModel(0), params=params, seed=0, verbose=0)
    seen = []
    opts = auto.TuningOptions(num_measure_trials=4, num_measures_per_round=4, verbose=0,
                              builder=fine, runner=fine,
                              progress_callback=lambda s: seen.append(heap._DEPTH[0]))
    task.tune(opts, policy)
    return seen


def test_tune_retains_the_heap_while_its_rounds_run_unless_asked_not_to(libc):
    fine = Fine()
    assert _tune(SMALL_SEARCH, fine) == [1]
    assert libc.calls == RETAINED + DEFAULTS + [("trim", 0)]
    libc.calls.clear()
    off = SearchParams(evolutionary_search_population=64, evolutionary_search_num_iters=2,
                       retain_heap=False)
    assert _tune(off, fine) == [0] and libc.calls == []


def test_the_task_scheduler_retains_the_heap_while_it_tunes(libc):
    tasks = [auto.SearchTask(func="steps_test_matmul", args=(n, n, n)) for n in (16, 24)]
    ts = auto.TaskScheduler(tasks, callbacks=[])
    fine = Fine()
    ts.tune(auto.TuningOptions(num_measure_trials=8, num_measures_per_round=4, verbose=0,
                               builder=fine, runner=fine), search_policy="sketch.random",
            search_policy_params=SMALL_SEARCH)
    assert libc.calls == RETAINED + DEFAULTS + [("trim", 0)]
