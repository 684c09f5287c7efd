"""Task extraction from relay models (TVM's ``auto_scheduler.extract_tasks``).

``extract_tasks(mod, params, target)`` runs the relay pipeline up to FuseOps -- the very
pipeline ``relay.build`` runs -- and turns every fused group anchored by a tunable op
(conv2d, dense, batch_matmul, ...) into a ``SearchTask`` whose ComputeDAG is the whole
group, epilogue included.  Identical groups share one task; how often a group is called
is the task's weight.

Invariants: a task's workload key is the key the build computes for the same group
(``compiler.relay.backend.dispatch.workload_key``: a hash of the DAG's canonical text plus
the shapes), so records written while tuning are found by ``ApplyHistoryBest`` in any
later process; the tensors of every extracted key are registered in this process
(``register_workload_tensors``) so ``SearchTask(workload_key=key)`` works too; tasks are
returned in the order their groups first appear in the model; a group whose arguments a
task-input check function names (a sparse weight's BSR parts) gets those graph
constants as its task inputs, so candidates are measured on the model's own sparsity.
"""
from __future__ import annotations

import functools
import json
import math
import os
import tempfile
import warnings

from compiler import relay
from compiler.relay.backend.te_compiler import default_schedule, group_name, lower_to_te
from compiler.relay.expr import Call, Constant, Function, Tuple
from compiler.relay.functor import post_order
from compiler.relay.ty import TupleType
from compiler.target import parse_target
from compiler.transform import PassContext

from .compute_dag import ComputeDAG
from .defaults import register_default_schedule
from .errors import AutoSchedError
from .task import HardwareParams, SearchTask
from .task_inputs import checked_input_names
from .workload import register_workload_tensors

__all__ = ["extract_tasks", "fused_calls", "fused_groups", "task_inputs_of",
           "write_task_table"]


def is_auto_scheduler_enabled() -> bool:
    """TVM's: whether the current PassContext makes relay builds use the records of the
    active ``ApplyHistoryBest`` (``relay.backend.use_auto_scheduler``)."""
    return bool(PassContext.current().config.get("relay.backend.use_auto_scheduler", False))


def fused_calls(mod, params=None, opt_level: int = 3) -> list:
    """The calls of the primitive functions ``relay.build`` would lower, in call order
    (their arguments tell which inputs are graph constants)."""
    config = {"relay.backend.use_auto_scheduler": True}
    with PassContext(opt_level=opt_level, config=config):
        fused = relay.optimize(mod, params)
    return [node for node in post_order(fused["main"].body, into_functions=False)
            if isinstance(node, Call) and isinstance(node.op, Function)]


def fused_groups(mod, params=None, opt_level: int = 3) -> list:
    """The primitive functions ``relay.build`` would lower, one per call, in call order."""
    return [c.op for c in fused_calls(mod, params, opt_level)]


def _constant_inputs(call) -> list:
    """The value of each placeholder of ``call``'s group that a graph constant feeds
    (None for the others), in ``lower_to_te``'s placeholder order."""
    out: list = []
    for p, arg in zip(call.op.params, call.args):
        if isinstance(p.checked_type, TupleType):
            fields = arg.fields if isinstance(arg, Tuple) else (None,) * len(
                p.checked_type.fields)
            out.extend(f.data if isinstance(f, Constant) else None for f in fields)
        else:
            out.append(arg.data if isinstance(arg, Constant) else None)
    return out


def task_inputs_of(call, tensors) -> dict:
    """TVM's task inputs of a group: {name: the constant's value} for each argument a
    check function names (a sparse weight's ``..._W_indptr``) that a graph constant
    feeds, so measurements read the model's own sparse structure."""
    values = _constant_inputs(call)
    return {name: values[k] for k, name in checked_input_names(tensors).items()
            if k < len(values) and values[k] is not None}


def extract_tasks(mod, params=None, target="llvm", target_host=None,
                  hardware_params: HardwareParams | None = None,
                  include_simple_tasks: bool = False, opt_level: int = 3):
    """``(tasks, task_weights)`` for the tunable fused groups of ``mod``.

    ``mod`` is an IRModule or a relay Function; ``params`` are bound as constants first,
    as ``relay.build`` does.  ``include_simple_tasks`` also makes tasks of groups without
    a tunable op (elementwise, pooling, ...).  ``target_host`` is accepted for TVM's
    signature (the host is the target).
    """
    if isinstance(mod, Function):
        mod = relay.IRModule.from_expr(mod)
    if not isinstance(mod, relay.IRModule):
        raise AutoSchedError(f"extract_tasks: expected an IRModule or a relay Function, got "
                             f"{type(mod).__name__}")
    tgt = parse_target(target)
    hw = hardware_params or HardwareParams.for_target(tgt)
    tasks: dict = {}
    weights: dict = {}
    for call in fused_calls(mod, params, opt_level):
        fn = call.op
        group = lower_to_te(fn, tgt)
        if not (group.tunable or include_simple_tasks):
            continue
        if group.key in weights:
            weights[group.key] += 1
            continue
        tensors = group.inputs + group.outputs
        try:
            dag = ComputeDAG(tensors)
        except AutoSchedError as err:
            warnings.warn(f"extract_tasks: fused group {group_name(fn)} is not a tuning task "
                          f"({err}); it keeps its default schedule", stacklevel=2)
            continue
        register_workload_tensors(group.key, tensors)
        register_default_schedule(group.key, functools.partial(default_schedule, group))
        tasks[group.key] = SearchTask(workload_key=group.key, compute_dag=dag, target=tgt,
                                      hardware_params=hw, desc=group_name(fn),
                                      task_inputs=task_inputs_of(call, tensors),
                                      task_inputs_overwrite=True)
        weights[group.key] = 1
    keys = list(tasks)
    return [tasks[k] for k in keys], [weights[k] for k in keys]


def write_task_table(tasks, task_weights, path: str, default_costs=None) -> str:
    """Write ``{workload key: {"name", "flops", "weight"[, "default_cost"]}}`` to ``path``
    atomically: the table ``records summary`` reads beside a network log
    (``LOG.tasks.json``) to show tasks by name and weight and the estimated end-to-end
    latency, and ``ApplyHistoryBest`` reads to skip records slower than the default
    schedule (``default_cost``, seconds, when measured)."""
    table = {t.workload_key: {"name": t.desc or t.workload_key,
                              "flops": float(t.compute_dag.flop_ct), "weight": int(w)}
             for t, w in zip(tasks, task_weights)}
    for t, cost in zip(tasks, default_costs or ()):
        if math.isfinite(cost):
            table[t.workload_key]["default_cost"] = float(cost)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tasks.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(table, f, indent=1)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
