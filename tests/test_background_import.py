"""What the next rounds import runs in a background thread while a round builds
(measure/background.py), never while a candidate is timed, and only when another round
follows."""
import random
import sys
import threading
import time

import autosched_helpers  # noqa: F401  (registers the steps_test_* workloads)
import pytest
from autosched_helpers import SMALL_SEARCH, Fine

import autosched as auto
from autosched import (
    catalog,  # noqa: F401  (registers the built-in workloads)
    tuning,
)
from autosched.cost_model.base import CostModel
from autosched.cost_model.xgb_model import XGBModel
from autosched.measure import background
from autosched.tuning import first_round_imports

SLOW = """
import threading, time
STARTED_IN = threading.current_thread().name
time.sleep({delay})
DONE = True
"""


@pytest.fixture
def slow_module(tmp_path, monkeypatch):
    """A fresh module name whose import takes ``delay`` seconds."""
    made = []

    def make(delay=0.4, body=SLOW):
        name = f"bg_import_probe_{len(made)}_{random.randrange(10**9)}"
        (tmp_path / f"{name}.py").write_text(body.format(delay=delay))
        made.append(name)
        return name

    monkeypatch.syspath_prepend(str(tmp_path))
    yield make
    background.settle()
    for name in made:
        sys.modules.pop(name, None)


def test_start_imports_in_a_thread_and_settle_waits_for_it(slow_module):
    name = slow_module()
    t0 = time.perf_counter()
    assert background.start((name,)) is True
    assert time.perf_counter() - t0 < 0.2            # start does not wait
    assert background.start((name,)) is False        # one import thread at a time
    background.settle()
    mod = sys.modules[name]
    assert mod.DONE and mod.STARTED_IN == "autosched-import"
    assert threading.current_thread().name != mod.STARTED_IN


def test_imported_modules_start_nothing():
    assert background.start(("json", "math")) is False
    assert background.start(()) is False


def test_a_failing_import_is_dropped_and_raises_where_it_is_next_imported(slow_module):
    name = slow_module(body="raise ImportError('probe: broken on purpose')  # {delay}")
    assert background.start((name,)) is True
    background.settle()                     # no error here
    assert name not in sys.modules
    with pytest.raises(ImportError, match="probe: broken on purpose"):
        __import__(name)


class _Recorder(Fine):
    """Fine, recording per run whether the probe module was whole, and taking a while
    to build."""

    def __init__(self, name):
        self.name, self.runs = name, []

    def build(self, inputs, verbose=0):
        time.sleep(0.05)
        return super().build(inputs, verbose)

    def run(self, inputs, build_results, verbose=0):
        mod = sys.modules.get(self.name)
        self.runs.append(bool(mod is not None and getattr(mod, "DONE", False)))
        return super().run(inputs, build_results, verbose)


def test_the_measurer_imports_while_building_and_waits_before_it_runs(slow_module):
    name = slow_module(delay=0.5)
    fake = _Recorder(name)
    measurer = auto.ProgramMeasurer(fake, fake, [])
    measurer.import_while_building = (name,)
    task = auto.SearchTask(func="steps_test_matmul", args=(16, 16, 16))
    inp = auto.MeasureInput(task, task.compute_dag.init_state)
    results = measurer.measure(task, None, [inp])
    assert results[0].error_no == 0
    assert fake.runs == [True]                         # imported before the run
    assert sys.modules[name].STARTED_IN == "autosched-import"
    assert measurer.last_build_seconds < 0.4           # the wait is not build time


class _NeedsProbe(CostModel):
    """A cost model whose later rounds need the probe module."""

    def __init__(self, name):
        self.name = name

    def update(self, inputs, results):
        pass

    def predict(self, task, states):
        return [random.Random(str(s)).random() for s in states]

    def upcoming_modules(self):
        return (self.name,)


@pytest.mark.parametrize("trials, imported", [(8, True), (4, False)])
def test_tune_imports_what_later_rounds_need_only_when_a_round_follows(
        slow_module, trials, imported):
    name = slow_module(delay=0.1)
    task = auto.SearchTask(func="steps_test_matmul", args=(16, 16, 16))
    policy = auto.SketchPolicy(task, _NeedsProbe(name), params=SMALL_SEARCH, seed=0,
                               verbose=0)
    fine = Fine()
    task.tune(auto.TuningOptions(num_measure_trials=trials, num_measures_per_round=4,
                                 verbose=0, builder=fine, runner=fine), policy)
    assert (name in sys.modules) is imported


def test_the_task_scheduler_imports_what_later_rounds_need(slow_module):
    name = slow_module(delay=0.1)
    tasks = [auto.SearchTask(func="steps_test_matmul", args=(n, n, n)) for n in (16, 24)]
    policies = [auto.SketchPolicy(t, _NeedsProbe(name), params=SMALL_SEARCH, seed=0,
                                  verbose=0) for t in tasks]
    fine = Fine()
    ts = auto.TaskScheduler(tasks, callbacks=[])
    ts.tune(auto.TuningOptions(num_measure_trials=16, num_measures_per_round=4, verbose=0,
                               builder=fine, runner=fine), search_policy=policies)
    assert sys.modules[name].STARTED_IN == "autosched-import"


class _TrainsAtOnce(_NeedsProbe):
    """A cost model that trains in its first round (as one holding a preloaded log):
    its first snapshot needs the probe module."""

    def snapshot_modules(self):
        return (self.name,)


def test_first_round_imports_ask_the_models_snapshot():
    task = auto.SearchTask(func="steps_test_matmul", args=(16, 16, 16))
    fresh = auto.SketchPolicy(task, _NeedsProbe("x"), params=SMALL_SEARCH, seed=0, verbose=0)
    resumed = auto.SketchPolicy(task, _TrainsAtOnce("y"), params=SMALL_SEARCH, seed=0,
                                verbose=0)
    assert first_round_imports([fresh]) == ()
    assert first_round_imports([resumed, resumed]) == ("y",)
    assert first_round_imports([object()]) == ()
    # a fresh XGBModel scores with its prior (numpy) in the first round
    model = XGBModel(seed=0)
    assert model.snapshot_modules() == ()


def test_a_resumed_tune_imports_with_the_call_and_settles_before_the_default_runs(
        slow_module, monkeypatch):
    """One round (no later round to import for), and the model trains in it: the import
    starts with the call, during the default schedule's build, and is whole before the
    default schedule is timed."""
    name = slow_module(delay=0.3)
    task = auto.SearchTask(func="matmul", args=(16, 16, 16))     # has a default schedule
    policy = auto.SketchPolicy(task, _TrainsAtOnce(name), params=SMALL_SEARCH, seed=0,
                               verbose=0)
    fake = _Recorder(name)
    spent = []
    real = tuning.measure_default_costs

    def timed(*args, **kw):
        t0 = time.perf_counter()
        try:
            return real(*args, **kw)
        finally:
            spent.append(time.perf_counter() - t0)
    monkeypatch.setattr(tuning, "measure_default_costs", timed)
    w0 = background.waited()
    stats = task.tune(auto.TuningOptions(num_measure_trials=4, num_measures_per_round=4,
                                         verbose=0, builder=fake, runner=fake), policy)
    assert sys.modules[name].STARTED_IN == "autosched-import"
    assert fake.runs and all(fake.runs)          # the default's runs and the round's
    # the wait for the import is the search's time, not the default's measurement
    wait = background.waited() - w0
    assert wait > 0
    assert stats.default_seconds == pytest.approx(spent[0] - wait, abs=0.01)


def test_settle_counts_its_waits(slow_module):
    name = slow_module(delay=0.2)
    w0 = background.waited()
    background.settle()                          # nothing runs: no wait
    assert background.waited() == w0
    background.start((name,))
    background.settle()
    assert 0.1 < background.waited() - w0 < 5
