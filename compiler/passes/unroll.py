"""Pass ``unroll_loops``: explicit unrolling, including TVM's ``auto_unroll_max_step``.

Semantics follow TVM's UnrollLoop:
- a loop of kind "unrolled" with a constant extent is replicated, its variable replaced
  by ``min + k`` in copy ``k`` (each copy is then simplified);
- a For annotated ``("pragma_auto_unroll_max_step", N)`` opens a scope (the loop itself
  and everything inside it) in which a *serial* loop is unrolled when its step count
  ``extent * steps(body)`` is <= N, where a store or evaluate counts 1, a sequence sums
  its parts, and a loop that was not unrolled stops every loop around it from unrolling
  (loops are decided innermost first).  At most ``MAX_UNROLL_DEPTH`` nested loops unroll.
- ``("pragma_unroll_explicit", False)`` in scope means chosen loops are not replicated:
  they stay serial loops annotated ``("llvm.loop.unroll.full", True)`` for the code
  generator.  The same holds for AttrStmt pragmas with these keys.

Invariants: loops of non-constant extent are never unrolled (an "unrolled" one becomes
serial); the pass is idempotent; annotations other than the marker are preserved.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..tir import dtype as dt
from ..tir.arith import Simplifier
from ..tir.expr import Add, IntImm, PrimExpr
from ..tir.functor import Mutator, transform_func
from ..tir.stmt import For, ForKind, PrimFunc, SeqStmt
from .common import NOOP, const_int, is_noop, loop_range
from .simplify import make_replacer

__all__ = ["unroll_loops", "unroll_for", "MAX_UNROLL_DEPTH", "UNROLL_FULL"]

MAX_UNROLL_DEPTH = 8
UNROLL_FULL = "llvm.loop.unroll.full"
_MAX_STEP = "pragma_auto_unroll_max_step"
_EXPLICIT = "pragma_unroll_explicit"


def unroll_for(loop: For, body, simplifier: Simplifier | None = None):
    """Replicate ``body`` for every iteration of ``loop`` (constant extent required).

    ``simplifier`` should carry the ranges of the loops around ``loop``; the copies are
    simplified with it.
    """
    n = const_int(loop.extent)
    if n is None:
        raise LoweringError(f"unroll_for: loop {loop.loop_var.name} has non-constant extent "
                            f"{loop.extent}; expected an integer constant")
    simp = simplifier if simplifier is not None else Simplifier()
    var = loop.loop_var
    replace = make_replacer(body, var, simp)
    start = simp.visit(loop.min)
    copies: list = []
    for k in range(n):
        value = IntImm(var.dtype, start.value + k) if type(start) is IntImm else \
            simp.visit(Add(start, IntImm(var.dtype, k)))
        copy = replace(value)
        if type(copy) is SeqStmt:
            copies.extend(copy.seq)
        elif not is_noop(copy):
            copies.append(copy)
    if not copies:
        return NOOP
    return copies[0] if len(copies) == 1 else SeqStmt(tuple(copies))


def _pragma_value(v):
    return v.value if isinstance(v, IntImm) else v


class _Unroller(Mutator):
    def __init__(self):
        super().__init__()
        self.max_step = 0          # auto_unroll_max_step in scope (0 = no auto unroll)
        self.explicit = True       # replicate (True) or mark for LLVM (False)
        self.step_count = 0
        self.unroll_depth = 0
        self.normal_depth = 0
        self.simp = Simplifier()

    def visit(self, node):
        if isinstance(node, PrimExpr):
            return node
        return super().visit(node)

    def _enter_pragmas(self, items) -> tuple:
        saved = (self.max_step, self.explicit)
        for k, v in items:
            if k == _MAX_STEP:
                self.max_step = int(_pragma_value(v))
            elif k == _EXPLICIT:
                self.explicit = bool(_pragma_value(v))
        return saved

    def visit_AttrStmt(self, s):
        if s.key not in (_MAX_STEP, _EXPLICIT):
            return super().generic_visit(s)
        saved = self._enter_pragmas(((s.key, s.value),))
        body = self.visit(s.body)
        self.max_step, self.explicit = saved
        return body    # the pragma has been applied; drop the attribute

    def visit_LetStmt(self, s):
        if dt.is_integral(s.value.dtype) and dt.lanes(s.value.dtype) == 1:
            self.simp.bind(s.var, self.simp.bound(s.value))
        return self.generic_visit(s)

    def visit_For(self, s):
        saved = self._enter_pragmas(s.annotations)
        # ranges of the enclosing loops let the unrolled copies simplify fully
        self.simp.bind(s.loop_var, loop_range(self.simp, s.min, s.extent))
        body = self.visit(s.body)
        self.simp.unbind(s.loop_var)
        n = const_int(s.extent)
        auto = (s.kind == ForKind.SERIAL and n is not None and n >= 0
                and self.normal_depth == 0 and self.unroll_depth <= MAX_UNROLL_DEPTH
                and n * self.step_count <= self.max_step)
        if s.kind == ForKind.UNROLLED:
            auto = n is not None
        if auto:
            self.step_count *= n
            self.unroll_depth += 1
        else:
            self.normal_depth += 1
        explicit = self.explicit
        self.max_step, self.explicit = saved
        if auto and explicit:
            return unroll_for(s, body, self.simp)
        if auto:
            if any(k == UNROLL_FULL for k, _ in s.annotations):
                if body is s.body and s.kind == ForKind.SERIAL:
                    return s
                ann = s.annotations
            else:
                ann = s.annotations + ((UNROLL_FULL, True),)
            return For(s.loop_var, s.min, s.extent, ForKind.SERIAL, body, ann)
        kind = ForKind.SERIAL if s.kind == ForKind.UNROLLED else s.kind
        if body is s.body and kind == s.kind:
            return s
        return For(s.loop_var, s.min, s.extent, kind, body, s.annotations)

    def _count_leaf(self, s):
        self.step_count += 1
        return s

    visit_BufferStore = visit_Evaluate = _count_leaf

    def visit_SeqStmt(self, s):
        out: list = []
        changed = False
        for x in s.seq:
            saved = (self.step_count, self.unroll_depth, self.normal_depth)
            self.step_count = self.unroll_depth = self.normal_depth = 0
            y = self.visit(x)
            self.step_count += saved[0]
            self.unroll_depth = max(self.unroll_depth, saved[1])
            self.normal_depth = max(self.normal_depth, saved[2])
            changed |= y is not x
            if type(y) is SeqStmt:
                out.extend(y.seq)
            elif not is_noop(y) or is_noop(x):
                out.append(y)
        if not changed:
            return s
        return out[0] if len(out) == 1 else (SeqStmt(tuple(out)) if out else NOOP)


def unroll_loops(func: PrimFunc) -> PrimFunc:
    """Unroll "unrolled" loops and loops covered by ``pragma_auto_unroll_max_step``."""
    return transform_func(func, _Unroller())
