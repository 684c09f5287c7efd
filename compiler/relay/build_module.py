"""``relay.build``: optimize, fuse, lower every fused group, compile, link, plan memory.

    with PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](compiler.cpu(0)))

Pipeline (``optimize``; passes above the PassContext's opt_level are skipped, as in
TVM): bind ``params`` as constants, InferType, SimplifyInference, FoldConstant,
SimplifyExpr, FoldScaleAxis, EliminateCommonSubexpr, CombineParallelDense,
AlterOpLayout (packs the constant weights of narrow NCHW convolutions and of dense
layers), DeadCodeElimination, FuseOps, InferType.  Then each fused group is lowered once per
distinct workload (schedule from an active provider or the default strategy), the
kernels compile in parallel processes, a driver calling them in order is generated over
the planned memory pool, and everything links into one library.  ``build.stats`` counts
kernels and how many tunable groups used a provider's schedule.
"""
from __future__ import annotations

import hashlib
import logging

from ..runtime.jit import compile_ir
from ..runtime.ndarray import cpu
from ..target import Target, host_target, parse_target
from ..transform import PassContext
from .backend.dispatch import current_providers
from .backend.executor_factory import GraphExecutorFactoryModule
from .backend.graph_executor import GraphLib, GraphModule, Layout
from .backend.graph_plan import driver_ir, plan_graph
from .backend.te_compiler import KernelCache, compile_all
from .errors import RelayError
from .expr import Function
from .module import IRModule
from .transform import optimize_pipeline, register_evaluator
from .transform.bind import bind_params_by_name

__all__ = ["build", "optimize"]

_log = logging.getLogger("compiler.relay")


def _as_module(mod) -> IRModule:
    if isinstance(mod, IRModule):
        return mod
    if isinstance(mod, Function):
        return IRModule.from_expr(mod)
    raise RelayError(f"relay.build: expected an IRModule or a relay.Function, got "
                     f"{type(mod).__name__}")


def optimize(mod, params=None) -> IRModule:
    """The module after the optimization pipeline and FuseOps (what build lowers)."""
    mod = _as_module(mod)
    if params:
        mod = mod.with_function("main", bind_params_by_name(mod["main"], params))
    return optimize_pipeline()(mod)


def build(mod, target="llvm", params=None, target_host=None, executor=None, runtime=None,
          mod_name: str = "default") -> GraphExecutorFactoryModule:
    """Compile ``mod`` (an IRModule or Function) into a graph executor factory.

    ``target_host``, ``executor`` and ``runtime`` are accepted for TVM compatibility; the
    host is the target and the executor is always the graph executor."""
    tgt = target if isinstance(target, Target) else parse_target(
        target if isinstance(target, str) else str(target))
    use = bool(PassContext.current().config.get("relay.backend.use_auto_scheduler", False))
    if current_providers() and not use:
        _log.warning("schedule providers are active but PassContext config "
                     "relay.backend.use_auto_scheduler is not set: default schedules are "
                     "used (TVM's behaviour)")
    factory = _build(optimize(mod, params), tgt, use)
    stats = factory.stats
    if stats["tuned_groups"] or stats["fallback_groups"]:
        msg = (f"relay.build: {stats['tuned_groups']} tunable fused groups used tuned "
               f"schedules, {stats['fallback_groups']} fell back to the default schedule")
        if stats["fallback_groups"] and use:
            _log.warning("Cannot find tuned schedules (or the default schedule is faster) "
                         "for %d of %d tunable groups; %s",
                         stats["fallback_groups"],
                         stats["tuned_groups"] + stats["fallback_groups"], msg)
        else:
            _log.info(msg)
    return factory


def _build(fused: IRModule, tgt: Target, use_providers: bool) -> GraphExecutorFactoryModule:
    cache = KernelCache(tgt, use_providers)
    plan = plan_graph(fused["main"], cache.lower)
    compiled = compile_all(plan.kernels, tgt)
    graph_json = plan.graph_json()
    driver = f"tas_graph_{hashlib.sha256(graph_json.encode()).hexdigest()[:16]}"
    arity = {k.name: len(k.func.params) for k in plan.kernels}
    objects = {k.name: obj for k, (obj, _meta) in zip(plan.kernels, compiled)}
    objects[driver] = compile_ir(driver_ir(plan, driver, arity), tgt)
    lib = GraphLib(objects, [k.name for k in plan.kernels], driver)
    layout = Layout(plan.pool_bytes,
                    tuple((e[2], e[3], plan.offsets[plan.storage_of[k]])
                          for k, e in enumerate(plan.entries)),
                    tuple(plan.inputs.items()), tuple(plan.param_entries.items()),
                    tuple(plan.outputs), tuple((k, tuple(a)) for k, a in plan.calls),
                    _narrow_entries(fused["main"], plan))
    stats = {"kernels": len(plan.kernels), "groups": len(plan.calls),
             "tuned_groups": cache.tuned, "fallback_groups": cache.fallback,
             "opt_level": PassContext.current().opt_level}
    factory = GraphExecutorFactoryModule(graph_json, lib, plan.params, layout, tgt, stats)
    factory.lowered_funcs = {k.name: k.func for k in plan.kernels}
    factory.kernel_keys = {k.name: (k.key, k.tuned) for k in plan.kernels}
    return factory


def _narrow_entries(main: Function, plan) -> tuple:
    """(entry, format) of the graph inputs and outputs ``main``'s "narrow_inputs" /
    "narrow_outputs" attributes name (set by importers of bfloat16/float8/int4 data)."""
    out = [(plan.inputs[name], fmt) for name, fmt in main.attrs.get("narrow_inputs", ())
           if name in plan.inputs]
    out += [(plan.outputs[k], fmt) for k, fmt in main.attrs.get("narrow_outputs", ())]
    return tuple(out)


def _evaluate_constants(fn: Function) -> list:
    """FoldConstant's evaluator: build ``fn`` (no parameters) for the host and run it once.
    Default schedules only: folded constants are not tuning tasks."""
    fused = optimize_pipeline()(IRModule.from_expr(fn))
    gm = GraphModule(_build(fused, host_target(), False), cpu())
    gm.run()
    return [gm.get_output(i).numpy() for i in range(gm.get_num_outputs())]


register_evaluator(_evaluate_constants)
