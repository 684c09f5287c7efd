"""ApplyHistoryBest: tuning records as the schedule provider of ``relay.build``.

    with autosched.ApplyHistoryBest("resnet18.json"):
        with PassContext(opt_level=3, config={"relay.backend.use_auto_scheduler": True}):
            lib = relay.build(mod, target="llvm", params=params)

While active, the context sits on the compiler's provider stack
(``compiler.relay.backend.dispatch``), so the compiler never imports the tuner.  For each
fused group the build asks ``query(target, workload_key, tensors)``; the answer is the
schedule of the best record for that key whose target matches, replayed onto the
group's own tensors, or None (the build then uses the default schedule and counts the
group as a fallback).

Invariants: reading a log never executes anything from it (records are data; steps are
decoded by the step registry); a record that no longer replays (the workload changed,
or a step is invalid) is skipped with a warning and the next best is tried, never an
exception; states rank as ``tuning.rank_records`` ranks them (``apply_best`` picks the same
state): a state re-timed side by side at the end of tuning by its second-lowest record
(``ranking.retimed_cost``), and the default schedule's own state keeps first place unless a
tuned state beat it by ``PREFER_MARGIN`` (then the group is built with the default
schedule); for logs without the default's state, the task table (``LOG.tasks.json``) is the
floor: records slower than the default are not used. So a build with the log is never
slower than one without it, as far as the log can tell. Targets match by kind and CPU
(``-num-cores`` and ``-keys`` may differ, as in TVM logs), records of the exact target
string first.  Memory stays bounded for big logs: per key, the re-timed states and the
cheapest others are kept, each with its few cheapest records.
"""
from __future__ import annotations

import bisect
import json
import logging
import math
import os
import warnings

from compiler.relay.backend.dispatch import pop_provider, push_provider
from compiler.target import parse_target
from records import MeasureInputRecord, Record, load_records, target_matches

from .compute_dag import ComputeDAG
from .default_state import default_state
from .defaults import has_default_schedule, register_default_schedule
from .layout_rewrite import LayoutRewriteOption, replay_rewritten
from .measure_record import as_record
from .ranking import retimed_cost
from .steps import serialize
from .steps.registry import check_state
from .task import SearchTask
from .tuning import default_steps_repr, rank_records

__all__ = ["ApplyHistoryBest", "DispatchContext"]

# records kept per state (its cheapest).  rank_records also reads a state's median and
# mean figure, so this holds every figure of a state confirmed, re-timed and confirmed
# against the default in several tune() calls (1 + 1 + 3 + 8 per call): with the 7
# cheapest only, a tuned matmul 1024 state whose two half-speed figures a log's ranking
# saw (and kept the default for) looked 6% faster than the default by the mean
_PER_STATE = 64
_MAX_STATES = 256    # states per workload key before pruning to ...
_KEEP_STATES = 32    # ... the re-timed ones and this many of the cheapest others
_log = logging.getLogger("autosched")


def _replay(dag, state, const_inputs) -> tuple:
    """(schedule, args, transforms): rewritten for pre-transformed weights when every
    weight the rewrite touches is a constant input, else as written."""
    if const_inputs:
        check_state(state)
        sch, args, transforms = replay_rewritten(
            dag, state.transform_steps, LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED)
        if all(const_inputs[t.arg_index] for t in transforms):
            return sch, args, transforms
    sch, args = dag.apply_steps_from_state(state)
    return sch, args, []


class DispatchContext:
    """Base of schedule providers usable as context managers (TVM's DispatchContext).

    ``DispatchContext.current`` is the innermost active context (or None)."""

    current: DispatchContext | None = None

    def query(self, target, workload_key: str, tensors):
        raise NotImplementedError(f"{type(self).__name__} must implement query()")

    def __enter__(self):
        push_provider(self)
        self._outer = DispatchContext.current
        DispatchContext.current = self
        return self

    def __exit__(self, *exc) -> None:
        DispatchContext.current = self._outer
        pop_provider(self)


def read_default_costs(path: str) -> dict:
    """``{workload key: default schedule seconds}`` from a network log's task table
    (``LOG.tasks.json``, written by ``tune --network``); {} when absent or unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            table = json.load(f)
    except (OSError, ValueError):
        return {}
    out = {}
    if isinstance(table, dict):
        for key, entry in table.items():
            cost = entry.get("default_cost") if isinstance(entry, dict) else None
            if isinstance(cost, (int, float)) and math.isfinite(cost) and cost > 0:
                out[key] = float(cost)
    return out


class ApplyHistoryBest(DispatchContext):
    """The best records of one or more logs (paths) or of an iterable of Records."""

    def __init__(self, records, n_lines: int | None = None, include_compatible: bool = True,
                 default_floor: bool = True):
        self.include_compatible = include_compatible
        # workload key -> {repr of the steps: that state's records, cheapest first}
        self._groups: dict = {}
        self._n = 0
        self.queries = self.hits = self.stale = self.default_faster = 0
        # workload key -> seconds of the default schedule, from LOG.tasks.json
        self.default_costs: dict = {}
        sources = [records] if isinstance(records, (str, os.PathLike, Record)) else records
        for src in sources:
            if isinstance(src, (str, os.PathLike)):
                if default_floor:
                    self.default_costs.update(read_default_costs(os.fspath(src) + ".tasks.json"))
                self._load(load_records(src), n_lines)
            elif isinstance(src, Record):
                self._add(src)
            elif isinstance(src, tuple) and len(src) == 2:   # one (inp, res) pair
                self._add(_record_of(src))
            elif hasattr(src, "__iter__"):
                self._load(src, n_lines)
            else:
                _record_of(src)           # raises, naming what it got

    def _load(self, records, n_lines) -> None:
        for k, rec in enumerate(records):
            if n_lines is not None and k >= n_lines:
                break
            self._add(_record_of(rec))

    def _add(self, rec: Record) -> None:
        if not rec.is_valid:
            return
        self._n += 1
        groups = self._groups.setdefault(rec.workload_key, {})
        group = groups.setdefault(repr(rec.input.steps), [])
        bisect.insort(group, rec, key=lambda r: r.mean_cost)   # ties: the earliest first
        del group[_PER_STATE:]
        if len(groups) > _MAX_STATES:
            _prune(groups)

    @property
    def workload_keys(self) -> list:
        return list(self._groups)

    def candidates(self, target, workload_key: str, prefer: str | None = None) -> list:
        """Valid records for the key that may serve ``target``, one per state, best first
        (``tuning.rank_records``: states re-timed side by side by ``retimed_cost``, then the
        rest by cost; ``prefer``, the default schedule's steps, keeps first place unless
        beaten by a margin).  Records of the exact target string come before merely
        compatible ones of the same state."""
        tgt = parse_target(target)
        text = str(tgt).split()
        recs = [r for g in self._groups.get(workload_key, {}).values() for r in g]
        exact = [r for r in recs if r.target.split() == text]
        if self.include_compatible:
            exact += [r for r in recs if r.target.split() != text
                      and target_matches(r.target, str(tgt), "compatible")]
        return rank_records(exact, prefer=prefer)

    def _beats_default(self, workload_key: str, recs: list, prefer: str | None) -> list:
        """The records to try, or [] when the default schedule should be built: it ranks
        first after re-timing side by side, or (logs without its state) the task table
        says it is faster than every record.  A build with the log must never be slower
        than one without it."""
        if not recs:
            return recs
        if prefer is not None and any(repr(r.input.steps) == prefer for r in recs):
            kept = recs if repr(recs[0].input.steps) != prefer else []
        else:
            floor = self.default_costs.get(workload_key)
            kept = recs if floor is None else [r for r in recs if r.mean_cost < floor]
        if not kept:
            self.default_faster += 1
        return kept

    def note_default_schedule(self, workload_key: str, make) -> None:
        """The build's default schedule of a group (``make() -> (schedule, tensors)``),
        registered when this process has none for the key (``extract_tasks`` registers
        it while tuning): without it ``default_state`` is None in a fresh process, the
        default's own records are not recognized, and a tuned state within noise of
        the default would replace it."""
        if not has_default_schedule(workload_key):
            register_default_schedule(workload_key, make)

    def query(self, target, workload_key: str, tensors):
        """The schedule of the best replayable record for ``workload_key``, or None."""
        got = self._replay_best(target, workload_key, tensors, (), False)
        return None if got is None else got[0]

    def query_layout_rewrite(self, target, workload_key: str, tensors, const_inputs):
        """(schedule, argument tensors, layout transforms) of the best record, or None.

        Weights that are constants of the graph (``const_inputs``) are read in the layout
        the tuned kernel walks (REWRITE_FOR_PRE_TRANSFORMED, as it was measured); relay
        transforms their data once at build time.  When a layout-free weight is not a
        constant, or the record was measured without layout rewrite (its
        ``layout_rewrite_option`` is 0, as in logs written before it existed), the kernel
        keeps the original layout."""
        return self._replay_best(target, workload_key, tensors, tuple(const_inputs), True)

    def _replay_best(self, target, workload_key, tensors, const_inputs, rewrite):
        self.queries += 1
        if workload_key not in self._groups:
            return None
        dag = ComputeDAG(list(tensors))
        task = SearchTask(workload_key=workload_key, compute_dag=dag, target=target)
        dflt = default_state(task)
        prefer = None if dflt is None else default_steps_repr(dflt)
        recs = self._beats_default(workload_key, self.candidates(target, workload_key, prefer),
                                   prefer)
        if not recs:
            return None
        for rec in recs:
            try:
                state = serialize.state_from_record(task, rec)
                # build as it was measured: a record tuned without layout rewrite (an
                # older log) keeps the weights' layout
                measured_rewritten = int(getattr(rec.input, "layout_rewrite_option", 0)) != 0
                got = _replay(dag, state,
                              const_inputs if rewrite and measured_rewritten else ())
            except Exception as err:  # noqa: BLE001 - a stale record must fall back, never fail the build
                self.stale += 1
                warnings.warn(f"ApplyHistoryBest: a record of {workload_key} no longer applies "
                              f"({type(err).__name__}: {err}); trying the next one",
                              stacklevel=2)
                continue
            self.hits += 1
            return got
        return None

    def __exit__(self, *exc) -> None:
        super().__exit__(*exc)
        if self.default_faster:
            # relay.build counts these among its fallbacks; say why they fell back
            _log.info("ApplyHistoryBest: %d groups used a record; %d kept their default "
                      "schedule because it is faster than every record (LOG.tasks.json)",
                      self.hits, self.default_faster)

    def __repr__(self) -> str:
        return f"ApplyHistoryBest({len(self._groups)} workloads, {self._n} valid records)"


def _record_of(item) -> Record:
    """A Record, or the Record of an (input, result) pair (TVM passes
    ``load_records(log)``'s pairs, or a run's MeasureInputs and MeasureResults)."""
    if isinstance(item, Record):
        return item
    if isinstance(item, tuple) and len(item) == 2:
        inp, res = item
        if isinstance(inp, MeasureInputRecord):
            return Record(inp, res)
        if hasattr(inp, "task") and hasattr(res, "costs"):
            return as_record(inp, res)
    raise TypeError(f"ApplyHistoryBest: expected log paths, Records or (MeasureInput, "
                    f"MeasureResult) pairs, got {type(item).__name__}")


def _prune(groups: dict) -> None:
    """Keep the states re-timed side by side (3+ records) and the ``_KEEP_STATES``
    cheapest others: memory stays bounded for big logs and no candidate that
    ``rank_records`` could put first is lost."""
    others = sorted((k for k, g in groups.items() if len(g) < 3),
                    key=lambda k: retimed_cost([r.mean_cost for r in groups[k]]))
    for k in others[_KEEP_STATES:]:
        del groups[k]
