"""LLVM IR (text) generation from lowered, flattened TIR: ``codegen_llvm``.

Role: contract §3 of docs/CONTRACTS.md.  Input: PrimFuncs whose every buffer access
has exactly one index; output: the text of one LLVM module that the runtime parses,
verifies, optimizes and JITs.  Text is built with plain strings (not llvmlite.ir):
it is several times faster, and the tuner generates thousands of candidates.

For each PrimFunc ``f`` the module defines
- ``void @f(ptr noalias nocapture %A, ..., i32 %n, ...)``: one pointer per param
  buffer, in order (a scalar Var param is passed by value with its own type), then one
  integer per shape variable of a symbolic kernel that is not itself a param
  (``tir.analysis.shape_vars``: the runtime reads them from the arrays' shapes).
  No alignment is claimed on parameters (numpy may hand us 16-byte aligned arrays);
  attribute group #901 = nounwind + noinline + the target's cpu/features;
- ``void @f__repeat(ptr ..., i64 %n)``: calls ``@f`` n times (time_evaluator times one
  call of it; ``noinline`` on ``@f`` keeps LLVM from merging the repetitions);
- internal workers ``@f__parallel<k>`` (+ ``_body``) for parallel loops (libgomp);
- ``i32 @f__status`` and the message table ``@f__errors``: how a kernel reports a
  failure (failed allocation, out-of-bounds index in a checked build) without
  crashing; see ``ModuleContext.status_globals``;
- the mathlib kernels used, and declarations of intrinsics/libc/libgomp symbols.
The module header carries the target triple and data layout so the optimizer sees the
real type sizes before the runtime attaches its target machine.
"""
from __future__ import annotations

import sys
from functools import cache

import llvmlite.binding as llvm

from ..errors import CodegenError
from ..runtime.packed import TRAMPOLINE_SYMBOL
from ..target import Target, parse_target
from ..tir import dtype as dt
from ..tir.analysis import divided_loops, shape_vars
from ..tir.expr import Var
from ..tir.stmt import Buffer, PrimFunc
from .llvm_builder import ATTR_ENTRY, ATTR_FUNC, ModuleContext
from .llvm_function import FunctionEmitter
from .llvm_types import global_name, local_hint, ltype


def codegen_llvm(funcs, target) -> str:
    """LLVM IR text of ``funcs`` (a PrimFunc or a list of them) for ``target``."""
    if isinstance(funcs, PrimFunc):
        funcs = [funcs]
    funcs = list(funcs)
    if not funcs:
        raise CodegenError("codegen_llvm: got no functions; expected a PrimFunc or a "
                           "non-empty list of PrimFuncs")
    for f in funcs:
        if not isinstance(f, PrimFunc):
            raise CodegenError(f"codegen_llvm: {f!r:.80} is a {type(f).__name__}; "
                               "expected a tir.PrimFunc")
    target = target if isinstance(target, Target) else parse_target(target)
    mod = ModuleContext(target)
    texts = []
    # Emission recurses along expression depth (about 3 frames per level); long
    # left-deep chains such as an explicitly written 1000-term sum need more than
    # Python's default limit of 1000 frames.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
    try:
        for f in funcs:
            try:
                texts.extend(_emit_primfunc(mod, f))
            except RecursionError:
                raise CodegenError(f"codegen: an expression in {f.name!r} is nested too "
                                   "deeply to compile; expected depth below about "
                                   f"{_RECURSION_LIMIT // 4}") from None
    finally:
        sys.setrecursionlimit(limit)
    return _assemble(mod, texts)


_RECURSION_LIMIT = 20000


# C library symbols the generated code (or LLVM's lowering of intrinsics) may call: a
# kernel with one of these names would silently capture those calls at link time.
_RESERVED = frozenset(
    [b + s for b in ("exp", "log", "tanh", "erf", "pow", "sqrt", "fabs", "floor", "ceil",
                     "trunc", "round", "roundeven", "fma", "exp2", "log2", "sin", "cos")
     for s in ("", "f")]
    + ["aligned_alloc", "malloc", "free", "memcpy", "memset", "memmove", "abort",
       "GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads", TRAMPOLINE_SYMBOL])


def _emit_primfunc(mod: ModuleContext, f: PrimFunc) -> list:
    """Texts of ``@f`` and ``@f__repeat``."""
    if (not isinstance(f.name, str) or not f.name or f.name in _RESERVED
            or f.name.startswith(("llvm.", "__cc_"))):
        raise CodegenError(f"codegen: function name {f.name!r} is empty or reserved for "
                           "a C library / LLVM symbol; choose another name")
    sym = global_name(f.name)
    mod.define(sym, "")                # reserve both symbols (texts are returned): a
    mod.define(global_name(f.name + "__repeat"), "")   # duplicate name is an error
    for suffix in ("__status", "__errors"):
        mod.define(global_name(f.name + suffix), "")
    em = FunctionEmitter(mod, f.name)
    mod.divided_loops = divided_loops(f.body)
    seen: set = set()
    sig, types = [], []
    for i, b in enumerate(f.params):
        if not isinstance(b, (Buffer, Var)) or (isinstance(b, Var) and (
                dt.lanes(b.dtype) != 1 or b.dtype == "handle")):
            raise CodegenError(f"codegen: parameter {i} of {f.name!r} is "
                               f"{type(b).__name__} {b!r:.60}; expected a tir.Buffer or a "
                               "scalar Var")
        p = _param_name(b.name, seen)
        em.vars[b.data if isinstance(b, Buffer) else b] = p
        t = "ptr" if isinstance(b, Buffer) else ltype(b.dtype)
        sig.append(f"ptr noalias nocapture {p}" if t == "ptr" else f"{t} {p}")
        types.append(t)
    for v in shape_vars(f):
        if v in em.vars:           # also an explicit scalar param: passed once
            continue
        if v.dtype not in ("int32", "int64"):
            raise CodegenError(f"codegen: shape variable {v.name!r} of {f.name!r} has dtype "
                               f"{v.dtype}; expected int32 or int64")
        em.vars[v] = p = _param_name(v.name, seen)
        sig.append(f"{ltype(v.dtype)} {p}")
        types.append(ltype(v.dtype))
    em.stmt(f.body)
    main = f"define void {sym}({', '.join(sig)}) {ATTR_ENTRY} {{\n" + em.body_text()
    # after the body: the messages are known once every failure point was emitted
    return [main, _repeat_text(f.name, types), mod.status_globals(f.name)]


def _param_name(hint: str, seen: set) -> str:
    # every generated local name ends in a digit, so a name that does not can
    # never collide with one
    p = "%" + local_hint(hint)
    if p[-1].isdigit():
        p += "_"
    while p in seen or p == "%entry":
        p += "_"
    seen.add(p)
    return p


def _repeat_text(name: str, types: list) -> str:
    """``@<name>__repeat(args..., i64 %n)``: the timing loop around one call."""
    args = ", ".join(f"{t} %a{i}" for i, t in enumerate(types))
    call_args = args
    sep = ", " if types else ""
    return "\n".join([
        f"define void {global_name(name + '__repeat')}({args}{sep}i64 %n) {ATTR_FUNC} {{",
        "entry:",
        "  %any = icmp sgt i64 %n, 0",
        "  br i1 %any, label %loop, label %done",
        "loop:",
        "  %i = phi i64 [ 0, %entry ], [ %next, %loop ]",
        f"  call void {global_name(name)}({call_args})",
        "  %next = add nuw nsw i64 %i, 1",
        "  %more = icmp slt i64 %next, %n",
        "  br i1 %more, label %loop, label %done",
        "done:",
        "  ret void",
        "}",
    ])


@cache
def _data_layout(triple: str, cpu: str, features: str) -> str:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    try:
        tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu,
                                                                    features=features)
    except RuntimeError as exc:
        raise CodegenError(f"codegen: no LLVM target for triple {triple!r}: {exc}") from None
    return str(tm.target_data)


def _assemble(mod: ModuleContext, texts: list) -> str:
    t = mod.target
    feats = t.features
    attrs = f'"target-cpu"="{t.mcpu}"' + (f' "target-features"="{feats}"' if feats else "")
    head = (f'target triple = "{t.triple}"\n'
            f'target datalayout = "{_data_layout(t.triple, t.mcpu, feats)}"')
    sections = [head, "\n".join(mod.decls.values()), "\n".join(mod.foreign_globals())]
    sections.extend(texts)
    sections.extend(mod.defs.values())
    sections.append(f"attributes {ATTR_FUNC} = {{ nounwind {attrs} }}\n"
                    f"attributes {ATTR_ENTRY} = {{ noinline nounwind {attrs} }}")
    sections.append("\n".join(mod.metadata))
    return "\n\n".join(x for x in sections if x) + "\n"
