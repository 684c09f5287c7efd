"""Read-only analyses of TIR: structural keys/equality, variable use, free variables,
tensors read, node counts, undefined buffers, loops whose variable is divided.  (Integer
bounds and affine forms are in ``tir.arith``.)

Invariants:
- Nothing here builds or changes IR; every function is a query.
- ``structural_key`` is the one notion of "same structure" in the compiler: two nodes are
  structurally equal iff their keys are equal.  Variables bound inside the node (For loop
  vars, LetStmt/Let vars, Allocate'd buffers) are matched by their order of definition;
  free variables and buffers are matched by identity unless ``map_free_vars`` is set, in
  which case they are matched by order of first occurrence (a consistent bijection).
- ``expr_key`` is the cheap identity-based key the simplifier uses to collect equal terms;
  it never renames variables, so it is only valid while the keyed nodes are alive (the
  callers keep them alive in their memo tables).
"""
from __future__ import annotations

from .dtype import is_integral
from .expr import BufferLoad, Node, Var
from .functor import Visitor, _fields_of
from .stmt import Buffer, PrimFunc

__all__ = ["structural_key",
           "structural_equal", "structural_hash", "expr_key", "uses_var", "free_vars",
           "count_nodes", "undefined_buffers", "shape_vars", "divided_loops"]


class _KeyBuilder(Visitor):
    """Builds a hashable tuple describing a node's structure (memoized per node)."""

    def __init__(self, map_free_vars: bool = False, rename_bound: bool = True):
        super().__init__()
        self.map_free = map_free_vars
        self.rename_bound = rename_bound
        self.var_ids: dict = {}     # Var -> canonical number (bound or mapped free vars)
        self.buf_ids: dict = {}     # Buffer -> canonical number
        self.memo: dict = {}

    def visit(self, node):
        k = self.memo.get(node)
        if k is None:
            k = super().visit(node)
            self.memo[node] = k
        return k

    # -------------------------------------------------------------- leaves
    def visit_Var(self, v):
        n = self.var_ids.get(v)
        if n is None:
            if not self.map_free:
                return ("V", id(v), v.dtype)
            n = self.var_ids[v] = len(self.var_ids)
        return ("v", n, v.dtype)

    def visit_IntImm(self, e):
        return ("I", e.dtype, e.value)

    def visit_FloatImm(self, e):
        return ("F", e.dtype, e.value)

    # Fast paths for the hot node kinds (same key shape as generic_visit would build).
    def _binary(self, e):
        return (type(e), self.visit(e.a), self.visit(e.b))

    visit_Add = visit_Sub = visit_Mul = visit_FloorDiv = visit_FloorMod = _binary
    visit_Div = visit_Mod = visit_Min = visit_Max = visit_And = visit_Or = _binary
    visit_LT = visit_LE = visit_GT = visit_GE = visit_EQ = visit_NE = _binary

    def visit_BufferLoad(self, e):
        return (BufferLoad, self.buffer_key(e.buffer), tuple(self.visit(i) for i in e.indices))

    def define_var(self, v) -> None:
        if self.rename_bound and v not in self.var_ids:
            self.var_ids[v] = len(self.var_ids)
            self.memo.pop(v, None)

    def buffer_key(self, b: Buffer):
        n = self.buf_ids.get(b)
        if n is None:
            if not self.map_free:
                return ("B", id(b))
            n = self.buf_ids[b] = len(self.buf_ids)
        return ("b", n, b.dtype, self.value_key(b.shape), self.value_key(b.strides))

    def define_buffer(self, b: Buffer) -> None:
        if self.rename_bound and b not in self.buf_ids:
            self.buf_ids[b] = len(self.buf_ids)

    # -------------------------------------------------------------- binders
    def visit_For(self, s):
        self.define_var(s.loop_var)
        return self.generic_visit(s)

    def visit_LetStmt(self, s):
        self.define_var(s.var)
        return self.generic_visit(s)

    def visit_Let(self, e):
        self.define_var(e.var)
        return self.generic_visit(e)

    def visit_Allocate(self, s):
        self.define_buffer(s.buffer)
        return self.generic_visit(s)

    def visit_PrimFunc(self, f):
        for b in f.params:
            if isinstance(b, Var):     # scalar params are bound variables
                self.define_var(b)
            else:
                self.define_buffer(b)
        return ("PrimFunc", tuple(self.visit(b) if isinstance(b, Var) else self.buffer_key(b)
                                  for b in f.params),
                self.visit(f.body), self.value_key(f.attrs))

    # -------------------------------------------------------------- generic
    def value_key(self, v):
        if isinstance(v, Buffer):
            return self.buffer_key(v)
        if isinstance(v, Node):
            return self.visit(v)
        if isinstance(v, tuple):
            return tuple(self.value_key(x) for x in v)
        if isinstance(v, (int, float, str, bool)) or v is None:
            return v
        return ("O", id(v))   # opaque objects (tensors, iter vars) by identity

    def generic_visit(self, node):
        if isinstance(node, tuple):
            return tuple(self.value_key(x) for x in node)
        if not isinstance(node, Node):
            return self.value_key(node)
        if isinstance(node, Buffer):
            return self.buffer_key(node)
        cls = type(node)
        return (cls,) + tuple(self.value_key(getattr(node, f)) for f in _fields_of(cls))


def structural_key(node, map_free_vars: bool = False):
    """Hashable structural description of ``node`` (see the module docstring)."""
    return _KeyBuilder(map_free_vars).visit(node)


def structural_equal(a, b, map_free_vars: bool = False) -> bool:
    """True when ``a`` and ``b`` have the same structure.

    Bound variables are matched by definition order; free variables by identity, or by
    order of first occurrence when ``map_free_vars`` is true.
    """
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    return structural_key(a, map_free_vars) == structural_key(b, map_free_vars)


def structural_hash(node, map_free_vars: bool = False) -> int:
    return hash(structural_key(node, map_free_vars))


def expr_key(e, memo: _KeyBuilder):
    """Identity-based structural key of an expression, memoized in ``memo``.

    ``memo`` must be a ``_KeyBuilder`` made by ``new_key_memo``; it is reused across calls so
    that shared subtrees are keyed once.
    """
    return memo.visit(e)


def new_key_memo() -> _KeyBuilder:
    """A key builder for ``expr_key``: no renaming, free variables by identity."""
    return _KeyBuilder(map_free_vars=False, rename_bound=False)


class _UsesVar(Visitor):
    """Stops descending as soon as one of ``targets`` is found."""

    def __init__(self, targets):
        super().__init__()
        self.targets = targets
        self.found = False

    def visit(self, node):
        if not self.found:
            super().visit(node)

    def visit_Var(self, v):
        if v in self.targets:
            self.found = True

    def visit_IntImm(self, e):
        pass

    def visit_FloatImm(self, e):
        pass


def uses_var(node, var) -> bool:
    """Whether ``node`` reads ``var`` (a Var, or any Var of a set/frozenset/dict)."""
    targets = var if isinstance(var, (set, frozenset, dict)) else {var}
    if not targets:
        return False
    v = _UsesVar(targets)
    v.visit(node)
    return v.found


class _VarsRead(Visitor):
    def __init__(self):
        super().__init__()
        self.out: set = set()

    def visit_Var(self, v):
        self.out.add(v)

    def visit_For(self, s):      # a loop's own variable is not a read of it
        self.visit(s.min)
        self.visit(s.extent)
        self.visit(s.body)

    def visit_IntImm(self, e):
        pass

    def visit_FloatImm(self, e):
        pass


def vars_read(node) -> set:
    """Every Var read anywhere in ``node`` (bound inside it or not), in one walk: a
    superset filter for many ``uses_var`` questions about the same tree."""
    v = _VarsRead()
    v.visit(node)
    return v.out


class _FreeVars(Visitor):
    def __init__(self):
        super().__init__()
        self.defined: set = set()
        self.out: dict = {}      # insertion-ordered set

    def visit_Var(self, v):
        if v not in self.defined:
            self.out[v] = None

    def visit_For(self, s):
        self.visit(s.min)
        self.visit(s.extent)
        self.defined.add(s.loop_var)
        self.visit(s.body)

    def visit_LetStmt(self, s):
        self.visit(s.value)
        self.defined.add(s.var)
        self.visit(s.body)

    def visit_Let(self, e):
        self.visit(e.value)
        self.defined.add(e.var)
        self.visit(e.body)


class _ProducersRead(Visitor):
    def __init__(self):
        super().__init__()
        self.out: list = []

    def visit_ProducerLoad(self, e):
        if not any(t is e.producer for t in self.out):
            self.out.append(e.producer)
        for i in e.indices:
            self.visit(i)


def producers_read(node) -> list:
    """The tensors ``node`` reads through ProducerLoad (a te expression not yet lowered:
    a loop extent read from a tensor, say), each once, in first-read order."""
    v = _ProducersRead()
    v.visit(node)
    return v.out


def free_vars(node) -> list:
    """Vars read by ``node`` but not bound inside it, in order of first occurrence."""
    v = _FreeVars()
    v.visit(node)
    return list(v.out)


def shape_vars(func: PrimFunc) -> list:
    """The Vars in the shapes of ``func``'s parameter buffers (its symbolic sizes, which
    the generated function receives after the buffer pointers), in order of first
    occurrence: parameter by parameter, dimension by dimension."""
    out: dict = {}
    for b in func.params:
        if isinstance(b, Buffer):
            for d in b.shape:
                for v in free_vars(d):
                    out.setdefault(v, None)
    return list(out)


class _Counter(Visitor):
    def __init__(self):
        super().__init__()
        self.n = 0

    def generic_visit(self, node):
        if not isinstance(node, tuple):
            self.n += 1
        super().generic_visit(node)


def count_nodes(node) -> int:
    """Number of expression and statement nodes in ``node`` (tuples not counted)."""
    c = _Counter()
    c.visit(node)
    return c.n


class _Buffers(Visitor):
    def __init__(self):
        super().__init__()
        self.allocated: set = set()
        self.used: dict = {}

    def visit_Allocate(self, s):
        self.allocated.add(s.buffer)
        self.visit(s.body)

    def visit_BufferLoad(self, e):
        if e.buffer not in self.allocated:
            self.used[e.buffer] = None
        self.visit(e.indices)

    def visit_BufferStore(self, s):
        if s.buffer not in self.allocated:
            self.used[s.buffer] = None
        self.visit(s.value)
        self.visit(s.indices)


def undefined_buffers(func: PrimFunc) -> list:
    """Buffers accessed in ``func`` that are neither params nor allocated (should be empty)."""
    v = _Buffers()
    v.visit(func.body)
    params = set(func.params)
    return [b for b in v.used if b not in params]



class _DividedLoops(Visitor):
    """The For nodes whose variable (directly or through a let-bound variable) is an
    operand of an integer division or modulo somewhere inside the loop."""

    def __init__(self):
        super().__init__()
        self.loops: list = []       # the enclosing For nodes, outermost first
        self.reach: dict = {}       # let-bound Var -> the enclosing loop Vars it reads
        self.out: set = set()       # ids of the For nodes found

    def visit_For(self, s):
        self.visit(s.min)
        self.visit(s.extent)
        self.loops.append(s)
        self.visit(s.body)
        self.loops.pop()

    def _loop_vars(self, node) -> set:
        """The enclosing loops' Vars that ``node`` reads, through let-bound Vars too."""
        out: set = set()
        for v in vars_read(node):
            out |= self.reach.get(v, {v})
        return out

    def _let(self, node):
        self.visit(node.value)
        if self.loops:
            self.reach[node.var] = self._loop_vars(node.value)
        self.visit(node.body)

    visit_LetStmt = visit_Let = _let

    def _divmod(self, e):
        # index arithmetic only: a float division of loaded values divides no index
        if self.loops and is_integral(e.dtype):
            used = self._loop_vars(e.a) | self._loop_vars(e.b)
            for s in self.loops:
                if s.loop_var in used:
                    self.out.add(id(s))
        self.generic_visit(e)

    visit_Div = visit_Mod = visit_FloorDiv = visit_FloorMod = _divmod

    def _leaf(self, e):         # codegen runs this on every kernel: skip the leaves
        pass

    visit_Var = visit_IntImm = visit_FloatImm = visit_StringImm = _leaf


def divided_loops(node) -> set:
    """Ids of the For nodes in ``node`` whose loop variable reaches an operand of an
    integer Div/Mod/FloorDiv/FloorMod inside the loop (a fused loop's split-back
    indices).

    Why: codegen tells LLVM not to auto-vectorize those loops.  LLVM 22's loop
    vectorizer treats an address ``base + (i & 7)`` as consecutive in ``i`` across the
    wrap, so a loop fusing a reduction axis with an inner spatial one (``k.j_inner``,
    whose accumulator address is ``... + (f % 8)``) was vectorized into wrong sums and
    out-of-bounds masked stores (fuzz seed 2040, case 8390)."""
    v = _DividedLoops()
    v.visit(node)
    return v.out
