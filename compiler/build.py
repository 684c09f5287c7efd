"""``lower`` and ``build``: schedule -> PrimFunc -> LLVM IR -> object -> loaded Module.

Role: orchestration only.  Each step lives in its layer (schedule.lower runs the pass
pipeline, codegen.llvm writes IR text, runtime compiles, caches and loads); this module
only validates the user's arguments and passes results along.

Invariant: ``build_object`` is a pure function of (PrimFunc, target, opt level) whose
results (object bytes, FuncMeta tuple with concrete alignments, IR text) are picklable,
so tuning workers can run it in another process and ship the results to ``load_module``.
"""
from __future__ import annotations

from .codegen.llvm import codegen_llvm
from .errors import BuildError
from .runtime.cache import DEFAULT_CACHE
from .runtime.jit import compile_ir, load_module
from .runtime.meta import meta_from_primfunc, resolve_alignment
from .runtime.module import Module
from .schedule.lower import lower as _lower_schedule
from .schedule.schedule import Schedule
from .target import Target, parse_target
from .tir.module import IRModule
from .tir.stmt import PrimFunc


def _target(target) -> Target:
    if target is None:      # TVM: the target of the enclosing ``with Target(...)``, else llvm
        return Target.current() or parse_target("llvm")
    if isinstance(target, (Target, str)):
        return parse_target(target)
    raise TypeError(f"target {target!r}: expected a Target or a string such as 'llvm'")


def lower(inputs, args=None, name: str = "main", simple_mode: bool = False) -> IRModule:
    """TVM's ``tvm.lower``: an IRModule whose function ``name`` is the optimized PrimFunc
    of a Schedule (``mod[name]``); a PrimFunc is wrapped, an IRModule passes through."""
    if isinstance(inputs, IRModule):
        return inputs
    if isinstance(inputs, PrimFunc):
        return IRModule({inputs.name: inputs})
    if not isinstance(inputs, Schedule):
        raise TypeError(f"lower: inputs {inputs!r}: expected a te Schedule, a tir.PrimFunc "
                        "or an IRModule")
    if args is None:
        raise TypeError("lower(schedule, args): args, the tensors in call order, are required")
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"lower: name {name!r} must be an identifier (it becomes a symbol)")
    func = _lower_schedule(inputs, list(args), name=name, simple_mode=simple_mode)
    return IRModule({name: func})


def _single_primfunc(inputs, what: str) -> PrimFunc:
    """The one PrimFunc of ``inputs`` (a PrimFunc or an IRModule holding exactly one)."""
    if isinstance(inputs, PrimFunc):
        return inputs
    if isinstance(inputs, IRModule):
        funcs = inputs.prim_funcs()
        if len(funcs) != 1 or len(inputs) != 1:
            raise BuildError(f"{what}: the IRModule holds {list(inputs.functions)}; one "
                             "PrimFunc per module is supported (build them one by one)")
        return next(iter(funcs.values()))
    raise TypeError(f"{what}: expected a te Schedule or a tir.PrimFunc or an IRModule, "
                    f"got {type(inputs).__name__}")


def build_object(func: PrimFunc | IRModule, target="llvm", opt_level=None, cache=DEFAULT_CACHE):
    """Compile one lowered PrimFunc (or a one-function IRModule): ``(object bytes,
    (FuncMeta,), IR text)``."""
    func = _single_primfunc(func, "build_object")
    tgt = _target(target)
    ir_text = codegen_llvm(func, tgt)
    if not isinstance(ir_text, str):
        raise BuildError(f"codegen_llvm returned {type(ir_text).__name__} for function "
                         f"{func.name!r}; expected LLVM IR text")
    obj = compile_ir(ir_text, tgt, opt_level, cache=cache)
    meta = resolve_alignment((meta_from_primfunc(func),), ir_text)
    return obj, meta, ir_text


def build(inputs, args=None, target=None, name: str = "default_function",
          opt_level=None) -> Module:
    """Build a Schedule (with ``args``), a lowered PrimFunc or an IRModule of one
    PrimFunc (``tvm.lower``'s result) into a callable Module.  ``name`` names the
    function of a Schedule; a PrimFunc keeps its own name.

    ``target=None`` is the Target of the enclosing ``with Target(...)`` block, else "llvm".
    """
    tgt = _target(target)
    if isinstance(inputs, Schedule):
        inputs = lower(inputs, args, name=name)
    func = _single_primfunc(inputs, "build")
    obj, meta, ir_text = build_object(func, tgt, opt_level)
    return load_module(obj, meta, ir_text=ir_text, target=tgt, opt_level=opt_level)
