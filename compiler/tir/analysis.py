"""Read-only analyses of TIR: structural keys/equality, variable use, integer bounds,
affine dependence on a variable (``detect_linear``).

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
- Integer bounds are inclusive ``(lo, hi)`` pairs, ``None`` meaning unbounded on that side;
  only positive divisors are analysed (anything else is unbounded, never wrong).
"""
from __future__ import annotations

from . import dtype as dt
from . import op as _op
from .expr import BufferLoad, IntImm, Node, Var
from .functor import Visitor, _fields_of
from .stmt import Buffer, PrimFunc

_SMALL = {"int8": (-128, 127), "int16": (-32768, 32767), "uint8": (0, 255),
          "uint16": (0, 65535), "bool": (0, 1)}
_UNBOUNDED = (None, None)

__all__ = ["const_int_bound", "detect_linear", "BoundAnalyzer", "structural_key",
           "structural_equal", "structural_hash", "expr_key", "uses_var", "free_vars",
           "count_nodes", "undefined_buffers"]


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
            self.define_buffer(b)
        return ("PrimFunc", tuple(self.buffer_key(b) for b in f.params),
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


def expr_key(e, memo: dict):
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


def free_vars(node) -> list:
    """Vars read by ``node`` but not bound inside it, in order of first occurrence."""
    v = _FreeVars()
    v.visit(node)
    return list(v.out)


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


# ------------------------------------------------------------------------ integer bounds
def _dtype_bounds(dtype: str) -> tuple:
    b = _SMALL.get(dtype)
    if b is not None:
        return b
    if dtype.startswith("uint"):
        return (0, None)
    return _UNBOUNDED


def bound_add(x, y):
    return None if x is None or y is None else x + y


def bound_scale(b, c: int) -> tuple:
    lo, hi = b
    lo = None if lo is None else lo * c
    hi = None if hi is None else hi * c
    return (lo, hi) if c >= 0 else (hi, lo)


def _min_opt(x, y, default_none_wins: bool):
    if x is None or y is None:
        return None if default_none_wins else (y if x is None else x)
    return min(x, y)


def _max_opt(x, y, default_none_wins: bool):
    if x is None or y is None:
        return None if default_none_wins else (y if x is None else x)
    return max(x, y)


class BoundAnalyzer(Visitor):
    """Inclusive constant bounds of integer expressions under ``ranges`` (memoized)."""

    def __init__(self, ranges: dict):
        super().__init__()
        self.ranges = ranges
        self.memo: dict = {}

    def visit(self, node):
        r = self.memo.get(node)
        if r is None:
            r = super().visit(node)
            self.memo[node] = r
        return r

    def generic_visit(self, node):
        return _dtype_bounds(node.dtype) if hasattr(node, "dtype") else _UNBOUNDED

    def visit_IntImm(self, e):
        return (e.value, e.value)

    def visit_Var(self, v):
        r = self.ranges.get(v)
        return r if r is not None else _dtype_bounds(v.dtype)

    def visit_Add(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (bound_add(a[0], b[0]), bound_add(a[1], b[1]))

    def visit_Sub(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (bound_add(a[0], None if b[1] is None else -b[1]),
                bound_add(a[1], None if b[0] is None else -b[0]))

    def visit_Mul(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if b[0] is not None and b[0] == b[1]:
            return bound_scale(a, b[0])
        if a[0] is not None and a[0] == a[1]:
            return bound_scale(b, a[0])
        if None not in a and None not in b:
            c = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
            return (min(c), max(c))
        if a[0] is not None and b[0] is not None and a[0] >= 0 and b[0] >= 0:
            return (a[0] * b[0], None)
        return _UNBOUNDED

    def _div(self, e, floor: bool):
        a, b = self.visit(e.a), self.visit(e.b)
        if b[0] is None or b[1] is None or b[0] <= 0:
            return _UNBOUNDED   # only positive divisors are analysed
        if a[0] is not None and a[0] >= 0:
            floor = True        # truncating == flooring for non-negative numerators
        if floor:
            lo = None if a[0] is None else min(a[0] // b[0], a[0] // b[1])
            hi = None if a[1] is None else max(a[1] // b[0], a[1] // b[1])
            return (lo, hi)
        if None in a:
            return _UNBOUNDED
        c = [int(x / y) for x in a for y in b]
        return (min(c), max(c))

    def visit_FloorDiv(self, e):
        return self._div(e, True)

    def visit_Div(self, e):
        if not dt.is_integral(e.dtype):
            return _UNBOUNDED
        return self._div(e, False)

    def visit_FloorMod(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if b[0] is None or b[1] is None or b[0] <= 0:
            return _UNBOUNDED
        if b[0] == b[1] and None not in a and a[0] // b[0] == a[1] // b[0]:
            return (a[0] % b[0], a[1] % b[0])   # the whole range lies in one period
        hi = b[1] - 1
        if a[0] is not None and a[0] >= 0 and a[1] is not None:
            hi = min(hi, a[1])
        return (0, hi)

    def visit_Mod(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if b[0] is None or b[1] is None or b[0] <= 0 or not dt.is_integral(e.dtype):
            return _UNBOUNDED
        m = b[1] - 1
        if a[0] is not None and a[0] >= 0:
            return (0, m if a[1] is None else min(m, a[1]))
        return (-m, m)

    def visit_Min(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (_min_opt(a[0], b[0], True), _min_opt(a[1], b[1], False))

    def visit_Max(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (_max_opt(a[0], b[0], False), _max_opt(a[1], b[1], True))

    def _union(self, x, y):
        a, b = self.visit(x), self.visit(y)
        return (_min_opt(a[0], b[0], True), _max_opt(a[1], b[1], True))

    def visit_Select(self, e):
        return self._union(e.true_value, e.false_value)

    def visit_Call(self, e):
        if e.op == "if_then_else":
            return self._union(e.args[1], e.args[2])
        return self.generic_visit(e)

    def visit_Cast(self, e):
        if not dt.is_integral(e.dtype):
            return _UNBOUNDED
        src = e.value.dtype
        if dt.is_bool(src):
            return (0, 1)
        if not dt.is_integral(src):
            return _dtype_bounds(e.dtype)
        lo, hi = self.visit(e.value)
        tlo, thi = _dtype_bounds(e.dtype)
        # a narrowing cast may wrap: keep the source bounds only when they fit
        if (tlo is not None and (lo is None or lo < tlo)) or \
                (thi is not None and (hi is None or hi > thi)):
            return (tlo, thi)
        return (lo, hi)

    def visit_Let(self, e):
        old = self.ranges.get(e.var)
        self.ranges[e.var] = self.visit(e.value)
        try:
            return self.visit(e.body)
        finally:
            if old is None:
                self.ranges.pop(e.var, None)
            else:
                self.ranges[e.var] = old

    def visit_Broadcast(self, e):
        return self.visit(e.value)

    def visit_Ramp(self, e):
        base, stride = self.visit(e.base), self.visit(e.stride)
        last = bound_scale(stride, e.lanes - 1)
        end = (bound_add(base[0], last[0]), bound_add(base[1], last[1]))
        return (_min_opt(base[0], end[0], True), _max_opt(base[1], end[1], True))


def const_int_bound(expr, var_ranges: dict | None = None) -> tuple:
    """Inclusive ``(lo, hi)`` bounds of an integer expression (``None`` = unbounded).

    ``var_ranges`` maps Var -> inclusive (lo, hi); unknown vars are unbounded (or limited
    by their dtype for narrow and unsigned types).
    """
    return BoundAnalyzer(dict(var_ranges) if var_ranges else {}).visit(expr)


# ------------------------------------------------------------------------ linearity
class _Linear(Visitor):
    """(base, stride) of an expression as an affine function of ``var``, or None."""

    def __init__(self, var: Var):
        super().__init__()
        self.var = var
        self.memo: dict = {}

    def visit(self, node):
        r = self.memo.get(node, self)
        if r is self:
            r = super().visit(node)
            self.memo[node] = r
        return r

    def visit_Var(self, v):
        if v is self.var:
            return IntImm(v.dtype, 0), IntImm(v.dtype, 1)
        return v, IntImm(v.dtype, 0)

    def visit_Add(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if a is None or b is None:
            return None
        return _op.add(a[0], b[0]), _op.add(a[1], b[1])

    def visit_Sub(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if a is None or b is None:
            return None
        return _op.sub(a[0], b[0]), _op.sub(a[1], b[1])

    def visit_Mul(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if a is None or b is None:
            return None
        if type(a[1]) is IntImm and a[1].value == 0:
            return _op.mul(a[0], b[0]), _op.mul(a[0], b[1])
        if type(b[1]) is IntImm and b[1].value == 0:
            return _op.mul(a[0], b[0]), _op.mul(a[1], b[0])
        return None

    def generic_visit(self, node):
        if uses_var(node, self.var):
            return None
        return node, IntImm(node.dtype, 0)


def detect_linear(expr, var: Var, var_ranges: dict | None = None, simplifier=None):
    """``(base, stride)`` with ``expr == base + stride*var``, neither using ``var``; or None.

    Both parts are simplified (with ``var_ranges``, or by ``simplifier`` when given).
    """
    if not dt.is_integral(expr.dtype) or dt.lanes(expr.dtype) != 1:
        return None
    r = _Linear(var).visit(expr)
    if r is None:
        return None
    s = simplifier if simplifier is not None else _arith.Simplifier(var_ranges)
    return s.visit(r[0]), s.visit(r[1])


# Imported last: arith builds on this module (Simplifier is looked up at call time).
from . import arith as _arith  # noqa: E402
