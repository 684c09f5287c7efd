"""Tuning loop: TuningOptions, tune(task), resume from a log, apply/print the best.

Resume, as TVM: only when asked.  ``SketchPolicy(task, init_search_callbacks=
[PreloadMeasuredStates(log)])`` preloads the log's records of the task (never measured
again, and the model learns from them; ``TuneStats.preloaded`` counts them); the
``num_measure_trials`` budget counts new measurements on top.  Without it an existing
``RecordToFile`` log only gets new records appended (a one-line hint says how to resume
when ``verbose >= 1``).  Progress callbacks get the TuneStats after every round.
"""
from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from .checks import check_fields
from .default_state import default_state
from .defaults import measure_default_costs
from .errors import AutoSchedError, InvalidStepError
from .measure import background
from .measure.builder import LocalBuilder
from .measure.dask import ClusterError
from .measure.measurer import (
    MeasureInput,
    ProgramMeasurer,
    RecordToFile,
    TuningStopped,
    was_cut_off,
)
from .measure.runner import LocalRunner, more_calls
from .ranking import PREFER_MARGIN, rank_figures, retimed_cost
from .search.callbacks import PreloadMeasuredStates, matching_records, preload
from .search.gc_pause import tuning_scope
from .search.heap import retained_heap, retains_heap
from .search.policy import SketchPolicy
from .state import freeze
from .steps import serialize
from .task_inputs import check_loop_bounds_have_data

__all__ = ["TuningOptions", "TuneStats", "tune", "matching_records", "preload",
           "retime_states", "retimed_cost", "rank_records", "best_state", "apply_best",
           "print_best", "PRINT_MODES", "PREFER_MARGIN"]

PRINT_MODES = ("schedule",)   # TVM also has "cuda": refused, this compiler targets CPUs


@dataclass
class TuningOptions:
    num_measure_trials: int = 0
    early_stopping: int | None = None
    num_measures_per_round: int = 64
    verbose: int = 1
    builder: object = "local"
    runner: object = "local"
    measure_callbacks: list = field(default_factory=list)
    progress_callback: Callable | None = None
    max_continuous_error: int = 150   # failed measurements in a row that stop tuning (TVM's)
    # our addition (the tune CLI turns it on): at the end, the best few states are
    # measured again (all of them per round, so noise hits them alike) and the best is
    # the one with the lowest ``retimed_cost`` (its second-lowest figure); off by
    # default so a log has one line per trial
    retime_top_k: int = 0
    retime_rounds: int = 3
    # our addition too (the tune CLI turns it on): while tuning, a candidate that enters
    # the best ``confirm_top_k`` of its task is measured a second time and costs the
    # slower figure (``ProgramMeasurer``), so the best few -- the ones re-timed at the
    # end, and the search's seeds -- are not just the luckiest single figures
    confirm_top_k: int = 0
    # when the re-timing puts a tuned state ahead of the default schedule's, the two are
    # timed this many more rounds side by side before the tuned one may replace it
    confirm_rounds: int = 8

    def __post_init__(self):
        check_fields(self, ("num_measure_trials", "verbose", "retime_top_k", "retime_rounds",
                            "confirm_top_k", "confirm_rounds"), 0, integer=True)
        check_fields(self, ("num_measures_per_round", "max_continuous_error"), 1, integer=True)
        if self.early_stopping is not None:
            check_fields(self, ("early_stopping",), 1, integer=True)
        for name in ("builder", "runner"):
            if getattr(self, name) != "local" and not hasattr(getattr(self, name),
                                                              "build" if name == "builder"
                                                              else "run"):
                raise TypeError(f"TuningOptions {name}={getattr(self, name)!r}: expected "
                                f"'local' or an object with a "
                                f"{'build' if name == 'builder' else 'run'}() method")

    def make_builder(self):
        return LocalBuilder() if self.builder == "local" else self.builder

    def make_runner(self):
        return LocalRunner() if self.runner == "local" else self.runner


@dataclass
class TuneStats:
    """What a tuning run did: trials, best cost and where the wall time went."""
    trials: int = 0
    preloaded: int = 0
    errors: int = 0               # failed candidates, cut-offs excluded
    cut_off: int = 0        # far slower than the best: stopped on purpose
    best_cost: float = math.inf
    wall_seconds: float = 0.0
    build_seconds: float = 0.0
    run_seconds: float = 0.0
    search_seconds: float = 0.0
    # building and timing the default schedule once at the start: measurement, not
    # search, so it is not search overhead either
    default_seconds: float = 0.0
    stop_reason: str = ""         # why tuning ended before the budget, if it did
    default_cost: float = math.inf  # the default schedule's mean cost (autosched.defaults)
    retimed: int = 0              # extra measurements of the best states (not trials)
    confirmed: int = 0            # second runs of candidates entering the best k (not trials)

    @property
    def measure_seconds(self) -> float:
        """Seconds spent building and running programs (candidates, re-timings and the
        default schedule)."""
        return self.build_seconds + self.run_seconds + self.default_seconds

    @property
    def overhead_share(self) -> float:
        """Share of the wall time outside building and running programs."""
        busy = self.measure_seconds
        return max(0.0, self.wall_seconds - busy) / self.wall_seconds if self.wall_seconds else 0.0


def tune(task, options: TuningOptions, search_policy=None) -> TuneStats:
    check_loop_bounds_have_data(task)
    policy = search_policy or SketchPolicy(task, verbose=options.verbose)
    stats = TuneStats(preloaded=getattr(policy, "preloaded", 0))
    if options.verbose >= 1 and not _asked_to_preload(policy):
        _hint_existing_log(options)
    if policy.measured:
        stats.best_cost = min(c for c, _ in policy.measured)
    # a resumed search trains in its first round: import meanwhile (the default's build)
    background.start(first_round_imports([policy]))
    measurer = ProgramMeasurer(options.make_builder(), options.make_runner(),
                               options.measure_callbacks, verbose=options.verbose,
                               max_continuous_error=options.max_continuous_error,
                               confirm_top_k=options.confirm_top_k)
    start = time.perf_counter()
    # a policy counts its search time over its life; this call's is what it adds
    searched = policy.search_seconds
    try:
        # the default schedule's cost, timed by the same runner: the floor to beat (and
        # the runner's cut-off learns it, so hopeless candidates stop sooner)
        t0, waited = time.perf_counter(), background.waited()
        try:
            stats.default_cost = measure_default_costs([task], measurer.runner)[0]
        except ClusterError as err:
            warnings.warn(f"the default schedule was not measured: {err}", stacklevel=2)
        # waiting for the first round's import is the search's time, not measurement
        stats.default_seconds = time.perf_counter() - t0 - (background.waited() - waited)
        with tuning_scope(), retained_heap(retains_heap([policy])):
            _run_rounds(policy, measurer, options, stats, start, searched)
        if not stats.stop_reason and options.retime_top_k and options.retime_rounds:
            _retime_best(task, policy, measurer, options, stats)
    finally:
        _account(stats, measurer, policy, start, searched)
        _close(measurer)
    return stats


def _run_rounds(policy, measurer, options: TuningOptions, stats: TuneStats, start: float,
                searched: float) -> None:
    """Search and measure rounds until the budget is spent, the search space is
    exhausted, early stopping triggers or the measurements stop."""
    best_at = 0
    while stats.trials < options.num_measure_trials:
        n = min(options.num_measures_per_round, options.num_measure_trials - stats.trials)
        more = stats.trials + n < options.num_measure_trials
        measurer.import_while_building = upcoming_imports(policy) if more else ()
        try:
            inputs, results = policy.continue_search_one_round(n, measurer)
        except (ClusterError, TuningStopped) as err:
            # the cluster is gone, or everything fails: the finished batches are logged
            stats.stop_reason = str(err)
            warnings.warn(f"tuning stopped: {err}", stacklevel=3)
            break
        if not inputs:
            break   # the search space is exhausted
        for res in results:
            stats.trials += 1
            if res.error_no == 0 and res.costs:
                cost = sum(res.costs) / len(res.costs)
                if cost < stats.best_cost:
                    stats.best_cost, best_at = cost, stats.trials
            elif was_cut_off(res):
                stats.cut_off += 1
            else:
                stats.errors += 1
        _account(stats, measurer, policy, start, searched)
        if options.progress_callback:
            options.progress_callback(stats)
        if options.early_stopping and stats.trials - best_at >= options.early_stopping:
            break



def first_round_imports(policies) -> tuple:
    """The modules the policies' cost models need in their first round
    (``snapshot_modules``; ``XGBModel`` names none: it calls xgboost's C API).

    Why: nothing in a resumed ``tune`` call runs before that training but building and
    timing the default schedule, so the import (1.5-1.9 s in full here) starts with the
    call, overlaps the default's build, and is settled before the default is timed
    (``defaults.measure_default_costs``)."""
    names: list = []
    for policy in policies:
        needed = getattr(getattr(policy, "model", None), "snapshot_modules", None)
        if callable(needed):
            names += [n for n in needed() if n not in names]
    return tuple(names)


def upcoming_imports(policy) -> tuple:
    """The modules ``policy``'s cost model imports in later rounds (``upcoming_modules``:
    none for ``XGBModel``); the measurer imports them while a round builds, when
    another round follows (``measure/background.py``)."""
    upcoming = getattr(getattr(policy, "model", None), "upcoming_modules", None)
    return tuple(upcoming()) if callable(upcoming) else ()

def _retime_best(task, policy, measurer, options: TuningOptions, stats: TuneStats) -> None:
    """Re-time the best states (``retime_states``) and make ``stats.best_cost`` the
    lowest ``retimed_cost``."""
    got = retime_or_warn(task, policy, measurer, options)
    if got is not None:
        stats.retimed += got[1]
        if math.isfinite(got[0]):
            stats.best_cost = got[0]


def retime_or_warn(task, policy, measurer, options: TuningOptions):
    """``retime_states`` with the options' k and rounds; None (after a warning) when the
    measurements stopped (the cluster is gone, or everything fails)."""
    try:
        return retime_states(task, policy, measurer, options.retime_top_k,
                             options.retime_rounds, options.confirm_rounds)
    except (ClusterError, TuningStopped) as err:
        warnings.warn(f"re-timing the best states stopped: {err}", stacklevel=3)
        return None


def retime_states(task, policy, measurer, top_k: int, rounds: int,
                  confirm_rounds: int = 0) -> tuple:
    """Measure the ``top_k`` best states of ``policy`` and the default schedule's state
    ``rounds`` more times, all of them per round (each round in a rotated order); when a
    tuned state then leads the default's (by ``rank_records``' rule), time just those two
    ``confirm_rounds`` more rounds, and again for the next tuned state when that one
    takes the lead (each state once).  Returns (the ``retimed_cost`` of the state
    ``rank_records`` puts first, number of measurements), the cost inf when fewer than
    two states qualify (nothing measured).

    A logged best is the best of many noisy measurements, so it is optimistic, and the
    state with the lowest single figure is often not the fastest.  The measurements are
    logged like any other (records of the same steps), and ``rank_records`` ranks a state
    by its ``retimed_cost`` (the second-lowest of its figures), so ``apply_best`` and
    ``ApplyHistoryBest`` pick by the same rule.  Each state is built once and its object
    timed every round, each measurement with at least ``RETIME_CALLS`` calls
    (``more_calls``): the ranking must resolve a few percent.

    Why the confirmation: four figures per state do not separate a tuned state from the
    default here.  On the Zen 3, whole seconds of measurements run 1.3-2x slower than
    the rest; two matmul 512 states that won their three re-timing rounds by 20%
    (figures of 1.42-1.69 ms against the default's 1.78-2.10 ms) timed 4% and 11%
    *slower* than the default over 40 interleaved rounds.  With 12 figures each, the
    median check of ``rank_records`` decides.  A confirmation figure is the *mean* of its
    calls (``more_calls(mean=True)``), what consecutive calls deliver, not their median:
    some kernels' calls are heavy-tailed.  On matmul 1024 the default schedule's calls
    measured a median of 14.7 ms with calls of 24 ms among them; by the per-call median
    it was 8% faster than a tuned state, by the mean (a model running it, and TVM's
    measure) 6% slower, and confirmation by medians answered with the default on every
    seed of matmul 1024 and conv2d.  Measurement errors (ClusterError, TuningStopped)
    propagate."""
    ranked: dict = {}
    for cost, st in sorted(policy.measured, key=lambda x: x[0]):
        ranked.setdefault(str(st), (st, [cost]))
        if len(ranked) == top_k:
            break
    # the default schedule's state competes too: the answer is never a state that only
    # looked faster than the default because it was measured at a faster moment
    dflt = default_state(task)
    dkey = None if dflt is None else str(dflt)
    if dkey is not None and dkey not in ranked and \
            dkey in getattr(policy, "measured_keys", (dkey,)):
        cost = next((c for c, st in policy.measured if str(st) == dkey), None)
        if cost is not None:
            ranked[dkey] = (dflt, [cost])
    if len(ranked) < 2 or not rounds:
        return math.inf, 0
    inputs = [MeasureInput(task, st) for st, _ in ranked.values()]
    builds = measurer.build(inputs)
    # a policy re-timed before (an earlier tune() call) continues from those figures
    past = getattr(policy, "retimed_figures", None)      # None: a duck-typed policy
    figures = {k: costs + (past or {}).get(k, []) for k, (_, costs) in ranked.items()}
    keys = list(figures)
    with more_calls(measurer.runner, RETIME_CALLS):
        done = _time_rounds(policy, measurer, inputs, builds, range(len(keys)), rounds,
                            figures)
    order = rank_figures(figures, dkey)
    # a leader that its confirmation slows may hand the lead to the next tuned state,
    # which is then confirmed too (each state at most once: at most ``top_k`` duels)
    confirmed: set = set()
    while confirm_rounds and dkey in figures and order[0] not in confirmed | {dkey}:
        confirmed.add(order[0])
        pair = (keys.index(order[0]), keys.index(dkey))
        with more_calls(measurer.runner, RETIME_CALLS, mean=True):
            done += _time_rounds(policy, measurer, inputs, builds, pair, confirm_rounds,
                                 figures)
        order = rank_figures(figures, dkey)
    if past is not None:
        past.update({k: v[1:] for k, v in figures.items()})    # all but the trial's
    return retimed_cost(figures[order[0]]), done


def _time_rounds(policy, measurer, inputs, builds, which, rounds: int, figures) -> int:
    """Time the built ``inputs`` at positions ``which`` once per round for ``rounds``
    rounds, appending each figure to ``figures[str(state)]``; the number of
    measurements.  Each round starts one state later: the first run after a build phase
    is sometimes several times slower (measured up to 10x here), and a state that came
    first in every round would lose by that alone."""
    which = list(which)
    n = len(which)
    for r in range(rounds):
        order = [which[(r + k) % n] for k in range(n)]
        results = measurer.run_built(policy, [inputs[k] for k in order],
                                     [builds[k] for k in order])
        for k, res in zip(order, results):
            if res.error_no == 0 and res.costs:
                figures[str(inputs[k].state)].append(sum(res.costs) / len(res.costs))
    return n * rounds


def _asked_to_preload(policy) -> bool:
    """A PreloadMeasuredStates init callback, or a policy that already has states."""
    return bool(getattr(policy, "measured_keys", None)) or any(
        isinstance(cb, PreloadMeasuredStates)
        for cb in getattr(policy, "init_search_callbacks", ()))


def _hint_existing_log(options: TuningOptions) -> None:
    for cb in options.measure_callbacks:
        if isinstance(cb, RecordToFile) and os.path.exists(cb.filename) \
                and os.path.getsize(cb.filename) > 0:
            print(f"tune: log {cb.filename} exists; new records are appended but the old ones "
                  "are not reused (to resume, pass SketchPolicy(task, init_search_callbacks="
                  f"[auto.PreloadMeasuredStates({cb.filename!r})]))", flush=True)
            return


def _account(stats, measurer, policy, start, searched: float) -> None:
    stats.wall_seconds = time.perf_counter() - start
    stats.build_seconds = measurer.total_build_seconds
    stats.run_seconds = measurer.total_run_seconds
    stats.search_seconds = policy.search_seconds - searched
    stats.confirmed = measurer.confirmed_ct


def _close(measurer) -> None:
    for part in (measurer.builder, measurer.runner):
        close = getattr(part, "close", None)
        if close is not None:
            close()


def best_state(task, log: str, include_compatible: bool = True):
    """(State, Record) of the cheapest state that still replays on ``task``; a cheaper
    one whose steps no longer apply is skipped with a warning.

    A state re-timed at the end of tuning costs its ``retimed_cost`` (the second-lowest
    of its records); the returned record is its cheapest."""
    mode = "compatible" if include_compatible else "exact"
    dflt = default_state(task)
    records = rank_records([r for r in matching_records(log, task, mode) if r.is_valid],
                           prefer=None if dflt is None else default_steps_repr(dflt))
    for rec in records:
        try:
            return serialize.state_from_record(task, rec), rec
        except (InvalidStepError, RecursionError) as err:
            warnings.warn(f"a record of {task.workload_key} in {log} no longer applies "
                          f"({type(err).__name__}: {err}); trying the next best", stacklevel=2)
    raise AutoSchedError(f"no valid record for workload {task.workload_key} on target "
                         f"{task.target} in {log}"
                         + (f" ({len(records)} valid ones do not replay)" if records else ""))


# calls timed per re-timing measurement (a median of 10 calls varies 1-4% here)
RETIME_CALLS = 10


def default_steps_repr(state) -> str:
    """How ``rank_records`` names a state's steps: ``repr`` of a logged record's steps
    (nested tuples, as the record reader makes them)."""
    return repr(tuple(freeze(s.to_record()) for s in state.transform_steps))


def rank_records(records, prefer=None) -> list:
    """One record per distinct step list (its cheapest), best first.

    A state re-timed at the end of tuning (3 or more records) ranks before states
    measured once or twice: the re-timing compared the best few side by side, while a
    single figure may come from a faster moment of a drifting machine (here the same
    kernel measures up to 30% apart minutes apart).  Within each group states are
    ordered by ``retimed_cost``: a state measured twice (confirmed on entering the best
    few while tuning) by its slower figure, a state measured once by its figure.  A log
    without re-timing or confirmations ranks by cost, as TVM's.

    ``prefer`` (the default schedule's step list, as ``repr(steps)``) goes first unless a
    state ranked before it was re-timed as often and is more than ``PREFER_MARGIN``
    faster by ``retimed_cost``, by the median figure and by the mean figure (then the
    first such state goes first, ``ranking.clears``): a tuned schedule replaces the
    default only when it is measurably faster by all three, not by the noise of a few
    measurements.  The median guards against a kernel whose figures are
    bimodal: on Zen 3 a tuned matmul 512 measured 1.40, 1.42 and 1.52 ms in three of
    seven figures and 2.1-2.97 ms in the others; its second-lowest figure beat the
    default's (1.79 ms) by 20%, and an interleaved re-timing found it 0.80x the
    default's speed.  The mean guards against a kernel with a few very slow figures: a
    tuned matmul 1024 led the default by 8% (second-lowest) and 5% (median) over 13
    figures each, two of its eight confirmation figures were half as fast, and it
    re-timed at 0.88x the default; by the mean it was 6% slower.  Over the other 12
    decisions for a tuned state in the same benchmark run, the mean rule changed
    none."""
    groups: dict = {}
    for r in records:
        groups.setdefault(repr(r.input.steps), []).append(r)
    order = rank_figures({k: [x.mean_cost for x in g] for k, g in groups.items()}, prefer)
    return [min(groups[k], key=lambda x: x.mean_cost) for k in order]


def apply_best(task, log: str, layout_rewrite=0, include_compatible: bool = True):
    state, _ = best_state(task, log, include_compatible)
    return task.compute_dag.apply_steps_from_state(state, layout_rewrite)


def print_best(task, log: str, print_mode: str = "schedule") -> str:
    if print_mode == "cuda":
        raise ValueError(f"print_best print_mode={print_mode!r}: CUDA is not supported (this "
                         f"compiler targets CPUs); expected one of "
                         f"{', '.join(map(repr, PRINT_MODES))}")
    if print_mode not in PRINT_MODES:
        raise ValueError(f"print_best print_mode={print_mode!r}: expected one of "
                         f"{', '.join(map(repr, PRINT_MODES))}")
    state, _ = best_state(task, log)
    return task.compute_dag.print_python_code_from_state(state)
