"""The TE compiler: each primitive function (fused group) becomes a kernel.

``lower_to_te(fn)`` turns the group into TE: placeholders ``p0..pN`` for its parameters,
then every operator's compute (topi) in order; the outputs are the body's tensor(s).
``KernelCache.lower(fn)`` schedules it -- the first schedule an active provider returns
for its workload key, else the schedule of the implementation the anchor op's x86
strategy selects (``op.strategy``: topi's schedule, which fuses the epilogue) -- and
lowers it to a PrimFunc named after its ops.  Identical groups (same workload key and the
same constant inputs) are lowered once.

Layout rewrite: when some inputs of a call are graph constants (weights), a provider with
``query_layout_rewrite(target, key, tensors, const_inputs)`` may return ``(schedule,
argument tensors, transforms)`` where a weight argument has a new layout; each transform
(``.arg_index``, ``.apply(array)``) names a constant input, and graph codegen stores the
transformed weight as a param once, at build time (TVM's AutoSchedulerLayoutRewrite).
A provider with ``note_default_schedule(key, make)`` is told, before each query, how the
build would schedule the group without it (``make() -> (schedule, tensors)``): a log
read in a fresh process can then recognize the default schedule's own records.

``compile_all`` turns the PrimFuncs into object code, distinct kernels in parallel worker
processes (LLVM holds a global lock within one process).
"""
from __future__ import annotations

import functools
import logging
import os
import warnings
from dataclasses import dataclass

from ... import topi
from ...codegen.llvm import codegen_llvm
from ...errors import CompilerError
from ...runtime.cache import default_cache
from ...runtime.compile_pool import compile_many
from ...runtime.jit import cached_object, compile_ir
from ...runtime.meta import meta_from_primfunc, resolve_alignment
from ...schedule.lower import lower
from ...schedule.schedule import Schedule
from ...te import api as te_api
from ...tir import op as tir_op
from ...topi import tag as T
from ..errors import RelayError
from ..expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from ..functor import post_order
from ..op.registry import Op
from ..op.strategy import OpImplementation, select_implementation
from ..ty import TupleType
from .dispatch import current_providers, workload_key

__all__ = ["GroupTE", "lower_to_te", "KernelCache", "Kernel", "compile_all", "group_name"]

_log = logging.getLogger("compiler.relay")
_SCALAR_OK = {"add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
              "floor_divide", "floor_mod", "equal", "not_equal", "less", "less_equal",
              "greater", "greater_equal", "logical_and", "logical_or"}


@dataclass
class GroupTE:
    """A fused group as TE: its inputs (placeholders), outputs, anchor and key."""
    inputs: list
    outputs: list
    anchor: str               # name of the highest-pattern op (conv2d, dense, ...)
    pattern: str
    key: str                  # workload key (backend.dispatch)
    tunable: bool
    implementation: OpImplementation | None   # the anchor's x86 strategy choice


def group_name(fn: Function) -> str:
    ops = [n.op.name.replace(".", "_") for n in post_order(fn.body)
           if isinstance(n, Call) and isinstance(n.op, Op)]
    name = "fused_" + "_".join(ops)
    return name[:80]


def _anchor(fn: Function):
    """The call of highest pattern level (the first one on ties), or None."""
    best, level = None, -1
    for node in post_order(fn.body):
        if isinstance(node, Call) and isinstance(node.op, Op):
            lv = T.PATTERN_LEVEL.get(node.op.pattern, 0)
            if lv > level:
                best, level = node, lv
    return best


def lower_to_te(fn: Function, target=None) -> GroupTE:
    """The group's TE; the anchor is computed by its selected implementation."""
    anchor = _anchor(fn)
    impl = None if anchor is None else select_implementation(
        anchor.op, anchor.attrs, tuple(a.checked_type for a in anchor.args), target)
    env: dict = {}
    inputs = []
    for k, p in enumerate(fn.params):
        t = p.checked_type
        if isinstance(t, TupleType):          # a tuple argument: one placeholder per field
            env[p] = [te_api.placeholder(f.shape, name=f"p{k}_{i}", dtype=f.dtype)
                      for i, f in enumerate(t.fields)]
            inputs.extend(env[p])
        else:
            env[p] = te_api.placeholder(t.shape, name=f"p{k}", dtype=t.dtype)
            inputs.append(env[p])
    tunable = False
    for node in post_order(fn.body):
        if isinstance(node, Var):
            continue
        if isinstance(node, Constant):
            env[node] = node
        elif isinstance(node, Call):
            if not isinstance(node.op, Op):
                raise RelayError(f"lower_to_te: nested call of a function inside {group_name(fn)}")
            args = [_te_arg(env[a], node.op.name) for a in node.args]
            compute = impl.compute if node is anchor and impl is not None else node.op.compute
            env[node] = compute(args, node.attrs, node.checked_type)
            tunable = tunable or node.op.tunable
        elif isinstance(node, Tuple):
            env[node] = [env[f] for f in node.fields]
        elif isinstance(node, TupleGetItem):
            env[node] = env[node.tuple_value][node.index]
    out = env[fn.body]
    outputs: list = []
    for t in (list(out) if isinstance(out, (list, tuple)) else [out]):
        # an output that is an input (batch_norm's mean) or repeats needs its own buffer
        if any(t is x for x in inputs) or any(t is o for o in outputs):
            t = topi.identity(t)
        outputs.append(t)
    name = "" if anchor is None else anchor.op.name
    pattern = T.OPAQUE if anchor is None else anchor.op.pattern
    return GroupTE(inputs, outputs, name, pattern, workload_key(inputs, outputs), tunable,
                   impl)


def _te_arg(v, op_name: str):
    """A relay value as a compute argument: tensors as they are, scalar constants as TIR
    constants for broadcast ops and as 0-d tensors otherwise."""
    if not isinstance(v, Constant):
        return v
    value = v.data.item()
    c = tir_op.const(value, str(v.data.dtype))
    if op_name in _SCALAR_OK:
        return c
    return te_api.compute((), lambda: c, name="T_scalar")


@dataclass
class Kernel:
    name: str
    key: str
    func: object              # the lowered PrimFunc
    tuned: bool               # scheduled by a provider
    implementation: str = ""  # the strategy implementation that scheduled it otherwise
    arg_transforms: tuple = ()  # weight layout transforms of constant inputs (see above)


def default_schedule(g: GroupTE) -> tuple:
    """``(schedule, tensors)`` of ``g`` without a provider: the schedule of the
    implementation its anchor op's strategy selects, or the generic default."""
    impl = g.implementation
    sch = impl.schedule(g.outputs) if impl is not None else \
        topi.generic.schedule_default(g.outputs)
    return sch, g.inputs + g.outputs


class KernelCache:
    """Lowers each distinct fused group once (by workload key) for one build."""

    def __init__(self, target, use_providers: bool):
        self.target = target
        self.by_key: dict = {}
        self.names: set = set()
        self.tuned = self.fallback = 0
        self.use_providers = use_providers

    def lower(self, fn: Function, const_inputs: tuple = ()) -> Kernel:
        """The kernel of ``fn``; ``const_inputs[i]`` tells that input i of this call is a
        graph constant (a weight whose layout a provider may rewrite)."""
        te_group = lower_to_te(fn, self.target)
        cache_key = (te_group.key, tuple(const_inputs))
        hit = self.by_key.get(cache_key)
        if hit is not None:
            return hit
        name = self._unique(group_name(fn))
        args = te_group.inputs + te_group.outputs
        provided = self._provider_schedule(te_group, tuple(const_inputs)) \
            if self.use_providers else None
        func, transforms = None, ()
        if provided is not None:
            sch, args, transforms = provided
            try:
                func = lower(sch, args, name=name)
            except (CompilerError, RecursionError) as err:
                # a tuned schedule that no longer lowers must not fail the build
                warnings.warn(f"relay.build: the provided schedule of {name} ({te_group.key}) "
                              f"does not lower ({type(err).__name__}: {err}); using the "
                              "default schedule", stacklevel=2)
                args, transforms = te_group.inputs + te_group.outputs, ()
        tuned = func is not None
        if func is None:
            sch, _ = default_schedule(te_group)
            func = lower(sch, args, name=name)
        impl_name = "" if tuned or te_group.implementation is None else \
            te_group.implementation.name
        kernel = Kernel(name, te_group.key, func, tuned, impl_name, tuple(transforms))
        self.by_key[cache_key] = kernel
        if te_group.tunable or tuned:
            if tuned:
                self.tuned += 1
            else:
                self.fallback += 1
        return kernel

    def _provider_schedule(self, g: GroupTE, const_inputs: tuple):
        """(schedule, argument tensors, transforms) from the first provider that has a
        schedule for ``g``, or None."""
        tensors = g.inputs + g.outputs
        for p in current_providers():
            note = getattr(p, "note_default_schedule", None)
            if note is not None:
                note(g.key, functools.partial(default_schedule, g))
            rewrite = getattr(p, "query_layout_rewrite", None)
            if rewrite is not None and any(const_inputs):
                got = rewrite(self.target, g.key, tensors, const_inputs)
                if got is not None:
                    sch, args, transforms = got
                    self._check(p, sch, g)
                    bad = [t for t in transforms if not (0 <= t.arg_index < len(const_inputs)
                                                         and const_inputs[t.arg_index])]
                    if bad:
                        raise RelayError(f"schedule provider {p!r} rewrote the layout of "
                                         f"inputs {[t.arg_index for t in bad]} of {g.key}, "
                                         "which are not constants")
                    return sch, list(args), tuple(transforms)
                continue
            sch = p.query(self.target, g.key, tensors)
            if sch is not None:
                self._check(p, sch, g)
                return sch, tensors, ()
        return None

    @staticmethod
    def _check(p, sch, g: GroupTE) -> None:
        if not isinstance(sch, Schedule):
            raise RelayError(f"schedule provider {p!r} returned {type(sch).__name__} for "
                             f"{g.key}; expected a te.Schedule or None")

    def _unique(self, base: str) -> str:
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name


# Starting a worker interpreter costs ~0.3 s; a few kernels compile faster in-process.
_PARALLEL_FROM = 4


def compile_all(kernels, target) -> list:
    """``[(obj bytes, FuncMeta tuple)]`` for ``kernels``, compiled in parallel processes
    (each IR is generated here; LLVM optimization and code emission run in workers)."""
    irs = [codegen_llvm(k.func, target) for k in kernels]
    metas = [resolve_alignment((meta_from_primfunc(k.func),), ir) for k, ir in zip(kernels, irs)]
    store = default_cache()
    objs = [cached_object(ir, target, cache=store) for ir in irs]
    misses = [k for k, o in enumerate(objs) if o is None]
    workers = min(len(misses), os.cpu_count() or 1)
    if workers <= 1 or len(misses) < _PARALLEL_FROM:
        for k in misses:
            objs[k] = compile_ir(irs[k], target, cache=store)
    else:
        cache_dir = None if store is None else str(store.directory)
        done = compile_many([irs[k] for k in misses], target, cache_dir, workers,
                            [kernels[k].name for k in misses])
        for k, obj in zip(misses, done):
            objs[k] = obj
    return list(zip(objs, metas))
