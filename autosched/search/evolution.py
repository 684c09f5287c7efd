"""The evolutionary search itself, as plain functions: Ansor's search parameters, the
random initial population and the generations scored by a cost model.

Role: ``SketchPolicy`` (policy.py) runs these in the tuner's process and ``islands``
runs them in helper processes; both call the same code, so an island is exactly a
smaller search of the same kind.

Invariants: every function takes its random generator and its set of measured states'
printouts explicitly (nothing global), so a search is reproducible from its seed; a
state already measured is never returned as a candidate; children that violate a
compute location's scope are dropped.
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

from ..checks import check_fields, check_number
from ..errors import InvalidStepError
from ..steps.compute import scope_violation
from .init_rules import sample_state
from .mutation_rules import MUTATIONS, mutate


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
    # not in Ansor's parameters (its C++ search runs on a thread pool): helper processes
    # that each evolve an equal share of the population while the tuner evolves its own
    # share (islands.py); None = one per core beyond the first (at most 3).  Searches
    # with a population under ``parallel_min_population`` stay in the tuner's process:
    # a round trip costs more than they do.
    search_workers: int | None = None
    parallel_min_population: int = 512
    # not in Ansor: while tuning, the search processes keep freed memory in their heap
    # instead of giving it back to the system after every batch (search/heap.py)
    retain_heap: bool = True

    def __post_init__(self):
        check_fields(self, ("eps_greedy", "evolutionary_search_mutation_prob",
                            "use_measured_ratio"), 0, high=1)
        check_fields(self, ("sample_init_min_population", "evolutionary_search_population",
                            "max_sample_tries_factor", "parallel_min_population"), 1,
                     integer=True)
        check_fields(self, ("evolutionary_search_num_iters",), 0, integer=True)
        if self.search_workers is not None:
            check_number(self.search_workers, "SearchParams search_workers", 0, integer=True)


def sample_population(sketches, n: int, rng, num_cores: int, tries_factor: int) -> list:
    """Up to ``n`` distinct random concrete states of the sketches."""
    out: list = []
    keys: set = set()
    tries = 0
    while len(out) < n and tries < n * tries_factor:
        tries += 1
        try:
            st = sample_state(rng.choice(sketches), rng, num_cores)
        except InvalidStepError:
            continue
        if scope_violation(st) is not None:
            continue
        key = str(st)
        if key not in keys:
            keys.add(key)
            out.append(st)
    return out


def evolve(model, task, population: list, n_out: int, p: SearchParams, rng,
           num_cores: int, measured_keys) -> list:
    """Ansor's evolutionary search: ``p.evolutionary_search_num_iters`` generations from
    ``population``; the ``n_out`` best-scored states never measured, as (score, state)
    pairs, best first."""
    population = list(population)
    best: list = []            # min-heap of (score, tiebreak, state)
    in_best: set = set()
    tiebreak = 0
    for it in range(p.evolutionary_search_num_iters + 1):
        if not population:
            break
        scores = model.predict(task, population)
        for sc, st in zip(scores, population):
            key = str(st)
            if key in measured_keys or key in in_best:
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
        population = next_generation(population, scores, p, rng, num_cores)
    return [(sc, st) for sc, _, st in sorted(best, key=lambda x: (-x[0], x[1]))]


def next_generation(population, scores, p: SearchParams, rng, num_cores: int) -> list:
    """Children drawn in proportion to their parent's score: mutated with probability
    ``evolutionary_search_mutation_prob``, else copied."""
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
        parent = rng.choices(population, cum_weights=cum, k=1)[0]
        if rng.random() < p.evolutionary_search_mutation_prob:
            child = mutate(parent, rng, num_cores, p.mutation_weights)
            if child is not None and scope_violation(child) is None:
                nxt.append(child)
        else:
            nxt.append(parent)
    return nxt
