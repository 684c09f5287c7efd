"""Default schedules as the floor of tuning: what a task costs without any tuning.

``register_default_schedule(key, make)`` remembers how to schedule a workload the way the
compiler would without a tuning record (``make() -> (schedule, tensors)``; for a fused
group of a relay model it is the op strategy's schedule, registered by
``extract_tasks``; the built-in catalog registers topi's schedules per workload
function).  ``measure_default_costs(tasks, runner)`` builds those schedules here
and times them with the tuner's own runner, so the default and the candidates are timed
under the same conditions (and the runner's cut-off learns the default's cost, which
stops hopeless candidates sooner).

The costs serve three readers: the TaskScheduler reports them beside every best; the
estimated end-to-end latency counts ``min(best, default)`` per task, because that is
what a build with the log runs; and ``ApplyHistoryBest`` skips records slower than the
default when the log's task table (``LOG.tasks.json``) carries ``default_cost``.

Invariants: a default measurement is never written to a log (its state would replay as
the naive, un-transformed schedule); a task without a registered default, or whose
default fails to build or run, gets ``inf`` and no floor.  (The search measures the
default schedule again as a State, ``default_state.py``; that one is an ordinary record.)
"""
from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable

import compiler

from .errors import WorkloadError
from .measure import background
from .measure.measurer import BuildResult, MeasureErrorNo, MeasureInput
from .workload import decode_workload_key

__all__ = ["register_default_schedule", "register_default_schedule_func",
           "has_default_schedule", "default_schedule_maker", "layout_free_schedule_maker",
           "measure_default_costs"]

_DEFAULTS: dict = {}       # workload key -> make() -> (te Schedule, tensors)
_FUNC_DEFAULTS: dict = {}  # workload function name -> make(*args) -> (te Schedule, tensors)
_FUNC_LAYOUT_FREE: dict = {}  # the same, for tasks whose layout-free weights are rewritten


def register_default_schedule(workload_key: str, make: Callable) -> None:
    """The default schedule of one workload key (a fused group of a model)."""
    if not callable(make):
        raise TypeError(f"register_default_schedule({workload_key!r}): {make!r} is not "
                        "callable; expected make() -> (schedule, tensors)")
    _DEFAULTS[workload_key] = make


def register_default_schedule_func(func_name: str, make: Callable,
                                   layout_free: Callable | None = None) -> None:
    """The default schedule of every key of a registered workload function:
    ``make(*args) -> (schedule, tensors)`` (the built-in catalog registers topi's).

    ``layout_free(*args)``, when given, is the same schedule written for weights stored
    in the order the kernel reads them: the default of a task that rewrites layouts."""
    for what in (make,) if layout_free is None else (make, layout_free):
        if not callable(what):
            raise TypeError(f"register_default_schedule_func({func_name!r}): {what!r} is "
                            "not callable; expected make(*args) -> (schedule, tensors)")
    _FUNC_DEFAULTS[func_name] = make
    if layout_free is None:
        _FUNC_LAYOUT_FREE.pop(func_name, None)
    else:
        _FUNC_LAYOUT_FREE[func_name] = layout_free


def default_schedule_maker(workload_key: str):
    """``make() -> (schedule, tensors)`` of the key's default schedule, or None."""
    if workload_key in _DEFAULTS:
        return _DEFAULTS[workload_key]
    return _func_maker(_FUNC_DEFAULTS, workload_key)


def layout_free_schedule_maker(workload_key: str):
    """``make() -> (schedule, tensors)`` of the key's default schedule for rewritten
    (layout-free) weights, or None when its function registered none."""
    return _func_maker(_FUNC_LAYOUT_FREE, workload_key)


def _func_maker(table: dict, workload_key: str):
    """The maker ``table`` holds for the key's workload function, bound to its args."""
    try:
        name, args = decode_workload_key(workload_key)
    except WorkloadError:
        return None
    make = table.get(name)
    return None if make is None else functools.partial(make, *args)


def has_default_schedule(workload_key: str) -> bool:
    return default_schedule_maker(workload_key) is not None


def _build_default(task) -> BuildResult:
    t0 = time.perf_counter()
    try:
        sch, args = default_schedule_maker(task.workload_key)()
        func = compiler.lower(sch, args, name="default_function")
        obj, metas, _ir = compiler.build_object(func, task.target, cache=None)
    except Exception as err:  # noqa: BLE001 - a broken default only loses its floor
        return BuildResult.failed(MeasureErrorNo.COMPILE_HOST,
                                  f"default schedule: {type(err).__name__}: {err}",
                                  time.perf_counter() - t0)
    return BuildResult(obj, tuple(metas), MeasureErrorNo.NO_ERROR, "",
                       time.perf_counter() - t0)


def measure_default_costs(tasks, runner, repeats: int = 3) -> list:
    """Seconds of each task's default schedule (inf when it has none or fails): the
    lowest mean over ``repeats`` passes over the tasks.  Noise on a shared machine only
    ever adds time (a parallel region whose second thread was descheduled waits a whole
    time slice, ~8 ms here), and one inflated default would let slower records pass."""
    todo = [k for k, t in enumerate(tasks) if has_default_schedule(t.workload_key)]
    costs = [math.inf] * len(tasks)
    if not todo:
        return costs
    inputs = [MeasureInput(tasks[k], tasks[k].compute_dag.init_state()) for k in todo]
    builds = [_build_default(tasks[k]) for k in todo]
    background.settle()         # an import started with the tuning call never competes
    for _ in range(max(1, repeats)):
        for k, res in zip(todo, runner.run(inputs, builds, verbose=0)):
            if res.is_valid:
                costs[k] = min(costs[k], res.mean_cost)
    return costs
