"""Emission of TIR statements: loops, branches, bindings, allocations, stores.

Role: a mixin of ``FunctionEmitter``.  Invariants:
- loops are emitted bottom-tested (``body: phi; ...; i+1 < end ? body : exit``) with a
  guard only when the trip count is not a positive constant: this is already the
  rotated form LLVM's loop passes want, so they need not rotate thousands of loops;
- a loop variable is bound only while its body is emitted (Var identity is the
  scope: the same Var reused by a sibling loop is simply rebound);
- a ``For`` annotation ``("llvm.loop.unroll.full", True)`` attaches full-unroll
  metadata to that loop's back edge; other annotations are hints already consumed;
- a loop whose variable is divided inside it (``tir.analysis.divided_loops``: a fused
  loop's split-back indices) gets ``llvm.loop.vectorize.enable false``: LLVM 22's loop
  vectorizer mistakes ``base + i % 8`` for a consecutive address;
- kinds "vectorized"/"unrolled" that reach codegen are serial loops; "parallel" is
  outlined (llvm_parallel.py) unless already inside a parallel region or the target
  has one core;
- Allocate: constant size <= 64 KiB -> an ``alloca`` (align 64) in the entry block of
  the current function (so inside an outlined worker it is per-thread scratch);
  otherwise ``aligned_alloc(64, size rounded up to 64)`` before the body and ``free``
  after it; a NULL block skips the body and reports MemoryError through the kernel's
  status word (the runtime raises it), never a segfault.
"""
from __future__ import annotations

from ..errors import CodegenError
from ..tir import dtype as dt
from ..tir.expr import FloatImm, IntImm
from .llvm_builder import EmitterBase
from .llvm_expr import const_value
from .llvm_types import local_hint, ltype, mtype, scalar_lit

STACK_LIMIT = 64 * 1024
_MISSING = object()


def unroll_full(annotations) -> bool:
    for k, v in annotations:
        if k == "llvm.loop.unroll.full":
            v = v.value if isinstance(v, IntImm) else v
            return v is True or (isinstance(v, int) and v != 0)
    return False


class StmtMixin(EmitterBase):
    """Statement emitters."""

    def stmt(self, s) -> None:
        fn = self._STMT.get(type(s))
        if fn is None:
            raise CodegenError(f"codegen: cannot generate code for statement "
                               f"{type(s).__name__}; expected one of For, IfThenElse, "
                               "LetStmt, AttrStmt, Evaluate, SeqStmt, Allocate, BufferStore")
        fn(self, s)

    def _s_seq(self, s) -> None:
        for x in s.seq:
            self.stmt(x)

    def _s_attr(self, s) -> None:
        if s.key == "thread_extent":
            raise CodegenError(f"codegen: {self.root!r} binds a loop to GPU thread axis "
                               f"{getattr(s.node, 'thread_tag', s.node)!r} (Stage.bind); "
                               "the llvm target runs on the CPU, so remove the bind")
        self.stmt(s.body)

    def _s_evaluate(self, s) -> None:
        if type(s.value) not in (IntImm, FloatImm):
            self.expr(s.value)

    def bind(self, var, value: str):
        old = self.vars.get(var, _MISSING)
        self.vars[var] = value
        return old

    def unbind(self, var, old) -> None:
        if old is _MISSING:
            del self.vars[var]
        else:
            self.vars[var] = old

    def _s_let(self, s) -> None:
        old = self.bind(s.var, self.expr(s.value))
        self.stmt(s.body)
        self.unbind(s.var, old)

    def _s_if(self, s) -> None:
        cd = s.condition.dtype
        if dt.lanes(cd) != 1:
            raise CodegenError(f"codegen: IfThenElse condition {s.condition} has vector "
                               f"dtype {cd}; expected a scalar bool")
        c = self.cast_value(self.expr(s.condition), cd, "bool")
        lt, lm = self.new_label("if_then"), self.new_label("if_end")
        lf = self.new_label("if_else") if s.else_case is not None else lm
        self.cbr(c, lt, lf)
        self.start_block(lt)
        self.stmt(s.then_case)
        self.br(lm)
        if s.else_case is not None:
            self.start_block(lf)
            self.stmt(s.else_case)
            self.br(lm)
        self.start_block(lm)

    # ---------------------------------------------------------------- loops
    def int_operand(self, e, d: str) -> str:
        """Scalar integer ``e`` converted to dtype ``d``."""
        if dt.lanes(e.dtype) != 1 or not dt.is_integral(e.dtype):
            raise CodegenError(f"codegen: loop bound {e} has dtype {e.dtype}; expected a "
                               "scalar integer")
        return self.cast_value(self.expr(e), e.dtype, d)

    def _s_for(self, s) -> None:
        var = s.loop_var
        d = var.dtype
        if d not in ("int32", "int64"):
            raise CodegenError(f"codegen: loop variable {var.name!r} has dtype {d}; "
                               "expected int32 or int64")
        if (s.kind == "parallel" and not self.in_parallel
                and self.mod.target.num_cores > 1 and self.parallel_for(s)):
            return
        lo_c, ext_c = const_value(s.min), const_value(s.extent)
        if ext_c is not None and ext_c <= 0:
            return
        lo = self.int_operand(s.min, d)
        if lo_c is not None and ext_c is not None:
            hi = scalar_lit(d, lo_c + ext_c)
        else:
            hi = self.op(f"add nsw {ltype(d)} {lo}, {self.int_operand(s.extent, d)}")
        md = self.mod.loop_md(unroll_full(s.annotations), id(s) in self.mod.divided_loops)
        self.emit_loop(var, lo, hi, lambda: self.stmt(s.body), md, ext_c is not None)

    def emit_loop(self, var, lo: str, hi: str, body_fn, md: str = "",
                  nonempty: bool = False) -> None:
        """``for var in [lo, hi): body_fn()``; ``nonempty`` skips the entry guard."""
        t = ltype(var.dtype)
        body, done = self.new_label("for_body"), self.new_label("for_end")
        if nonempty:
            self.br(body)
        else:
            self.cbr(self.op(f"icmp slt {t} {lo}, {hi}"), body, done)
        pre = self.block
        self.start_block(body)
        slot = len(self.lines)
        self.lines.append("")            # the phi, written once the latch is known
        iv = self.tmp(local_hint(var.name) + ".")
        old = self.bind(var, iv)
        body_fn()
        self.unbind(var, old)
        nxt = self.op(f"add nsw {t} {iv}, 1", "next")
        self.cbr(self.op(f"icmp slt {t} {nxt}, {hi}"), body, done, md)
        self.lines[slot] = f"  {iv} = phi {t} [ {lo}, {pre} ], [ {nxt}, {self.block} ]"
        self.start_block(done)

    # ---------------------------------------------------------------- memory
    def _s_allocate(self, s) -> None:
        buf = s.buffer
        if buf.scope not in ("global", "local", "shared", ""):
            raise CodegenError(f"codegen: Allocate of {buf.name!r} in scope {buf.scope!r}; "
                               "expected a CPU scope (global/local)")
        n: int | None = 1
        for x in buf.shape:
            c = const_value(x)
            n = n * c if (c is not None and n is not None) else None
        esize = dt.nbytes(buf.dtype)
        if n is not None and n * esize <= STACK_LIMIT:
            p = self.entry_alloca(f"[{max(n, 1)} x {mtype(buf.dtype)}]", 64, buf.name)
            old = self.bind(buf.data, p)
            self.stmt(s.body)
            self.unbind(buf.data, old)
            return
        size = self._alloc_bytes(buf, n, esize)
        alloc = self.mod.declare("@aligned_alloc", "declare ptr @aligned_alloc(i64, i64)")
        free = self.mod.declare("@free", "declare void @free(ptr)")
        p = self.op(f"call ptr {alloc}(i64 64, i64 {size})", local_hint(buf.name) + ".h")
        # a NULL block reports MemoryError through the status word and skips the body
        ok, fail, done = (self.new_label(x) for x in ("alloc.ok", "alloc.fail", "alloc.done"))
        self.cbr(self.op(f"icmp eq ptr {p}, null"), fail, ok)
        self.start_block(fail)
        what = f"{n * esize} bytes" if n is not None else "its extent"
        self.report("MemoryError", f"kernel {self.root!r}: could not allocate {what} for "
                                   f"buffer {buf.name!r}")
        self.br(done)
        self.start_block(ok)
        old = self.bind(buf.data, p)
        self.stmt(s.body)
        self.unbind(buf.data, old)
        self.emit(f"call void {free}(ptr {p})")
        self.br(done)
        self.start_block(done)

    def _alloc_bytes(self, buf, n, esize: int) -> str:
        """Byte size rounded up to a multiple of 64 (aligned_alloc requires it)."""
        if n is not None:
            return str(max(64, (n * esize + 63) // 64 * 64))
        size = str(esize)
        for x in buf.shape:
            if not dt.is_integral(x.dtype):
                raise CodegenError(f"codegen: Allocate {buf.name!r} extent {x} is not an "
                                   "integer")
            v = self.cast_value(self.expr(x), x.dtype, "int64")
            size = self.op(f"mul i64 {size}, {v}")
        size = self.op(f"add i64 {size}, 63")
        return self.op(f"and i64 {size}, -64")
