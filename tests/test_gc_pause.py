"""The cyclic collector around search rounds (search/gc_pause.py): inside a tuning scope
a round's survivors are frozen, and the outermost scope unfreezes them; a process that
froze objects itself keeps its permanent generation untouched."""
import gc
import weakref

import autosched_helpers  # noqa: F401  (registers the steps_test_* workloads)
import pytest
from autosched_helpers import SMALL_SEARCH, Fine

import autosched as auto
from autosched.search import gc_pause
from autosched.search.gc_pause import paused_gc, tuning_scope
from autosched.task_scheduler_callbacks import TaskSchedulerCallback


@pytest.fixture(autouse=True)
def _clean_collector():
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    yield
    gc.unfreeze()
    gc.enable()


def test_a_round_inside_a_tuning_scope_freezes_what_it_kept_and_the_scope_unfreezes():
    kept = []
    with tuning_scope():
        with paused_gc():
            kept.append([[] for _ in range(100)])
            assert gc.get_freeze_count() == 0 and not gc.isenabled()
        assert gc.get_freeze_count() >= 101 and gc.isenabled()
        assert not any(o is kept[0] for o in gc.get_objects())  # collections skip it
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    assert any(o is kept[0] for o in gc.get_objects())      # scanned again


class _Cycle:
    def __init__(self):
        self.me = self


def test_a_cycle_that_became_garbage_in_a_round_is_collected_within_collect_every_rounds():
    with tuning_scope():
        with paused_gc():
            ref = weakref.ref(_Cycle())         # garbage at once, but only as a cycle
        for _ in range(gc_pause.COLLECT_EVERY - 2):
            with paused_gc():
                pass
        assert ref() is not None                 # frozen with the round's survivors
        with paused_gc():
            pass
        assert ref() is None                     # the scope's periodic collection
        assert gc.get_freeze_count() > 0         # and the survivors frozen again


def test_a_round_outside_a_tuning_scope_freezes_nothing():
    with paused_gc():
        junk = [[] for _ in range(10)]
    assert gc.get_freeze_count() == 0 and gc.isenabled() and len(junk) == 10


def test_nested_scopes_unfreeze_once_at_the_outermost_exit():
    with tuning_scope():
        with tuning_scope():
            with paused_gc():
                pass
        assert gc.get_freeze_count() > 0            # the inner exit kept them frozen
    assert gc.get_freeze_count() == 0


def test_the_scope_unfreezes_when_tuning_raises():
    with pytest.raises(KeyboardInterrupt):
        with tuning_scope():
            with paused_gc():
                pass
            raise KeyboardInterrupt
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_a_process_that_froze_objects_itself_keeps_them_and_freezes_no_more():
    gc.freeze()
    mine = gc.get_freeze_count()
    assert mine > 0
    with tuning_scope():
        with paused_gc():
            extra = [[] for _ in range(100)]
    assert gc.get_freeze_count() == mine and len(extra) == 100


def test_a_disabled_collector_stays_disabled_and_unfrozen():
    gc.disable()
    with tuning_scope():
        with paused_gc():
            pass
        assert not gc.isenabled() and gc.get_freeze_count() == 0


def test_tune_freezes_its_rounds_survivors_and_leaves_nothing_frozen(tmp_path):
    task = auto.SearchTask(func="steps_test_matmul", args=(16, 16, 16))
    policy = auto.SketchPolicy(task, auto.RandomModel(0), params=SMALL_SEARCH, seed=0,
                               verbose=0)
    during = []
    fine = Fine()
    opts = auto.TuningOptions(num_measure_trials=8, num_measures_per_round=4, verbose=0,
                              builder=fine, runner=fine,
                              progress_callback=lambda s: during.append(
                                  gc.get_freeze_count()))
    stats = task.tune(opts, policy)
    assert stats.trials == 8 and len(during) == 2
    assert all(n > 0 for n in during)
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_the_task_scheduler_leaves_nothing_frozen(tmp_path):
    tasks = [auto.SearchTask(func="steps_test_matmul", args=(n, n, n)) for n in (16, 24)]
    ts = auto.TaskScheduler(tasks, callbacks=[])
    fine = Fine()
    seen = []

    class Spy(TaskSchedulerCallback):
        def pre_tune(self, task_scheduler, task_id):
            seen.append(gc.get_freeze_count())

    ts.callbacks = [Spy()]
    ts.tune(auto.TuningOptions(num_measure_trials=8, num_measures_per_round=4, verbose=0,
                               builder=fine, runner=fine), search_policy="sketch.random",
            search_policy_params=SMALL_SEARCH)
    assert len(seen) == 2 and seen[1] > 0        # the first round's survivors, frozen
    assert gc.get_freeze_count() == 0 and gc.isenabled()
