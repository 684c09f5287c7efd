"""TaskScheduler: share a trial budget among many tasks (Ansor paper §6, TVM's names).

Role: tune the tasks of a network together with one cost model and one measurer.  After a
warm-up round per task, each round goes to the task whose next round is expected to lower
the objective most (``strategy="gradient"``) or to the next task in turn ("round-robin").
The objective defaults to ``sum(weight_i * best_cost_i)``, the estimated network latency.

The gradient of task i (all terms in seconds per round, the most negative wins):
``df/dg_i * (alpha * backward_i + (1 - alpha) * forward_i)`` where ``df/dg_i`` is the
chain-rule factor by finite difference of the objective, ``backward_i`` the best-cost change
over the last ``backward_window_size`` rounds, and ``forward_i = min(g - g / rounds_i,
beta * flops_i / best_flops_of_similar_tasks) - g`` an optimistic guess of the next round
(similar tasks share a tag: op tags or ``task.desc``, plus the log of the flop count).

Invariants:
- ``best_costs[i]`` is 1e10 (TVM's value) until task i has a valid measurement, then the
  best mean cost in seconds; ``task_costs_history[i]`` gets it after each round of task i;
- a task is dead (never picked again) once a round returned no inputs (its search space is
  exhausted) or more than ``per_task_early_stopping`` of its trials in a row did not improve;
- a round asks for ``min(num_measures_per_round, num_measure_trials // len(tasks))``
  candidates (at least 1; TVM's rule, so every task gets a warm-up round), the last round
  fewer: ``ct`` counts this ``tune`` call's trials and never exceeds ``num_measure_trials``;
- with ``load_log_file`` the status is restored from the log's records of these tasks
  (workload key and target) and their states are preloaded into fresh SketchPolicies, so
  nothing is measured twice; a restored task skips the warm-up.  As in
  ``tuning.tune``, an existing ``RecordToFile`` log is reused only when asked (as TVM).
- builder and runner are closed when ``tune`` returns, whatever happened;
- tasks with a registered default schedule (``autosched.defaults``; every task from
  ``extract_tasks``) have it timed once by the tuner's runner before the first round:
  ``default_costs``, reported beside the bests; the estimated latency counts the better
  of the two per task (what a build with the log runs), while the gradient follows the
  tuned costs alone (a task still slower than its default has the most to gain);
- with ``TuningOptions.retime_top_k`` (``tune --network`` turns it on), each task's best
  states and its default schedule's state are re-timed side by side after the last
  round (``tuning.retime_states``; ``retimed`` counts those measurements, which are not
  trials) and ``best_costs`` become the lowest ``retimed_cost``: ``ApplyHistoryBest``
  ranks by the same records, so the build never takes a state that only looked faster.
Callbacks (progress table, latency log) live in ``task_scheduler_callbacks``.
"""
from __future__ import annotations

import math
import numbers
import os
import random
import re
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

from records import load_records, target_matches

from .checks import check_fields, check_number
from .cost_model.base import RandomModel
from .cost_model.xgb_model import PRIOR_BUILTIN, XGBModel
from .defaults import measure_default_costs
from .measure import background
from .measure.dask import ClusterError
from .measure.measurer import ProgramMeasurer, RecordToFile, TuningStopped
from .search.gc_pause import tuning_scope
from .search.heap import retained_heap, retains_heap
from .search.policy import SearchParams, SketchPolicy
from .task import SearchTask
from .task_scheduler_callbacks import (
    UNTUNED,
    LogEstimatedLatency,
    PrintTableInfo,
    TaskSchedulerCallback,
)
from .tuning import (
    TuningOptions,
    _close,
    first_round_imports,
    preload,
    retime_or_warn,
    upcoming_imports,
)

__all__ = ["TaskScheduler", "TaskSchedulerCallback", "PrintTableInfo", "LogEstimatedLatency",
           "GradientParams", "derive_similarity_tag"]

STRATEGIES = ("gradient", "round-robin")
SEARCH_POLICIES = ("default", "sketch.xgb", "sketch.random")
TAG_ATTR = "auto_scheduler_task_scheduler_tag"


@dataclass(frozen=True)
class GradientParams:
    """Knobs of the gradient strategy (Ansor §6): alpha weighs backward against forward
    gradient, beta bounds the speed-up expected from similar tasks; gamma is kept for TVM
    compatibility (TVM does not use it either)."""
    alpha: float = 0.2
    beta: float = 2.0
    gamma: float = 0.5
    backward_window_size: int = 3

    def __post_init__(self):
        check_fields(self, ("alpha",), 0, high=1)
        check_fields(self, ("beta",), 0, strict=True)
        check_fields(self, ("gamma",), 0)
        check_fields(self, ("backward_window_size",), 1, integer=True)


def derive_similarity_tag(task, log_base: float = 1.618) -> str:
    """Tasks with the same non-empty tag are similar (same kind of ops, flop counts within
    a factor ``log_base``): TVM's op tags if the ops carry them, else the task's ``desc``
    without its trailing ``_<n>`` de-duplication suffixes."""
    dag = task.compute_dag
    parts = [op.attrs[TAG_ATTR] for op in dag.ops if getattr(op, "attrs", {}).get(TAG_ATTR)]
    if not parts and task.desc:
        parts = [re.sub(r"(_\d+)+$", "", str(task.desc))]
    if not parts:
        return ""
    return "_".join(parts) + f"_{int(math.log(dag.flop_ct + 1, log_base))}"


def _check_tasks(tasks) -> list:
    if not isinstance(tasks, (list, tuple)) or not tasks:
        raise ValueError(f"TaskScheduler tasks={tasks!r}: expected a non-empty list of "
                         "SearchTask")
    for i, t in enumerate(tasks):
        if not isinstance(t, SearchTask):
            raise TypeError(f"TaskScheduler tasks[{i}]={t!r}: expected a SearchTask, got "
                            f"{type(t).__name__}")
    return list(tasks)


def _check_weights(weights, n: int) -> list:
    if weights is None:
        return [1.0] * n
    if not hasattr(weights, "__len__") or len(weights) != n:
        raise ValueError(f"TaskScheduler task_weights={weights!r}: expected {n} weights, one "
                         "per task")
    out = []
    for i, w in enumerate(weights):
        # numpy scalars are Real but not int/float; bools are refused by check_number
        if isinstance(w, numbers.Real) and not isinstance(w, (bool, int, float)):
            w = float(w)
        out.append(check_number(w, f"TaskScheduler task_weights[{i}]", 0, strict=True))
    return out


def _search_params(params) -> SearchParams | None:
    if params is None or isinstance(params, SearchParams):
        return params
    if isinstance(params, dict):
        return SearchParams(**params)
    raise TypeError(f"TaskScheduler.tune search_policy_params={params!r}: expected None, a "
                    "SearchParams or a dict of its fields")


class TaskScheduler:
    """``TaskScheduler(tasks, task_weights).tune(TuningOptions(...))`` (see the module doc).

    Default callbacks: ``[PrintTableInfo()]`` only.  TVM also adds
    ``LogEstimatedLatency("total_latency.tsv")``, which silently writes a file into the
    working directory; pass it explicitly to get that file.
    """

    def __init__(self, tasks, task_weights=None, objective_func: Callable | None = None,
                 strategy: str = "gradient", load_model_file: str | None = None,
                 load_log_file: str | None = None, alpha: float = 0.2, beta: float = 2,
                 gamma: float = 0.5, backward_window_size: int = 3, callbacks=None,
                 seed: int = 0, cost_model_prior: str | None = PRIOR_BUILTIN):
        self.tasks = _check_tasks(tasks)
        n = len(self.tasks)
        self.task_weights = _check_weights(task_weights, n)
        if objective_func is not None and not callable(objective_func):
            raise TypeError(f"TaskScheduler objective_func={objective_func!r}: expected a "
                            "callable(list of best costs) -> float")
        self.objective_func = objective_func or self._weighted_sum
        if strategy not in STRATEGIES:
            raise ValueError(f"TaskScheduler strategy={strategy!r}: expected one of "
                             f"{', '.join(map(repr, STRATEGIES))}")
        self.strategy = strategy
        self.params = GradientParams(alpha, beta, gamma, backward_window_size)
        self.alpha, self.beta, self.gamma = alpha, beta, gamma
        self.backward_window_size = backward_window_size
        for name, path in (("load_model_file", load_model_file),
                           ("load_log_file", load_log_file)):
            if path is not None and not isinstance(path, (str, os.PathLike)):
                raise TypeError(f"TaskScheduler {name}={path!r}: expected a path or None")
        self.load_model_file = load_model_file and os.fspath(load_model_file)
        self.load_log_file = load_log_file and os.fspath(load_log_file)
        self.cost_model_prior = cost_model_prior    # XGBModel's prior (None: Ansor's)
        self.callbacks = [PrintTableInfo()] if callbacks is None else list(callbacks)
        for cb in self.callbacks:
            if not (callable(getattr(cb, "pre_tune", None))
                    and callable(getattr(cb, "post_tune", None))):
                raise TypeError(f"TaskScheduler callback {cb!r}: expected a "
                                "TaskSchedulerCallback (pre_tune and post_tune methods)")
        self.seed = check_number(seed, "TaskScheduler seed", 0, integer=True)
        self._rng = random.Random(seed)
        self._init_status(n)

    def _init_status(self, n: int) -> None:
        self.task_cts = [0] * n              # rounds given to each task
        self.task_best_cts = [0] * n         # round of each task's last improvement
        self.task_trials = [0] * n           # trials of each task (restored ones included)
        self.task_costs_history: list = [[] for _ in range(n)]
        self.best_costs = [UNTUNED] * n
        self.default_costs = [math.inf] * n  # measured once at the start of ``tune``
        self.cur_score = self._score(self.best_costs)
        self.dead_tasks: set = set()
        self.history: list = []              # (trials, estimated latency s) after each round
        self.preloaded = [0] * n             # records preloaded into each task's policy
        self.retimed = 0                     # end-of-tuning measurements (not trials)
        self._no_gain = [0] * n              # trials since the task last improved
        self._restored = False
        self.tune_option: TuningOptions | None = None
        self.measurer: ProgramMeasurer | None = None
        self.search_policies: list = []
        self.num_measures_per_round = 0
        self.early_stopping_task: int | None = None
        self.ct = self.best_ct = 0
        self.best_score = math.inf
        self.tic = time.time()
        self.stop_reason = ""
        self.flop_cts = [float(t.compute_dag.flop_ct) for t in self.tasks]
        self.task_tags = [derive_similarity_tag(t) for t in self.tasks]
        self.group_task_ids: dict = {}       # tag -> ids of the tasks that share it
        for i, tag in enumerate(self.task_tags):
            if tag:
                self.group_task_ids.setdefault(tag, []).append(i)

    # ------------------------------------------------------------------ objective
    def _weighted_sum(self, costs) -> float:
        return sum(w * c for w, c in zip(self.task_weights, costs))

    def _score(self, costs) -> float:
        return float(self.objective_func(list(costs)))

    @property
    def effective_costs(self) -> list:
        """Per task, what a build with the log runs: the better of the best tuned cost
        and the default schedule's (``autosched.defaults``; inf when unknown)."""
        return [min(b, d) for b, d in zip(self.best_costs, self.default_costs)]

    @property
    def estimated_latency(self) -> float:
        """The objective over ``effective_costs`` in seconds, or inf while a task has
        neither a valid measurement nor a default cost."""
        costs = self.effective_costs
        return self._score(costs) if all(c < UNTUNED / 10 for c in costs) else math.inf

    # ------------------------------------------------------------------ tuning
    def tune(self, tune_option: TuningOptions, search_policy="default",
             search_policy_params=None, adaptive_training: bool | None = None,
             per_task_early_stopping: int | None = None) -> None:
        """Spend ``tune_option.num_measure_trials`` new trials over the tasks.

        ``search_policy``: "default"/"sketch.xgb" (SketchPolicy + one shared XGBModel),
        "sketch.random" (shared RandomModel), or a list of policy objects, one per task,
        each with ``continue_search_one_round(n, measurer) -> (inputs, results)``.
        ``adaptive_training`` goes to the XGBModel made here (TVM's argument: False
        retrains at every round; the default retrains once enough new records arrived).
        """
        if not isinstance(tune_option, TuningOptions):
            raise TypeError(f"TaskScheduler.tune tune_option={tune_option!r}: expected a "
                            "TuningOptions")
        if per_task_early_stopping is not None:
            check_number(per_task_early_stopping, "TaskScheduler.tune per_task_early_stopping",
                         1, integer=True)
        self.tune_option = tune_option
        self.early_stopping_task = per_task_early_stopping
        # TVM: a smaller round when the budget is short, so every task gets a warm-up round
        self.num_measures_per_round = min(
            tune_option.num_measures_per_round,
            max(1, tune_option.num_measure_trials // len(self.tasks)))
        self.search_policies = self._make_policies(search_policy, search_policy_params,
                                                   adaptive_training)
        if self.load_log_file and not self._restored:
            self._restored = True
            self._restore_status(self.load_log_file, self.num_measures_per_round)
        elif not self.load_log_file:
            self._hint_existing_log(tune_option)
        # restored from a log, the shared model trains in the first round
        background.start(first_round_imports(self.search_policies))
        builder, runner = tune_option.make_builder(), tune_option.make_runner()
        self.ct = self.best_ct = 0
        self.tic = time.time()
        self.stop_reason = ""
        try:
            self.measurer = ProgramMeasurer(builder, runner, tune_option.measure_callbacks,
                                            verbose=tune_option.verbose,
                                            max_continuous_error=tune_option.max_continuous_error,
                                            confirm_top_k=tune_option.confirm_top_k)
            if not any(math.isfinite(d) for d in self.default_costs):
                self.default_costs = measure_default_costs(self.tasks, runner)
            with tuning_scope(), retained_heap(retains_heap(self.search_policies)):
                self._run(tune_option)
            if tune_option.retime_top_k and tune_option.retime_rounds and not self.stop_reason:
                self._retime(tune_option)
            # once more at the end (the lowest stands): a floor inflated by a noisy start
            # would let slower records into builds
            if any(math.isfinite(d) for d in self.default_costs) and not self.stop_reason:
                again = measure_default_costs(self.tasks, runner, repeats=1)
                self.default_costs = [min(a, b) for a, b in zip(self.default_costs, again)]
        finally:
            # builder and runner, even when the measurer refused them (e.g. a bad callback)
            _close(SimpleNamespace(builder=builder, runner=runner))

    def _retime(self, opts: TuningOptions) -> None:
        """Per task, re-time its ``retime_top_k`` best states and its default schedule's
        state side by side (``tuning.retime_states``); ``best_costs`` become the lowest
        ``retimed_cost``.  The records go to the log, so ``ApplyHistoryBest`` ranks by them."""
        assert self.measurer is not None
        for i, (task, policy) in enumerate(zip(self.tasks, self.search_policies)):
            if not getattr(policy, "measured", None):
                continue                    # a custom policy, or nothing measured
            got = retime_or_warn(task, policy, self.measurer, opts)
            if got is None:
                return
            self.retimed += got[1]
            if math.isfinite(got[0]):
                self.best_costs[i] = got[0]
        self.cur_score = self._score(self.best_costs)
        if opts.verbose >= 1:
            print(f"TaskScheduler: re-timed the best states of {len(self.tasks)} tasks "
                  f"({self.retimed} measurements, not counted as trials); estimated "
                  f"latency {self.estimated_latency * 1e3:.3f} ms", flush=True)

    def _make_policies(self, search_policy, search_policy_params,
                       adaptive_training=None) -> list:
        n = len(self.tasks)
        if isinstance(search_policy, (list, tuple)):
            if len(search_policy) != n:
                raise ValueError(f"TaskScheduler.tune: {len(search_policy)} search policies "
                                 f"for {n} tasks; expected one per task")
            for i, p in enumerate(search_policy):
                if not callable(getattr(p, "continue_search_one_round", None)):
                    raise TypeError(f"TaskScheduler.tune search_policy[{i}]={p!r}: expected "
                                    "an object with continue_search_one_round(n, measurer)")
            return list(search_policy)
        if search_policy not in SEARCH_POLICIES:
            raise ValueError(f"TaskScheduler.tune search_policy={search_policy!r}: expected "
                             f"one of {', '.join(map(repr, SEARCH_POLICIES))} or a list of "
                             "policies")
        params = _search_params(search_policy_params)
        model: RandomModel | XGBModel
        if search_policy == "sketch.random":
            model = RandomModel(seed=self.seed)
        else:
            model = XGBModel(seed=self.seed, prior=self.cost_model_prior,
                             adaptive_training=adaptive_training)
            if self.load_model_file:
                model.load(self.load_model_file)
        verbose = self.tune_option.verbose if self.tune_option else 1
        # one seed per task: identical streams would make every task sample alike
        return [SketchPolicy(t, model, params, seed=self.seed + i, verbose=verbose)
                for i, t in enumerate(self.tasks)]

    def _run(self, opts: TuningOptions) -> None:
        budget = opts.num_measure_trials
        for idx in range(len(self.tasks)):          # warm-up, skipping restored tasks
            if self.ct >= budget or self.stop_reason:
                return
            if not self.task_cts[idx]:
                self._tune_task(idx)
        self.best_ct, self.best_score = self.ct, self.cur_score
        task_idx = -1
        while (self.ct < budget and len(self.dead_tasks) < len(self.tasks)
               and not self.stop_reason):
            task_idx = self._next_task(task_idx)
            self._tune_task(task_idx)
            self._adjust_similarity_group(task_idx)
            if self._early_stop(opts):
                break

    def _early_stop(self, opts: TuningOptions) -> bool:
        if self.cur_score < self.best_score:
            self.best_score, self.best_ct = self.cur_score, self.ct
            return False
        es = opts.early_stopping
        if es is None or self.ct - self.best_ct < es or not math.isfinite(
                self.estimated_latency):
            return False
        self.stop_reason = f"no improvement in the last {es} measurement trials"
        if opts.verbose >= 1:
            print(f"TaskScheduler: stop early: {self.stop_reason}", flush=True)
        return True

    def _tune_task(self, idx: int) -> None:
        """One round of task ``idx``; updates the status and kills the task if it is done."""
        assert self.tune_option is not None and self.measurer is not None
        for cb in self.callbacks:
            cb.pre_tune(self, idx)
        n = min(self.num_measures_per_round, self.tune_option.num_measure_trials - self.ct)
        more = self.ct + n < self.tune_option.num_measure_trials
        self.measurer.import_while_building = \
            upcoming_imports(self.search_policies[idx]) if more else ()
        try:
            inputs, results = self.search_policies[idx].continue_search_one_round(
                n, self.measurer)
        except (ClusterError, TuningStopped) as err:
            # the cluster is gone, or everything fails: every finished batch is already in the log
            self.stop_reason = str(err)
            warnings.warn(f"tuning stopped: {err}", stacklevel=4)
            return
        improved = False
        for res in results:
            if res.error_no == 0 and res.costs:
                cost = sum(res.costs) / len(res.costs)
                if cost < self.best_costs[idx]:
                    self.best_costs[idx], improved = cost, True
        self.task_cts[idx] += 1
        self.task_trials[idx] += len(inputs)
        self._no_gain[idx] = 0 if improved else self._no_gain[idx] + len(inputs)
        if improved:
            self.task_best_cts[idx] = self.task_cts[idx]
        self.task_costs_history[idx].append(self.best_costs[idx])
        self.ct += len(inputs)
        self.cur_score = self._score(self.best_costs)
        self.history.append((self.ct, self.estimated_latency))
        if not inputs or (self.early_stopping_task is not None
                          and self._no_gain[idx] > self.early_stopping_task):
            self.dead_tasks.add(idx)
        for cb in self.callbacks:
            cb.post_tune(self, idx)

    # ------------------------------------------------------------------ task choice
    def _next_task(self, prev: int) -> int:
        n = len(self.tasks)
        if self.strategy == "round-robin":
            idx = (prev + 1) % n
            while idx in self.dead_tasks:
                idx = (idx + 1) % n
            return idx
        alive = [i for i in range(n) if i not in self.dead_tasks]
        grads = {i: self._gradient(i) for i in alive}
        if max(grads.values()) == min(grads.values()):
            return self._rng.choice(alive)
        return min(alive, key=lambda i: grads[i])

    def _gradient(self, i: int) -> float:
        """d(objective)/d(round of task i); the most negative pays most (see module doc)."""
        best = self.best_costs[i]
        # a step relative to the cost: a fixed 1e-4 s would exceed a 10 us kernel's cost
        delta = max(best * 1e-3, 1e-12)
        moved = list(self.best_costs)
        moved[i] -= delta
        chain_grad = (self._score(self.best_costs) - self._score(moved)) / delta
        hist, w = self.task_costs_history[i], self.params.backward_window_size
        # from the history list itself: after a restore, rounds != len(history)
        backward = (hist[-1] - hist[-1 - w]) / w if len(hist) > w else 0.0
        g_next = best - best / max(self.task_cts[i], 1)
        group = self.group_task_ids.get(self.task_tags[i], []) if self.task_tags[i] else []
        if len(group) > 1:
            best_flops = max(self.flop_cts[j] / self.best_costs[j] for j in group)
            if best_flops > 0:
                g_next = min(g_next, self.params.beta * self.flop_cts[i] / best_flops)
        forward = g_next - best
        a = self.params.alpha
        return chain_grad * (a * backward + (1 - a) * forward)

    def _adjust_similarity_group(self, idx: int) -> None:
        """Drop a task from its group when, tuned far more than the others, it still is
        ``beta`` times slower than the group's best: it is not similar after all."""
        group = self.group_task_ids.get(self.task_tags[idx]) if self.task_tags[idx] else None
        if group is None or len(group) <= 1:
            return
        best_flops = max(self.flop_cts[j] / self.best_costs[j] for j in group)
        cur_flops = self.flop_cts[idx] / self.best_costs[idx]
        most_others = max(self.task_cts[j] for j in group if j != idx)
        if cur_flops < best_flops / self.params.beta and self.task_cts[idx] > 5 + most_others:
            self.task_tags[idx] = ""
            group.remove(idx)

    # ------------------------------------------------------------------ resume
    def _restore_status(self, log: str, per_round: int) -> None:
        """Best costs and round counts from the log's records of these tasks, then preload
        the tasks' fresh SketchPolicies with their measured states."""
        if not os.path.exists(log):
            if self.tune_option is not None and self.tune_option.verbose >= 1:
                print(f"TaskScheduler: load_log_file {log} does not exist yet; nothing to "
                      "restore", flush=True)
            return
        index: dict = {}
        for i, t in enumerate(self.tasks):
            index.setdefault(t.workload_key, []).append(i)
        counts = [0] * len(self.tasks)
        for rec in load_records(log):
            # same rule as tuning.matching_records, which preload() uses below
            for i in [i for i in index.get(rec.input.workload_key, ())
                      if target_matches(rec.input.target, str(self.tasks[i].target),
                                        "compatible")]:
                counts[i] += 1
                r = rec.result
                if r.error_no == 0 and r.costs:
                    self.best_costs[i] = min(self.best_costs[i], sum(r.costs) / len(r.costs))
        for i, c in enumerate(counts):
            if not c:
                continue
            # rounds are an estimate (the earlier run's round size may differ); at least 1
            # so that the task skips the warm-up
            self.task_cts[i] = self.task_best_cts[i] = max(1, int(c / per_round + 0.5))
            self.task_trials[i] += c
            self.task_costs_history[i].append(self.best_costs[i])
            policy = self.search_policies[i]
            if isinstance(policy, SketchPolicy) and not policy.measured_keys:
                self.preloaded[i] = preload(policy, log)
        self.cur_score = self._score(self.best_costs)
        if self.tune_option is not None and self.tune_option.verbose >= 1:
            print(f"TaskScheduler: restored {sum(counts)} records of {len(self.tasks)} tasks "
                  f"from {log}", flush=True)

    @staticmethod
    def _hint_existing_log(opts: TuningOptions) -> None:
        for cb in opts.measure_callbacks:
            if isinstance(cb, RecordToFile) and os.path.exists(cb.filename) \
                    and os.path.getsize(cb.filename) > 0:
                if opts.verbose >= 1:
                    print(f"TaskScheduler: log {cb.filename} exists; new records are appended "
                          "but the old ones are not reused (to resume, pass "
                          f"TaskScheduler(..., load_log_file={cb.filename!r}))", flush=True)
                return
