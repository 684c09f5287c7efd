"""ApplyHistoryBestOrSample: the history best, or a sampled schedule where the logs have
none (TVM's ``auto_scheduler.ApplyHistoryBestOrSample``).

Role: build a model with auto-scheduler schedules before (or without) tuning all of its
tasks -- to check that every fused group takes a searched schedule, or to get a quick
first build.  For a group whose workload key has no record, the context samples once:
the sketches filled by the init rules, no evolution (TVM's parameters: evolutionary
iterations 0, at least 64 samples), ranked by the cost model (a model file, else
random scores).  With ``num_measure > 0`` it also measures that many candidates into a
log of its own (``log_dir``) and uses the best measured one, as TVM's does; otherwise
the sampled state the cost model ranks first is used without a measurement.

Invariants: groups with records are answered by ``ApplyHistoryBest`` unchanged (also
when it prefers the default schedule); groups without a complex op (no reduction) are
left to the default schedule unless ``sample_simple_workloads``; a workload is sampled
at most once per context; an unmeasured sample is built with the weights in their own
layout; sampling is seeded (seed 0), so a build is reproducible.
"""
from __future__ import annotations

import os
import tempfile

from compiler.te.tensor import ComputeOp
from records import load_records

from .compute_dag import ComputeDAG
from .cost_model.base import CostModel, RandomModel
from .cost_model.xgb_model import XGBModel
from .dispatch import ApplyHistoryBest, _replay
from .measure.measurer import RecordToFile
from .search.evolution import SearchParams
from .search.policy import SketchPolicy
from .task import SearchTask
from .tuning import TuningOptions

__all__ = ["ApplyHistoryBestOrSample"]

# TVM's sampling parameters for this context; a plain sample (not seeded with the
# default schedule's state), in this process (no evolution for helper islands to share)
SAMPLE_PARAMS = SearchParams(eps_greedy=0.01, sample_init_min_population=64,
                             evolutionary_search_num_iters=0, seed_default_schedule=False,
                             search_workers=0)


def has_complex_op(dag: ComputeDAG) -> bool:
    """Whether a workload has an op worth a searched schedule: a reduction."""
    return any(isinstance(op, ComputeOp) and op.reduce_axis for op in dag.ops)


class ApplyHistoryBestOrSample(ApplyHistoryBest):
    """``ApplyHistoryBest(records)``, sampling a schedule for workloads without records
    (see the module docstring)."""

    def __init__(self, records, sample_simple_workloads: bool = False,
                 cost_model_file=None, num_measure: int = -1):
        super().__init__(records)
        self.sample_simple_workloads = bool(sample_simple_workloads)
        self.num_measure = int(num_measure)
        self.cost_model: CostModel = RandomModel(0)
        if cost_model_file is not None:
            model = XGBModel(prior=None)
            model.load(os.fspath(cost_model_file))
            self.cost_model = model
        self.log_dir: str | None = None    # made when a sample is first measured
        self._sampled: dict = {}       # workload key -> sampled state (or None)
        self.samples = 0

    def _replay_best(self, target, workload_key, tensors, const_inputs, rewrite):
        if workload_key in self._groups:
            return super()._replay_best(target, workload_key, tensors, const_inputs, rewrite)
        dag = ComputeDAG(list(tensors))
        if not (self.sample_simple_workloads or has_complex_op(dag)):
            return None
        if workload_key not in self._sampled:
            self._sampled[workload_key] = self._sample(target, workload_key, dag)
            if workload_key in self._groups:       # measured: the records decide
                return super()._replay_best(target, workload_key, tensors, const_inputs,
                                            rewrite)
        state = self._sampled[workload_key]
        if state is None:
            return None
        self.queries += 1
        self.hits += 1
        return _replay(dag, state, ())

    def _sample(self, target, workload_key: str, dag: ComputeDAG):
        """Measure ``num_measure`` candidates into this context's log and load them, or
        (``num_measure <= 0``) the sampled state the cost model ranks first."""
        self.samples += 1
        task = SearchTask(workload_key=workload_key, compute_dag=dag, target=target)
        policy = SketchPolicy(task, self.cost_model, params=SAMPLE_PARAMS, seed=0,
                              verbose=0)
        if self.num_measure > 0:
            if self.log_dir is None:
                self.log_dir = tempfile.mkdtemp(prefix="autosched-sampled-")
            log = os.path.join(self.log_dir, f"sampled_{self.samples}.json")
            task.tune(TuningOptions(num_measure_trials=self.num_measure, verbose=0,
                                    measure_callbacks=[RecordToFile(log)]), policy)
            if os.path.exists(log):
                self._load(load_records(log), None)
            return None if workload_key in self._groups else _first(policy)
        return _first(policy)


def _first(policy):
    """The state the policy's cost model ranks first among a fresh sample, or None."""
    picks = policy.pick_states(1)
    return picks[0] if picks else None

