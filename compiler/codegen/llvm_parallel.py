"""Outlining of parallel loops into workers run by libgomp's ``GOMP_parallel``.

Role: a mixin of ``FunctionEmitter``.  For ``for (i = lo; i < lo + ext; ++i) body``
of kind "parallel" the parent emits

    closure = { free vars of body..., lo, ext }       (entry-block alloca, align 64)
    GOMP_parallel(@<root>__parallel<k>, &closure, num_threads, 0)

and two functions are added to the module:
- ``@<root>__parallel<k>(ptr %closure)``: loads the closure, splits [lo, lo+ext)
  statically (thread t gets ext/nt iterations, the first ext%nt threads one more) using
  omp_get_thread_num/omp_get_num_threads, and calls
- ``@<root>__parallel<k>_body(ptr noalias %A, ..., i32 %x, ..., iN %lo, iN %hi)``, which
  runs the serial loop.  Passing buffers as ``noalias`` parameters (instead of loading
  them from the closure in the loop's function) keeps the no-alias facts the optimizer
  needs to hold accumulators in registers; when LLVM inlines the body into the worker
  they become scoped-noalias metadata.
Invariants: the closure carries exactly the variables the body uses that are bound in
the enclosing scope (buffer data pointers, loop/let variables), in first-use order:
the body is emitted first and captures them on lookup (no separate analysis pass);
code inside the worker is generated with ``in_parallel`` so nested parallel loops run
serially; ``num_threads`` is ``target.num_cores`` capped by a constant extent, and a
loop that would get one thread is emitted serially instead (no fork-join cost).
"""
from __future__ import annotations

from .llvm_builder import ATTR_FUNC, EmitterBase
from .llvm_expr import const_value
from .llvm_stmt import unroll_full
from .llvm_types import global_name, ltype


class ParallelMixin(EmitterBase):
    """Parallel loop outlining."""

    def parallel_for(self, s) -> bool:
        """Emit ``s`` as a parallel region; False if it should run serially."""
        ext_c = const_value(s.extent)
        nthreads = self.mod.target.num_cores
        if ext_c is not None:
            nthreads = min(nthreads, ext_c)
        if nthreads <= 1:
            return False
        d = s.loop_var.dtype
        t = ltype(d)
        lo = self.int_operand(s.min, d)
        ext = self.int_operand(s.extent, d)
        worker = self.mod.unique_name(f"{self.root}__parallel{self.mod.counter(self.root)}")
        body_sym, free = self._outline_body(s, worker + "_body")
        types = [ltype(v.dtype) for v in free] + [t, t]
        st = "{ " + ", ".join(types) + " }"
        closure = self.entry_alloca(st, 64, "closure")
        values = [self.lookup(v) for v in free] + [lo, ext]
        for k, (ty, val) in enumerate(zip(types, values)):
            p = self.op(f"getelementptr inbounds {st}, ptr {closure}, i32 0, i32 {k}", "c")
            self.emit(f"store {ty} {val}, ptr {p}")
        wsym = global_name(worker)
        self.mod.define(wsym, _worker_text(wsym, body_sym, st, types, d))
        _declare_omp(self.mod)
        gomp = self.mod.declare("@GOMP_parallel",
                                "declare void @GOMP_parallel(ptr, ptr, i32, i32)")
        self.emit(f"call void {gomp}(ptr {wsym}, ptr {closure}, i32 {nthreads}, i32 0)")
        return True

    def _outline_body(self, s, name: str) -> tuple:
        """Define ``name(captured vars..., lo, hi)`` running the loop serially.

        Returns its symbol and the captured variables in parameter order.
        """
        d = s.loop_var.dtype
        t = ltype(d)
        sub = type(self)(self.mod, name, in_parallel=True, root=self.root)
        sub.outer = self.vars
        md = self.mod.loop_md(unroll_full(s.annotations), id(s) in self.mod.divided_loops)
        sub.emit_loop(s.loop_var, "%lo", "%hi", lambda: sub.stmt(s.body), md)
        params = []
        for v, (pname, is_data) in sub.captured.items():
            # only distinct buffers are known not to alias (a let-bound pointer may)
            params.append(f"ptr noalias {pname}" if is_data else f"{ltype(v.dtype)} {pname}")
        params += [f"{t} %lo", f"{t} %hi"]
        sym = global_name(name)
        self.mod.define(sym, f"define internal void {sym}({', '.join(params)}) "
                             f"{ATTR_FUNC} {{\n" + sub.body_text())
        return sym, list(sub.captured)


def _worker_text(wsym: str, body_sym: str, st: str, types: list, d: str) -> str:
    """The GOMP entry point: unpack the closure, take this thread's slice, run it."""
    t = ltype(d)
    lines = [f"define internal void {wsym}(ptr %closure) {ATTR_FUNC} {{", "entry:"]
    args = []
    for k, ty in enumerate(types):
        lines.append(f"  %p{k} = getelementptr inbounds {st}, ptr %closure, i32 0, i32 {k}")
        lines.append(f"  %f{k} = load {ty}, ptr %p{k}")
        args.append(f"{ty} %f{k}")
    n = len(types)
    lo, ext = f"%f{n - 2}", f"%f{n - 1}"
    lines += [
        "  %tid32 = call i32 @omp_get_thread_num()",
        "  %nt32 = call i32 @omp_get_num_threads()",
    ]
    tid, nt = "%tid32", "%nt32"
    if d != "int32":
        lines += [f"  %tid = sext i32 %tid32 to {t}", f"  %nt = sext i32 %nt32 to {t}"]
        tid, nt = "%tid", "%nt"
    lines += [
        f"  %q = sdiv {t} {ext}, {nt}",
        f"  %r = srem {t} {ext}, {nt}",
        f"  %few = icmp slt {t} {tid}, %r",           # the first r threads get q + 1
        f"  %extra = zext i1 %few to {t}",
        f"  %before = select i1 %few, {t} {tid}, {t} %r",
        f"  %start0 = mul {t} {tid}, %q",
        f"  %start1 = add {t} %start0, %before",
        f"  %begin = add {t} {lo}, %start1",
        f"  %cnt = add {t} %q, %extra",
        f"  %end = add {t} %begin, %cnt",
        f"  call void {body_sym}({', '.join(args[:-2] + [f'{t} %begin', f'{t} %end'])})",
        "  ret void",
        "}",
    ]
    return "\n".join(lines)


def _declare_omp(mod) -> None:
    mod.declare("@omp_get_thread_num", "declare i32 @omp_get_thread_num()")
    mod.declare("@omp_get_num_threads", "declare i32 @omp_get_num_threads()")
