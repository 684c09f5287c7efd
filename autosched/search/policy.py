"""SketchPolicy: sketch generation, random init population, evolutionary search and
epsilon-greedy picking of the states to measure each round (Ansor's search policy).

Invariants: a state (identified by its printed loop nest) is measured at most once per
policy, including states loaded from an earlier log (only when asked: an init search
callback such as ``PreloadMeasuredStates``, run once by the constructor, as TVM's
``init_search_callbacks``); the task's default schedule, when it can be written as a
state, is the first pick of the first round (``seed_default_schedule``); all randomness
comes from the policy's seeded generator (helper islands get seeds drawn from it, so a
parallel search is as reproducible as a serial one); the time spent here (outside build
and run) is accumulated in ``search_seconds`` so the tuner can report its overhead.

The evolutionary search runs as islands (islands.py) when the population is large and
the cost model can be shipped (``snapshot()``): this process evolves its share while
helper processes evolve theirs, and the best of all islands are merged.
"""
from __future__ import annotations

import math
import random
import time
import warnings
from dataclasses import replace

from ..cost_model.base import CostModel
from ..cost_model.xgb_model import XGBModel
from ..default_state import default_state
from ..measure.measurer import MeasureInput
from ..state import State
from .evolution import SearchParams, evolve, next_generation, sample_population
from .gc_pause import paused_gc
from .islands import helpers_for, start_islands
from .mutation_rules import replay
from .sketch_rules import generate_sketches, task_sketch_options

__all__ = ["SearchParams", "SketchPolicy", "EmptyPolicy"]


def _check_callbacks(callbacks) -> list:
    if callbacks is None:
        return []
    if not isinstance(callbacks, (list, tuple)):
        raise TypeError(f"SketchPolicy init_search_callbacks={callbacks!r}: expected a list "
                        "of search callbacks, e.g. [PreloadMeasuredStates(log)]")
    for i, cb in enumerate(callbacks):
        if not callable(getattr(cb, "callback", None)):
            raise TypeError(f"SketchPolicy init_search_callbacks[{i}]={cb!r}: expected a "
                            "SearchCallback (an object with a callback(policy) method)")
    return list(callbacks)


class _Policy:
    """What every policy here keeps: its task, the states measured (``measured_keys``,
    ``measured``: (cost, state) of the successful ones) and the search seconds; its init
    search callbacks run last in the constructor."""

    def __init__(self, task, verbose: int):
        self.task = task
        self.verbose = verbose
        self.measured_keys: set = set()
        self.measured: list = []
        # str(state) -> the figures tuning.retime_states measured for it at the end of
        # earlier tune() calls of this policy, and the faster figure of a candidate the
        # measurer confirmed (its later re-timings continue from them, as the log,
        # which has them all, is ranked)
        self.retimed_figures: dict = {}
        self.search_seconds = 0.0
        self.preloaded = 0            # records loaded by init callbacks (PreloadMeasuredStates)
        self.init_search_callbacks: list = []

    def _run_init_callbacks(self, callbacks) -> None:
        self.init_search_callbacks = _check_callbacks(callbacks)
        for cb in self.init_search_callbacks:
            cb.callback(self)

    @property
    def search_task(self):
        """The task (TVM's name: custom sketch rules read ``policy.search_task``)."""
        return self.task

    def _note_confirmations(self, measurer) -> None:
        """The faster figures of the candidates the measurer ran twice (its
        ``confirm_top_k``; the slower one is the result): kept with the re-timing
        figures, so the re-timing at the end ranks those states by all their figures,
        as the log does."""
        for inp, res in getattr(measurer, "confirmations", ()):
            self.retimed_figures.setdefault(str(inp.state), []).append(res.mean_cost)

    def _note_measured(self, inputs, results) -> None:
        for inp, res in zip(inputs, results):
            self.measured_keys.add(str(inp.state))
            if res.error_no == 0 and res.costs:
                self.measured.append((sum(res.costs) / len(res.costs), inp.state))


class SketchPolicy(_Policy):
    def __init__(self, task, program_cost_model=None, params: SearchParams | None = None,
                 seed: int = 0, verbose: int = 1, init_search_callbacks=None):
        super().__init__(task, verbose)
        self.model = program_cost_model or XGBModel(seed=seed)
        self.params = params or SearchParams()
        self.seed = seed
        self.rng = random.Random(seed)
        self.num_cores = task.hardware_params.num_cores
        self._sketches: list | None = None
        self._default_pending = self.params.seed_default_schedule
        self.custom_sketch_rules: list = []   # PreloadCustomSketchRule callbacks add them
        self._run_init_callbacks(init_search_callbacks)

    # ------------------------------------------------------------------ sketches / init
    def generate_sketches(self, print_for_debug: bool = False) -> list:
        sketches = self._sketches
        if sketches is None:
            sketches = self._sketches = generate_sketches(
                self.task.compute_dag.init_state(), self.num_cores,
                self.custom_sketch_rules, self, **task_sketch_options(self.task))
        if print_for_debug:
            for k, s in enumerate(sketches):
                print(f"=== sketch {k} ===\n{s}")
        return sketches

    def sample_initial_population(self, n: int) -> list:
        return sample_population(self.generate_sketches(), n, self.rng, self.num_cores,
                                 self.params.max_sample_tries_factor)

    # ------------------------------------------------------------------ evolution
    def evolutionary_search(self, init_population: list, n_out: int) -> list:
        """The ``n_out`` best-scored unmeasured states evolved from ``init_population``
        in this process, best first."""
        return [st for _, st in self._evolve(init_population, n_out, self.params)]

    def _evolve(self, population, n_out, params) -> list:
        return evolve(self.model, self.task, population, n_out, params, self.rng,
                      self.num_cores, self.measured_keys)

    def _next_generation(self, population, scores) -> list:
        return next_generation(population, scores, self.params, self.rng, self.num_cores)

    def _search(self, n_init: int, extra: list, n_out: int) -> tuple:
        """(random initial sample of this process, best evolved states): the population
        split into islands, one here and one per helper process (islands.py).  Each
        island's initial population is its random share plus, as Ansor's, the best
        measured states (``use_measured_ratio`` of its size) and ``extra`` seeds."""
        p = self.params
        snap = getattr(self.model, "snapshot", None)     # duck-typed models may lack it
        if getattr(type(self.model), "snapshot", None) is CostModel.snapshot:
            snap = None         # the base class's gives None: no helper samples for naught
        helpers = helpers_for(p, self.num_cores) if snap is not None else 0
        if not helpers or snap is None:
            return self._search_here(n_init, extra, n_out)
        share = math.ceil(n_init / (helpers + 1))
        seeds = self._seeds(share, extra)
        island = replace(p, evolutionary_search_population=max(
            1, p.evolutionary_search_population // (helpers + 1)))
        # a custom sketch rule is the user's code, which helpers never import: they get
        # the sketches as steps
        sketch_steps = None if not self.custom_sketch_rules else tuple(
            tuple(s.transform_steps) for s in self.generate_sketches())
        # the helpers sample their islands while this process trains the model (in
        # snapshot()), and import what unpickling it needs (``snapshot_modules``).
        # What later snapshots need (a custom model's; XGBModel needs no import) is
        # imported after this round's islands, while the tuner measures:
        # imported during the first trained round's training instead, it held that
        # round's helper island back by 0.3-0.5 s
        run = start_islands(self.task, island, seeds, helpers, share, self.measured_keys,
                            n_out, self.num_cores, self.rng, sketch_steps,
                            warm_before=getattr(self.model, "snapshot_modules", tuple)(),
                            warm_after=getattr(self.model, "upcoming_modules", tuple)())
        try:
            snapshot = snap()
        except BaseException:
            run.cancel()
            raise
        if snapshot is None:        # this model's scores cannot travel: no islands
            run.cancel()
            return self._search_here(n_init, extra, n_out)
        run.evolve(snapshot)
        init = self.sample_initial_population(share)
        scored = self._evolve(init + seeds, n_out, island)
        done, failed = run.results()
        for msg in failed:
            warnings.warn(f"SketchPolicy: a search island of "
                          f"{self.task.desc or self.task.workload_key!r} failed "
                          f"({msg}); this round uses the other islands", stacklevel=3)
        return init, self._merge(scored, done, n_out)

    def _search_here(self, n_init: int, extra: list, n_out: int) -> tuple:
        """``_search`` without helpers: the whole population evolves in this process."""
        init = self.sample_initial_population(n_init)
        return init, self.evolutionary_search(init + self._seeds(n_init, extra), n_out)

    def _seeds(self, share: int, extra: list) -> list:
        """The best measured states (``use_measured_ratio`` of an island of ``share``
        states), then ``extra``."""
        seeds = [st for _, st in sorted(self.measured, key=lambda x: x[0])]
        return seeds[:int(self.params.use_measured_ratio * share) + 1] + extra

    def _merge(self, scored: list, remote: list, n_out: int) -> list:
        """The ``n_out`` best of every island's (score, state); a helper's steps are
        replayed here only when they make the cut.  Ties keep island order (this
        process first)."""
        pool = [(sc, st) for sc, st in scored]
        for island in remote:
            pool.extend(island)
        pool.sort(key=lambda x: -x[0])        # stable: island order breaks ties
        out: list = []
        seen: set = set()
        for _, item in pool:
            st = item if isinstance(item, State) else replay(self.task.compute_dag, item)
            if st is None:
                continue
            key = str(st)
            if key not in seen and key not in self.measured_keys:
                seen.add(key)
                out.append(st)
                if len(out) == n_out:
                    break
        return out

    # ------------------------------------------------------------------ rounds
    def pick_states(self, num: int) -> list:
        t0 = time.perf_counter()
        with paused_gc():
            picks = self._pick_states(num)
        self.search_seconds += time.perf_counter() - t0
        return picks

    def _pick_states(self, num: int) -> list:
        p = self.params
        # as Ansor: a full population of random samples (at least the minimum), of
        # which this process samples its island's share
        n_init = max(p.sample_init_min_population, p.evolutionary_search_population, num)
        picks: list = []
        keys: set = set()
        dflt = self._take_default_state()
        if dflt is not None:
            self._take(dflt, picks, keys)
        init, best = self._search(n_init, [] if dflt is None else [dflt], num * 2)
        n_greedy = int(round(num * (1 - p.eps_greedy)))
        for st in best:
            if len(picks) >= n_greedy:
                break
            self._take(st, picks, keys)
        rest = [s for s in init if str(s) not in keys]
        self.rng.shuffle(rest)
        for st in rest + best:
            if len(picks) >= num:
                break
            self._take(st, picks, keys)
        return picks

    def _take_default_state(self):
        """The default schedule's state, once per policy, unless already measured."""
        if not self._default_pending:
            return None
        self._default_pending = False
        st = default_state(self.task)
        if st is None or str(st) in self.measured_keys:
            return None
        return st

    def _take(self, st, picks, keys) -> None:
        k = str(st)
        if k not in keys and k not in self.measured_keys:
            keys.add(k)
            picks.append(st)

    def record_measured(self, inputs, results) -> None:
        self._note_measured(inputs, results)
        t0 = time.perf_counter()
        self.model.update(inputs, results)
        self.search_seconds += time.perf_counter() - t0

    def continue_search_one_round(self, num_measure: int, measurer):
        states = self.pick_states(num_measure)
        inputs = [MeasureInput(self.task, st) for st in states]
        results = measurer.measure(self.task, self, inputs) if inputs else []
        self._note_confirmations(measurer)
        self.record_measured(inputs, results)
        return inputs, results


class EmptyPolicy(_Policy):
    """TVM's example policy: every round proposes the ComputeDAG's initial state (the
    unscheduled program) and nothing else, so a tuning run measures that one state once
    per trial (TVM's EmptyPolicy does the same).  For checking a measurement setup."""

    def __init__(self, task, init_search_callbacks=None):
        super().__init__(task, 0)
        self._run_init_callbacks(init_search_callbacks)

    def record_measured(self, inputs, results) -> None:
        self._note_measured(inputs, results)

    def continue_search_one_round(self, num_measure: int, measurer):
        inputs = [MeasureInput(self.task, self.task.compute_dag.init_state())][:num_measure]
        results = measurer.measure(self.task, self, inputs) if inputs else []
        self._note_confirmations(measurer)
        self.record_measured(inputs, results)
        return inputs, results
