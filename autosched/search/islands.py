"""Parallel evolutionary search: islands of the population evolved in helper processes
while the tuner evolves its own island.

Role: Ansor runs its population of 2048 on a C++ thread pool; in pure Python the
search is the tuner's main cost outside builds and runs, and it used one core while
the others idled between measurement batches.  ``start_islands`` hands each helper
process a complete, smaller search of the same kind (``evolution.evolve`` on
``population / islands`` states: its own random sample plus the round's seeds); the
caller evolves its own island meanwhile and ``IslandRun.results`` gives every
helper's best (score, transform steps), which the caller replays and merges.

A helper's island is two jobs, pinned to it: the sample (``sample_island_job``),
started before the tuner trains its model, and the evolution
(``evolve_island_job``), sent with the model snapshot once it is trained.  Training
is single-threaded (~0.06-0.1 s a round), and the helpers idled through it when one
job carried the snapshot; now they sample meanwhile, and the round's critical path
is shorter by the training.  The results are the same: the helper's generator is
the same object through both jobs.

Invariants:
- the jobs carry everything they need: the task (pickled whole, as build jobs are),
  a predict-only snapshot of the cost model (``snapshot()``: the same scores the
  tuner computes), the search parameters, a seed drawn from the policy's generator,
  the seeds' steps and the printouts of the measured states, which are never
  returned.  The sample a helper keeps for its evolution job is one round's (a
  token names it); a helper restarted in between fails only its island;
- helpers are ``WorkerPool`` processes (fork server; they never import the user's
  main module) shared by every policy of the process, one batch at a time (a lock);
- a helper that fails (start, crash, timeout, error) costs only its island: the
  caller gets the failure's description and carries on with the other islands; when
  helpers cannot even be started, later searches of the process stay in-process
  instead of waiting for a start-up timeout every round;
- helpers keep each task's sketches, so they are generated once per helper, and one
  feature extractor per feature configuration: a model snapshot arrives with an empty
  feature memo every round, and the helper swaps in its own, whose states (of the same
  DAG objects, the kept task's) recur from round to round -- the tuner's model keeps
  its memo, and a cold one made the helper's island ~10% slower than the tuner's;
- the helpers import what a model's snapshot will need (``snapshot_modules``) after
  sampling, while the tuner trains that model, instead of inside the evolution job,
  where the tuner's own island would wait for it; what later snapshots will need
  (``upcoming_modules``) right after a round's islands, under the pool's lock but
  without holding back ``results``.  (``XGBModel`` needs nothing: it calls xgboost
  through its C API, ``cost_model/xgb_native.py``.)
"""
from __future__ import annotations

import contextlib
import importlib
import itertools
import os
import pickle
import random
import threading

from ..measure.workers import WorkerError, WorkerPool, pause_gc_until_replied
from .evolution import SearchParams, evolve, sample_population
from .gc_pause import paused_gc
from .heap import retain_in_this_process
from .mutation_rules import replay
from .sketch_rules import generate_sketches, task_sketch_options

ISLAND_TIMEOUT = 600.0      # seconds for one island's search (a round takes seconds)
MAX_HELPERS = 3

_LOCK = threading.Lock()
_POOL: list = []            # [WorkerPool] once started
_SKETCHES: dict = {}        # in a helper: (key, target, rewrite, steps) -> (task, sketches)
_EXTRACTORS: dict = {}      # in a helper: feature config -> FeatureExtractor (its memo)
_START_FAILED: list = []    # the reason, once helpers could not be started
_WARMED: set = set()        # (pool size, module) already imported by every helper
_PENDING: dict = {}         # in a helper: round token -> its sampled island (one round)
_TOKENS = itertools.count(1)


def helpers_for(p: SearchParams, num_cores: int) -> int:
    """How many helper processes a search with parameters ``p`` uses."""
    if p.evolutionary_search_population < p.parallel_min_population or _START_FAILED:
        return 0
    if p.search_workers is not None:
        return p.search_workers
    return max(0, min(MAX_HELPERS, min(num_cores, os.cpu_count() or 1) - 1))


def import_modules(names: tuple) -> None:
    """A helper's warm-up job: import ``names`` (what the next snapshot unpickles)."""
    for name in names:
        importlib.import_module(name)


def _pool(size: int) -> WorkerPool:
    """The shared helper pool, (re)made with ``size`` processes; callers hold _LOCK."""
    if not _POOL or _POOL[0].size != size:
        if _POOL:
            _POOL.pop().close()
        _WARMED.clear()
        _POOL.append(WorkerPool(size, name="autosched-search"))
    return _POOL[0]


def _import_in_helpers(n_helpers: int, modules) -> None:
    """Import ``modules`` in each of ``n_helpers`` helpers, once per pool; callers hold
    _LOCK.  Best effort: a failure shows up in the next island job."""
    todo = tuple(m for m in modules if (n_helpers, m) not in _WARMED)
    if not todo:
        return
    try:
        _pool(n_helpers).map_each(import_modules, (todo,), ISLAND_TIMEOUT)
        _WARMED.update((n_helpers, m) for m in todo)
    except BaseException:     # the island jobs will report it
        pass


def sample_island_job(token: int, seed: int, payload: bytes) -> int:
    """A helper's first job of a round: sample its island's initial population (plus
    the round's seeds) and keep it, with the island's generator, for the round's
    ``evolve_island_job`` (the tuner trains its model meanwhile).  The round's shared
    arguments were pickled once, by the tuner's thread; only the seed differs between
    helpers.  Returns the population's size.  The collector stays paused through the
    evolution job's reply: collecting the sample between the jobs delayed the
    evolution."""
    with contextlib.nullcontext() if pause_gc_until_replied(2) else paused_gc():
        task, params, n_init, seed_steps, measured, n_out, num_cores, sketch_steps = \
            pickle.loads(payload)
        if params.retain_heap:      # a helper is the tuner's own process
            retain_in_this_process()
        task, rng, population = _sample_island(task, params, seed, n_init, seed_steps,
                                               num_cores, sketch_steps)
        _PENDING.clear()        # one round at a time: an abandoned round's goes here
        _PENDING[token] = (task, params, rng, population, measured, n_out, num_cores)
        return len(population)


def evolve_island_job(token: int, model_payload: bytes) -> list:
    """A helper's second job of a round: evolve the population its
    ``sample_island_job`` left, scored by the model snapshot in ``model_payload``;
    [(score, steps)] of its best.  The collector stays paused until the reply is sent:
    the collection of the round's survivors (10-60 ms) then runs while the tuner
    merges, not before it gets the islands' results."""
    with contextlib.nullcontext() if pause_gc_until_replied() else paused_gc():
        pending = _PENDING.pop(token, None)
        if pending is None:
            raise RuntimeError("this helper no longer holds the island's sampled "
                               "population (it was restarted between the round's jobs)")
        task, params, rng, population, measured, n_out, num_cores = pending
        model = pickle.loads(model_payload)
        return _evolve_island(task, model, params, rng, population, measured, n_out,
                              num_cores)


def run_island(task, model, params, seed, n_init, seed_steps, measured, n_out,
               num_cores, sketch_steps=None) -> list:
    """One island's whole search, as a helper runs it in two jobs: [(score, steps)] of
    its ``n_out`` best."""
    task, rng, population = _sample_island(task, params, seed, n_init, seed_steps,
                                           num_cores, sketch_steps)
    return _evolve_island(task, model, params, rng, population, measured, n_out,
                          num_cores)


def _sample_island(task, params, seed, n_init, seed_steps, num_cores,
                   sketch_steps) -> tuple:
    """(the helper's kept task, the island's generator, its initial population): its
    random sample of the sketches -- the task's own, generated here once, or replayed
    from ``sketch_steps`` (the tuner's sketches, made with custom rules) -- and the
    round's seeds replayed."""
    # the layout-rewrite option is in the key: it decides the vector-axis sketches
    key = (task.workload_key, str(task.target), int(task.layout_rewrite_option),
           sketch_steps)
    if key not in _SKETCHES:
        if sketch_steps is None:
            sketches = generate_sketches(task.compute_dag.init_state(), num_cores,
                                         **task_sketch_options(task))
        else:
            sketches = [task.compute_dag.state_from_steps(steps) for steps in sketch_steps]
        _SKETCHES[key] = (task, sketches)
    task, sketches = _SKETCHES[key]
    rng = random.Random(seed)
    population = sample_population(sketches, n_init, rng, num_cores,
                                   params.max_sample_tries_factor)
    for steps in seed_steps:
        st = replay(task.compute_dag, steps)
        if st is not None:
            population.append(st)
    return task, rng, population


def _evolve_island(task, model, params, rng, population, measured, n_out,
                   num_cores) -> list:
    _keep_feature_memo(model)
    scored = evolve(model, task, population, n_out, params, rng, num_cores, measured)
    return [(sc, tuple(st.transform_steps)) for sc, st in scored]


def _keep_feature_memo(model) -> None:
    """Give ``model`` (a snapshot just unpickled) this helper's extractor for its
    feature configuration, memo included; duck-typed models without one are left as
    they are."""
    ext = getattr(model, "extractor", None)
    config = getattr(ext, "config", None)
    if config is not None:
        model.extractor = _EXTRACTORS.setdefault(config, ext)


class IslandRun:
    """A round's islands in the helpers, driven by a background thread holding the
    pool's lock: each helper samples its island at once (``sample_island_job``), the
    modules in ``warm_before`` are imported next, and each evolves its island once
    ``evolve`` hands over the model snapshot (``evolve_island_job``) -- so the helpers
    sample while the tuner trains its model.  ``cancel`` (the tuner's round failed, or
    its model gave no snapshot) releases the helpers instead.  Jobs arrive pickled:
    the tuner's thread goes on using the task (its DAG fills caches lazily), so
    pickling it from the background thread could see a dict change size
    mid-iteration.  ``warm_after``: modules the helpers then import (still under the
    lock, so the next round's jobs queue behind it) while the caller merges and
    measures -- ``results`` does not wait for that."""

    def __init__(self, token: int, jobs: list, error: BaseException | None = None,
                 warm_before: tuple = (), warm_after: tuple = ()):
        self._token = token
        self._outcomes: list = []
        self._error = error
        self._model: bytes | None = None
        self._handed = threading.Event()        # evolve() or cancel() was called
        self._sampled = threading.Event()       # the helpers' sample jobs are done
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(jobs, warm_before,
                                                                warm_after),
                                        daemon=True, name="autosched-islands")
        if error is None:
            self._thread.start()
        else:
            self._handed.set()
            self._ready.set()

    def evolve(self, snapshot) -> None:
        """Hand the helpers the model snapshot that scores their islands (pickled
        here, in the caller's thread)."""
        try:
            self._model = pickle.dumps(snapshot)
        except (pickle.PicklingError, TypeError, AttributeError) as err:
            self._error = err        # e.g. a model whose snapshot cannot travel
        self._handed.set()

    def cancel(self) -> None:
        """Release the helpers without evolving (their sampled islands are dropped)."""
        self._handed.set()

    def _run(self, jobs, warm_before, warm_after) -> None:
        with _LOCK:
            try:
                self._outcomes = self._both_phases(jobs, warm_before)
            except BaseException as err:      # reported by results(), never lost
                self._error = err
                if isinstance(err, WorkerError):
                    _START_FAILED.append(str(err))
            finally:
                self._ready.set()
            if self._error is None and self._outcomes:
                _import_in_helpers(len(jobs), warm_after)

    def _both_phases(self, jobs, warm_before) -> list:
        """The sample jobs, the imports, then (once handed the model) the evolution
        jobs of the helpers whose sample succeeded: an outcome per helper."""
        pool = _pool(len(jobs))
        sampled = pool.map_pinned(sample_island_job, jobs, ISLAND_TIMEOUT)
        self._sampled.set()
        if warm_before:
            _import_in_helpers(len(jobs), warm_before)
        if not self._handed.wait(ISLAND_TIMEOUT):
            raise TimeoutError(f"no model snapshot within {ISLAND_TIMEOUT} s of the "
                               "islands' start")
        if self._model is None:
            return []                         # cancelled (or the snapshot did not pickle)
        evolved = pool.map_pinned(
            evolve_island_job, [(self._token, self._model) if o.status == "ok" else None
                                for o in sampled], ISLAND_TIMEOUT)
        return [e if e is not None else s for s, e in zip(sampled, evolved)]

    def results(self) -> tuple:
        """(the successful islands' [(score, steps)] lists, failure descriptions)."""
        self._ready.wait()
        if self._error is not None:
            return [], [f"{type(self._error).__name__}: {self._error}"]
        done, failed = [], []
        for o in self._outcomes:
            if o.status == "ok":
                done.append(o.value)
            else:
                last = (str(o.value).strip().splitlines() or [""])[-1]
                failed.append(f"{o.status}: {last}")
        return done, failed


def start_islands(task, params: SearchParams, seeds: list, n_helpers: int, n_init: int,
                  measured, n_out: int, num_cores: int, rng, sketch_steps=None,
                  warm_before: tuple = (), warm_after: tuple = ()) -> IslandRun:
    """Start ``n_helpers`` islands of ``task`` sampling; the caller then hands them the
    model snapshot (``IslandRun.evolve``) or cancels them.  Their seeds are drawn from
    ``rng``; ``sketch_steps``: the sketches to use as step tuples (None: the task's
    own); ``warm_before``: modules the snapshot will need, imported while the caller
    trains; ``warm_after``: modules the helpers import once their islands are done (a
    later snapshot's, e.g. xgboost while the model is still the prior)."""
    seed_steps = [tuple(st.transform_steps) for st in seeds]
    measured = frozenset(measured)
    seeds_drawn = [rng.randrange(2 ** 31) for _ in range(n_helpers)]
    token = next(_TOKENS)
    try:
        payload = pickle.dumps((task, params, n_init, seed_steps, measured, n_out,
                                num_cores, sketch_steps))
    except (pickle.PicklingError, TypeError, AttributeError) as err:
        return IslandRun(token, [], error=err)
    return IslandRun(token, [(token, seed, payload) for seed in seeds_drawn],
                     warm_before=warm_before, warm_after=warm_after)
