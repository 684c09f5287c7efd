"""Static analysis of a compute op's body for the cost-model features.

Role: for one compute op (with the bodies of the stages a State inlines substituted in),
``body_info`` returns what the features need from the expression alone, independent of
the loop structure:

- ``counts``: arithmetic per innermost iteration in Ansor's 16 categories
  (``COUNT_NAMES``), float vs int decided by the operand dtype.  A ``sum`` reduction whose
  source is a product counts one float multiply-add instead of a mul and an add;
  ``if_then_else`` counts as a select (its condition's compares and logic count too).
- ``accesses``: every tensor the op touches (the output first), with, per access tuple,
  the affine form of each index dimension over the op's root axes (spatial axes then
  reduce axes).  Non-affine index terms (``floordiv``, products of variables, ...) are
  approximated by a coefficient of 1 on every root axis they mention and flagged
  non-affine, so bound inference falls back to the whole dimension for them.

Invariants: ops are immutable, so results are memoized per (op, inlined ops), and the
analysis per structural key (``body_key``: ops rebuilt by a dataflow step mostly have
a body seen before); the caches are bounded (cleared when full).  Nothing here depends
on a State's loops.
"""
from __future__ import annotations

import numpy as np

from compiler.schedule.inline import collect_reads
from compiler.te.tensor import ComputeOp
from compiler.tir import expr as E
from compiler.tir.functor import Mutator, Visitor, substitute

from ..extents import static_extent
from .body_key import body_key

COUNT_NAMES = ("float_mad", "float_addsub", "float_mul", "float_divmod", "float_cmp",
               "float_math_func", "float_other_func", "int_mad", "int_addsub", "int_mul",
               "int_divmod", "int_cmp", "int_math_func", "int_other_func", "bool_op",
               "select_op")
_C = {n: k for k, n in enumerate(COUNT_NAMES)}
_FLOAT_OPS = slice(0, _C["int_mad"])      # the float_* counts
_INT_SHIFT = _C["int_mad"] - _C["float_mad"]
_BINARY = {E.Add: "float_addsub", E.Sub: "float_addsub", E.Mul: "float_mul",
           E.Div: "float_divmod", E.Mod: "float_divmod", E.FloorDiv: "float_divmod",
           E.FloorMod: "float_divmod", E.Min: "float_cmp", E.Max: "float_cmp",
           E.EQ: "float_cmp", E.NE: "float_cmp", E.LT: "float_cmp", E.LE: "float_cmp",
           E.GT: "float_cmp", E.GE: "float_cmp"}
_MATH = {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "pow", "fabs", "floor",
         "ceil", "round", "trunc", "fma"}
# access kinds (Ansor's BufferAccessType)
READ, WRITE, READ_WRITE = 0, 1, 2
# per (op, inlined): a softmax round meets ~4,000 ops (rebuilt by its dataflow steps),
# so a smaller bound cleared the memo every round; per structural key: a few hundred
_CACHE_LIMIT = 16384
_STRUCT_LIMIT = 4096


def elem_bytes(dtype: str) -> int:
    digits = "".join(ch for ch in dtype.split("x")[0] if ch.isdigit())
    return max(1, int(digits) // 8) if digits else 4


class Access:
    """One tensor touched by an op: its kind, static shape and affine index forms.

    ``coefs[j, d, r]`` is the coefficient of root axis r in dimension d of access tuple j,
    ``consts[j, d]`` its constant; ``affine[d]`` is False when some tuple's dimension d
    was not affine.
    """
    __slots__ = ("tensor", "kind", "shape", "elem_bytes", "coefs", "consts", "affine",
                 "static_bytes", "order")

    def __init__(self, tensor, kind, coefs, consts, affine, order):
        self.tensor, self.kind, self.order = tensor, kind, order
        self.shape = tuple(int(s.value) for s in tensor.shape)
        self.elem_bytes = elem_bytes(tensor.dtype)
        self.coefs, self.consts, self.affine = coefs, consts, affine
        self.static_bytes = self.elem_bytes * int(np.prod(self.shape, dtype=np.int64))

    def bound_to(self, tensor) -> Access:
        """This access of another tensor of the same shape and dtype."""
        a = object.__new__(Access)
        for name in Access.__slots__:
            setattr(a, name, getattr(self, name))
        a.tensor = tensor
        return a


class BodyInfo:
    """What the features need from one op's (inlined) body; see the module docstring.

    ``accesses`` are ordered output(s) first, then reads by decreasing tensor size (ties
    in body order); the ``A``, ``spread``, ``member``, ``elem_bytes``, ``n_tuples``,
    ``kind`` and ``last_dim`` arrays stack their dimensions (D rows) and buffers (B).
    """
    __slots__ = ("op", "n_spatial", "n_root", "root_ext", "counts", "accesses",
                 "is_reduce", "A", "spread", "member", "elem_bytes", "n_tuples", "kind",
                 "last_dim", "out_bytes", "shape", "strides", "access_keys",
                 "access_shapes", "curve_ops", "proto")

    def __init__(self, op: ComputeOp, body):
        self.op = op
        # the analysis this one shares its arrays with (``rebound``): what depends on
        # the body's structure alone is memoized on it
        self.proto = self
        roots = [iv.var for iv in op.axis] + [iv.var for iv in op.reduce_axis]
        self.n_spatial, self.n_root = len(op.axis), len(roots)
        self.root_ext = [static_extent(iv) for iv in op.axis + op.reduce_axis]
        self.is_reduce = isinstance(body[0], E.Reduce)
        counter = _OpCounter()
        counter.count_body(body[0])
        self.counts = counter.counts
        index = {v: k for k, v in enumerate(roots)}
        accs = _accesses(op, body, index, self.is_reduce)
        self.accesses = sorted(accs, key=lambda a: (a.kind == READ, -a.static_bytes, a.order))
        self.out_bytes = elem_bytes(op.output(0).dtype)
        # (id of the op, output index) per access: the feature rows look up bound-shrunk
        # buffers by these ints (hashing a Tensor per access per row was a tenth of them)
        self.access_keys = tuple([(id(a.tensor.op), a.tensor.value_index)
                                  for a in self.accesses])
        self.access_shapes = tuple([a.shape for a in self.accesses])
        # the ops per iteration the intensity curve divides: float ops, else all ops
        self.curve_ops = float(self.counts[_FLOAT_OPS].sum() or self.counts.sum())
        self._stack()

    def rebound(self, op: ComputeOp, slots: dict, tensors: list) -> BodyInfo:
        """This analysis for ``op``, whose body has this one's structural key: the
        arrays shared (read-only), the accesses naming ``op``'s tensors -- its outputs
        for this op's, and ``tensors[slots[t]]`` for a read ``t`` (both bodies' reads
        in key order)."""
        info = object.__new__(BodyInfo)
        for name in BodyInfo.__slots__:
            setattr(info, name, getattr(self, name))
        info.op = op
        accs = []
        for a in self.accesses:
            t = a.tensor
            mine = op.output(t.value_index) if t.op is self.op else tensors[slots[t]]
            accs.append(a.bound_to(mine))
        info.accesses = accs
        info.access_keys = tuple([(id(a.tensor.op), a.tensor.value_index) for a in accs])
        return info

    def _stack(self) -> None:
        accs = self.accesses
        dims = [len(a.shape) for a in accs]
        self.A = np.concatenate([a.coefs[0] for a in accs]) if accs else \
            np.zeros((0, self.n_root))
        self.spread = np.concatenate([a.consts.max(axis=0) - a.consts.min(axis=0)
                                      for a in accs]) if accs else np.zeros(0)
        self.member = np.zeros((sum(dims), len(accs)))
        self.member[np.arange(sum(dims)), np.repeat(np.arange(len(accs)), dims)] = 1.0
        self.elem_bytes = np.array([a.elem_bytes for a in accs], float)
        self.n_tuples = np.array([a.coefs.shape[0] for a in accs], float)
        self.kind = np.array([a.kind for a in accs], int)
        self.last_dim = np.cumsum(dims, dtype=int) - 1
        self.shape = np.array([d for a in accs for d in a.shape], float)
        self.strides = np.array([x for a in accs for x in row_major_strides(a.shape)], float)


def row_major_strides(shape) -> list:
    """Element strides of a dense row-major array of ``shape``."""
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    out.reverse()
    return out


# ---------------------------------------------------------------------- op counting
class _OpCounter(Visitor):
    def __init__(self):
        super().__init__()
        self.counts = np.zeros(len(COUNT_NAMES))

    def count_body(self, b) -> None:
        if not isinstance(b, E.Reduce):
            self.visit(b)
            return
        for src in b.source:
            self.visit(src)
        self.visit(b.combiner.result)
        if not (isinstance(b.condition, E.IntImm) and b.condition.value):
            self.visit(b.condition)
        src = b.source[b.value_index]
        if b.combiner.name == "sum" and isinstance(src, E.Mul):
            k = 0 if src.dtype.startswith("float") else _INT_SHIFT
            self.counts[_C["float_mul"] + k] -= 1
            self.counts[_C["float_addsub"] + k] -= 1
            self.counts[_C["float_mad"] + k] += 1

    def generic_visit(self, node):
        name = _BINARY.get(type(node))
        if name is not None:
            k = 0 if node.a.dtype.startswith("float") else _INT_SHIFT
            self.counts[_C[name] + k] += 1
        elif isinstance(node, (E.And, E.Or, E.Not)):
            self.counts[_C["bool_op"]] += 1
        elif isinstance(node, E.Select):
            self.counts[_C["select_op"]] += 1
        super().generic_visit(node)

    def visit_Call(self, e):
        fl = e.dtype.startswith("float")
        if e.op == "if_then_else":
            self.counts[_C["select_op"]] += 1
        elif e.op in _MATH:
            self.counts[_C["float_math_func" if fl else "int_math_func"]] += 1
        elif e.op != "likely":
            self.counts[_C["float_other_func" if fl else "int_other_func"]] += 1
        self.generic_visit(e.args)

    def visit_ProducerLoad(self, e):
        self.visit(e.indices)


# ---------------------------------------------------------------------- accesses
def _linear(e, index: dict):
    """({root: coef}, const) of an affine integer expression, or None."""
    t = type(e)
    if t is E.IntImm:
        return {}, e.value
    if t is E.Var:
        r = index.get(e)
        return ({r: 1}, 0) if r is not None else None
    if t is E.Add or t is E.Sub:
        a, b = _linear(e.a, index), _linear(e.b, index)
        if a is None or b is None:
            return None
        s = 1 if t is E.Add else -1
        co = dict(a[0])
        for r, c in b[0].items():
            co[r] = co.get(r, 0) + s * c
        return co, a[1] + s * b[1]
    if t is E.Mul:
        a, b = _linear(e.a, index), _linear(e.b, index)
        if a is None or b is None or (a[0] and b[0]):
            return None
        if not a[0]:
            a, b = b, a
        return {r: c * b[1] for r, c in a[0].items()}, a[1] * b[1]
    if t is E.Cast:
        return _linear(e.value, index)
    return None


class _VarsIn(Visitor):
    def __init__(self, index):
        super().__init__()
        self.index, self.found = index, set()

    def visit_Var(self, v):
        r = self.index.get(v)
        if r is not None:
            self.found.add(r)


def _access(tensor, kind, tuples, index, n_root, order) -> Access:
    m = len(tuples[0])
    coefs = np.zeros((len(tuples), m, n_root))
    consts = np.zeros((len(tuples), m))
    affine = np.ones(m, dtype=bool)
    for j, idx in enumerate(tuples):
        for d, e in enumerate(idx[:m]):
            lin = _linear(e, index)
            if lin is None:
                v = _VarsIn(index)
                v.visit(e)
                lin = ({r: 1 for r in v.found}, 0)
                affine[d] = False
            for r, c in lin[0].items():
                coefs[j, d, r] = c
            consts[j, d] = lin[1]
    if len(tuples) == 1:
        return Access(tensor, kind, coefs, consts, affine, order)
    # structurally equal tuples (A[i, k] read twice) are one access (the first kept;
    # a dict, not np.unique: these are a handful of short rows, searched per state)
    flat = np.concatenate([coefs.reshape(len(tuples), -1), consts], axis=1)
    first: dict = {}
    for j, row in enumerate(flat.tolist()):
        first.setdefault(tuple(row), j)
    keep = sorted(first.values())
    return Access(tensor, kind, coefs[keep], consts[keep], affine, order)


def _accesses(op, body, index, is_reduce) -> list:
    n_root = len(index)
    out_idx = tuple(iv.var for iv in op.axis)
    kind = READ_WRITE if is_reduce else WRITE
    outs = [_access(op.output(k), kind, [out_idx], index, n_root, -1)
            for k in range(op.num_outputs) if out_idx]
    out = outs[:]
    for k, (t, tuples) in enumerate(collect_reads(body).items()):
        if not t.shape:
            continue
        out.append(_access(t, READ, tuples, index, n_root, k))
    return out


# ---------------------------------------------------------------------- inlining
class _Inliner(Mutator):
    def __init__(self, defs: dict):
        super().__init__()
        self.defs = defs     # Tensor -> (axis vars, effective body)

    def visit_ProducerLoad(self, e):
        idx = self.visit_tuple(e.indices)
        d = self.defs.get(e.producer)
        if d is None:
            return e if idx is e.indices else E.ProducerLoad(e.producer, idx)
        return substitute(d[1], dict(zip(d[0], idx)))


_BODY_CACHE: dict = {}
_STRUCT_CACHE: dict = {}     # body_key -> (BodyInfo, its read tensors' key positions)


def effective_body(op, inlined: frozenset) -> tuple:
    """``op.body`` with reads of the ``inlined`` ops replaced by their definitions."""
    if not inlined or not any(t.op in inlined for t in _all_inputs(op)):
        return op.body
    defs = {}
    for t in _all_inputs(op):
        if t.op in inlined:
            src = effective_body(t.op, inlined)
            defs[t] = (tuple(iv.var for iv in t.op.axis), src[t.value_index])
    inl = _Inliner(defs)
    return tuple(inl.visit(b) for b in op.body)


def _all_inputs(op) -> list:
    return [t for t in op.input_tensors if isinstance(t.op, ComputeOp)]


def body_info(op: ComputeOp, inlined: frozenset) -> BodyInfo:
    """Memoized ``BodyInfo`` of ``op`` with the ``inlined`` ops substituted: per (op,
    inlined ops), and the analysis itself per structural key (``body_key``), so an op
    whose body another op already had gets that one's arrays with its own tensors."""
    key = (op, inlined)
    info = _BODY_CACHE.get(key)
    if info is None:
        if len(_BODY_CACHE) >= _CACHE_LIMIT:
            _BODY_CACHE.clear()
        body = effective_body(op, inlined)
        skey, tensors = body_key(op, body)
        shared = _STRUCT_CACHE.get(skey)
        if shared is None:
            if len(_STRUCT_CACHE) >= _STRUCT_LIMIT:
                _STRUCT_CACHE.clear()
            info = BodyInfo(op, body)
            _STRUCT_CACHE[skey] = (info, {t: k for k, t in enumerate(tensors)})
        else:
            info = shared[0].rebound(op, shared[1], tensors)
        _BODY_CACHE[key] = info
    return info
