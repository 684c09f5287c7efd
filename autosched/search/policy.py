"""SketchPolicy: sketch generation, random init population, evolutionary search and
epsilon-greedy picking of the states to measure each round (Ansor's search policy).

Invariants: a state (identified by its printed loop nest) is measured at most once per
policy, including states loaded from an earlier log (only when asked: an init search
callback such as ``PreloadMeasuredStates``, run once by the constructor, as TVM's
``init_search_callbacks``); the task's default schedule, when it can be written as a
state, is the first pick of the first round (``seed_default_schedule``); all randomness
comes from the
policy's seeded generator; the time spent here (outside build and run) is accumulated
in ``search_seconds`` so the tuner can report its overhead.
"""
from __future__ import annotations

import heapq
import itertools
import random
import time
from dataclasses import dataclass

from ..checks import check_fields
from ..cost_model.xgb_model import XGBModel
from ..default_state import default_state
from ..errors import InvalidStepError
from ..measure.measurer import MeasureInput
from ..steps.compute import scope_violation
from .init_rules import sample_state
from .mutation_rules import MUTATIONS, mutate
from .sketch_rules import generate_sketches


@dataclass(frozen=True)
class SearchParams:
    """Ansor's search parameters and defaults (population 2048, 4 generations)."""
    eps_greedy: float = 0.05
    sample_init_min_population: int = 50
    evolutionary_search_population: int = 2048
    evolutionary_search_num_iters: int = 4
    evolutionary_search_mutation_prob: float = 0.85
    use_measured_ratio: float = 0.2
    max_sample_tries_factor: int = 8
    mutation_weights: tuple = MUTATIONS
    # not in Ansor: the task's default schedule, as a state, is measured in the first
    # round and joins the population, so the search starts from it (default_state.py)
    seed_default_schedule: bool = True

    def __post_init__(self):
        check_fields(self, ("eps_greedy", "evolutionary_search_mutation_prob",
                            "use_measured_ratio"), 0, high=1)
        check_fields(self, ("sample_init_min_population", "evolutionary_search_population",
                            "max_sample_tries_factor"), 1, integer=True)
        check_fields(self, ("evolutionary_search_num_iters",), 0, integer=True)


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


class SketchPolicy:
    def __init__(self, task, program_cost_model=None, params: SearchParams | None = None,
                 seed: int = 0, verbose: int = 1, init_search_callbacks=None):
        self.task = task
        self.model = program_cost_model or XGBModel(seed=seed)
        self.params = params or SearchParams()
        self.seed = seed
        self.rng = random.Random(seed)
        self.verbose = verbose
        self.num_cores = task.hardware_params.num_cores
        self._sketches: list | None = None
        self.measured_keys: set = set()
        self.measured: list = []      # (cost, state) of successful measurements
        self.search_seconds = 0.0
        self.preloaded = 0            # records loaded by init callbacks (PreloadMeasuredStates)
        self._default_pending = self.params.seed_default_schedule
        self.init_search_callbacks = _check_callbacks(init_search_callbacks)
        for cb in self.init_search_callbacks:
            cb.callback(self)

    # ------------------------------------------------------------------ sketches / init
    def generate_sketches(self, print_for_debug: bool = False) -> list:
        sketches = self._sketches
        if sketches is None:
            sketches = self._sketches = generate_sketches(self.task.compute_dag.init_state(),
                                                          self.num_cores)
        if print_for_debug:
            for k, s in enumerate(sketches):
                print(f"=== sketch {k} ===\n{s}")
        return sketches

    def sample_initial_population(self, n: int) -> list:
        sketches = self.generate_sketches()
        out: list = []
        keys: set = set()
        tries = 0
        while len(out) < n and tries < n * self.params.max_sample_tries_factor:
            tries += 1
            try:
                st = sample_state(self.rng.choice(sketches), self.rng, self.num_cores)
            except InvalidStepError:
                continue
            if scope_violation(st) is not None:
                continue
            key = str(st)
            if key not in keys:
                keys.add(key)
                out.append(st)
        return out

    # ------------------------------------------------------------------ evolution
    def evolutionary_search(self, init_population: list, n_out: int) -> list:
        p = self.params
        population = list(init_population)
        best: list = []            # min-heap of (score, tiebreak, state)
        in_best: set = set()
        tiebreak = 0
        for it in range(p.evolutionary_search_num_iters + 1):
            if not population:
                break
            scores = self.model.predict(self.task, population)
            for sc, st in zip(scores, population):
                key = str(st)
                if key in self.measured_keys or key in in_best:
                    continue
                tiebreak += 1
                item = (sc, tiebreak, st)
                if len(best) < n_out:
                    heapq.heappush(best, item)
                    in_best.add(key)
                elif sc > best[0][0]:
                    in_best.discard(str(heapq.heapreplace(best, item)[2]))
                    in_best.add(key)
            if it == p.evolutionary_search_num_iters:
                break
            population = self._next_generation(population, scores)
        return [st for _, _, st in sorted(best, key=lambda x: (-x[0], x[1]))]

    def _next_generation(self, population, scores) -> list:
        p = self.params
        lo = min(scores)
        weights = [s - lo + 1e-6 for s in scores]
        nxt: list = []
        tries = 0
        # cumulative weights once: a weighted draw is then a bisection, not a pass over
        # the whole population per child
        cum = list(itertools.accumulate(weights))
        while len(nxt) < p.evolutionary_search_population and tries < 4 * \
                p.evolutionary_search_population:
            tries += 1
            parent = self.rng.choices(population, cum_weights=cum, k=1)[0]
            if self.rng.random() < p.evolutionary_search_mutation_prob:
                child = mutate(parent, self.rng, self.num_cores, p.mutation_weights)
                if child is not None and scope_violation(child) is None:
                    nxt.append(child)
            else:
                nxt.append(parent)
        return nxt

    # ------------------------------------------------------------------ rounds
    def pick_states(self, num: int) -> list:
        t0 = time.perf_counter()
        p = self.params
        # as Ansor: a full population of random samples (at least the minimum)
        init = self.sample_initial_population(max(p.sample_init_min_population,
                                                  p.evolutionary_search_population, num))
        seeds = [st for _, st in sorted(self.measured, key=lambda x: x[0])]
        seeds = seeds[:int(p.use_measured_ratio * len(init)) + 1]
        picks: list = []
        keys: set = set()
        dflt = self._take_default_state()
        if dflt is not None:
            self._take(dflt, picks, keys)
            seeds.append(dflt)
        best = self.evolutionary_search(init + seeds, num * 2)
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
        self.search_seconds += time.perf_counter() - t0
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
        for inp, res in zip(inputs, results):
            self.measured_keys.add(str(inp.state))
            if res.error_no == 0 and res.costs:
                self.measured.append((sum(res.costs) / len(res.costs), inp.state))
        t0 = time.perf_counter()
        self.model.update(inputs, results)
        self.search_seconds += time.perf_counter() - t0

    def continue_search_one_round(self, num_measure: int, measurer):
        states = self.pick_states(num_measure)
        inputs = [MeasureInput(self.task, st) for st in states]
        results = measurer.measure(self.task, self, inputs) if inputs else []
        self.record_measured(inputs, results)
        return inputs, results
