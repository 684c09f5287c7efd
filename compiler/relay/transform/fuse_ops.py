"""``FuseOps``: group operators into primitive functions (TVM's fuse_ops.cc algorithm).

1. An indexed forward graph of the dataflow: one node per Call, Tuple, TupleGetItem and
   scalar Constant (Vars and tensor constants are group inputs, never fused); each node
   has its pattern (the op's ``TOpPattern``; tuples ``TUPLE``, tuple access injective)
   and its consumers, each edge carrying the consumer's pattern.
2. The post-dominator tree: a node's immediate post-dominator is the least common
   ancestor of its consumers (a node that is an output of the function has none); the
   edge pattern to it is the max over the paths.
3. Fusion in three phases over nodes in topological order, joining a node's group with
   its post-dominator's when every node on the paths between qualifies:
   phase 0: an out_elemwise_fusable anchor (conv2d, dense, pooling) takes the elementwise
   chain to an elementwise post-dominator (paths of kinds <= broadcast); elementwise and
   broadcast nodes join an injective or reduction post-dominator (paths <= injective,
   the sink may be out_elemwise_fusable); phase 1: injective nodes and tuples join
   injective post-dominators.  Opaque nodes stand alone; a group never exceeds
   ``max_depth`` nodes (``relay.FuseOps.max_depth``, TVM's default 256).
4. Each group becomes a ``Function`` marked ``Primitive=1`` whose parameters are the
   group's inputs (in first-use order), called where the group's output was.
"""
from __future__ import annotations

from ...topi import tag as T
from ...transform import PassContext
from ..expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from ..functor import ExprMutator, post_order
from ..module import IRModule
from ..op.registry import Op
from .infer_type import infer_expr_type

__all__ = ["fuse_ops", "TUPLE"]

TUPLE = "tuple"
_LEVEL = dict(T.PATTERN_LEVEL)
_LEVEL[TUPLE] = 7
_BY_LEVEL = {v: k for k, v in _LEVEL.items()}


def _max(a, b):
    return a if _LEVEL[a] >= _LEVEL[b] else b


class _Node:
    __slots__ = ("expr", "index", "pattern", "outputs", "extern_ref", "parent", "dom_pattern",
                 "depth")

    def __init__(self, expr, index, pattern):
        self.expr, self.index, self.pattern = expr, index, pattern
        self.outputs: list = []        # (consumer node, edge pattern)
        self.extern_ref = False
        self.parent = None             # immediate post-dominator
        self.dom_pattern = pattern
        self.depth = 0


def _pattern(e) -> str | None:
    if isinstance(e, Call):
        return e.op.pattern if isinstance(e.op, Op) else T.OPAQUE
    if isinstance(e, Tuple):
        return TUPLE
    if isinstance(e, TupleGetItem):
        return T.INJECTIVE
    if isinstance(e, Constant):
        return T.ELEMWISE if e.data.shape == () else None
    return None


def build_graph(body) -> list:
    """Nodes in topological order (producers first)."""
    nodes: list = []
    by_expr: dict = {}
    for e in post_order(body):
        if isinstance(e, Function):
            continue
        p = _pattern(e)
        if p is None:
            continue
        n = _Node(e, len(nodes), p)
        nodes.append(n)
        by_expr[e] = n
    for n in nodes:
        for c in _inputs(n.expr):
            src = by_expr.get(c)
            if src is not None:
                src.outputs.append((n, _edge_pattern(n, c)))
    root = by_expr.get(body)
    if root is not None:
        root.extern_ref = True
    return nodes


def _edge_pattern(n, arg) -> str:
    """The consumer's pattern; a broadcast op that keeps this argument's shape is an
    elementwise use of it (TVM's rule: conv2d -> bias_add fuses like conv2d -> relu)."""
    if isinstance(n.expr, Tuple):
        return T.INJECTIVE
    if n.pattern == T.BROADCAST:
        rt, at = n.expr.checked_type, arg.checked_type
        if getattr(rt, "shape", None) == getattr(at, "shape", 0):
            return T.ELEMWISE
    return n.pattern


def _inputs(e) -> tuple:
    if isinstance(e, Call):
        return e.args
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    return ()


def post_dominators(nodes) -> None:
    """Fill ``parent``/``dom_pattern``/``depth`` (TVM's DominatorTree::PostDom): the
    pattern of a node's dominator relation combines its output edges and the relations
    of the tree nodes passed while finding their least common ancestor."""
    for n in reversed(nodes):
        if n.extern_ref or not n.outputs:
            n.parent, n.depth, n.dom_pattern = None, 1, T.OPAQUE
            continue
        acc = [T.ELEMWISE]
        parent = None
        for i, (c, edge) in enumerate(n.outputs):
            parent = c if i == 0 else _lca(parent, c, acc)
            acc[0] = _max(acc[0], edge)
        n.parent, n.dom_pattern = parent, acc[0]
        n.depth = 1 if parent is None else parent.depth + 1


def _lca(a, b, acc):
    while a is not b:
        if a is None or b is None:
            return None
        if a.depth < b.depth:
            acc[0] = _max(acc[0], b.dom_pattern)
            b = b.parent
        elif a.depth > b.depth:
            acc[0] = _max(acc[0], a.dom_pattern)
            a = a.parent
        else:
            acc[0] = _max(_max(acc[0], a.dom_pattern), b.dom_pattern)
            a, b = a.parent, b.parent
    return a


class _Groups:
    def __init__(self, nodes):
        self.parent = list(range(len(nodes)))
        self.pattern = [n.pattern for n in nodes]
        self.size = [1] * len(nodes)

    def find(self, i):
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, child, root) -> None:
        a, b = self.find(child), self.find(root)
        if a == b:
            return
        self.parent[a] = b
        self.pattern[b] = _max(self.pattern[a], self.pattern[b])
        self.size[b] += self.size[a]


def _path_nodes(src, sink) -> list:
    out, seen, todo = [], set(), [src]
    while todo:
        n = todo.pop()
        for c, _ in n.outputs:
            if id(c) not in seen:
                seen.add(id(c))
                out.append(c)
                if c is not sink:
                    todo.append(c)
    return out


def _check_path(src, sink, groups, fcond) -> bool:
    for n in _path_nodes(src, sink):
        if not fcond(groups.pattern[groups.find(n.index)], n is sink):
            return False
    return True


def _commit(src, sink, groups) -> None:
    root = groups.find(sink.index)
    groups.join(src.index, root)
    for n in _path_nodes(src, sink):
        groups.join(n.index, groups.find(root))


def _le(kind, limit) -> bool:
    return _LEVEL[kind] <= _LEVEL[limit]


def run_fusion(nodes, max_depth: int) -> _Groups:
    post_dominators(nodes)
    groups = _Groups(nodes)
    for phase in (0, 1):
        for n in nodes:
            g = groups.find(n.index)
            kind = groups.pattern[g]
            dom = n.parent
            if kind == T.OPAQUE or dom is None:
                continue
            if groups.find(dom.index) == g:
                continue
            if groups.size[g] + groups.size[groups.find(dom.index)] > max_depth:
                continue
            _fuse_one(n, dom, kind, phase, groups)
    return groups


def _fuse_one(n, dom, kind, phase, groups) -> None:
    if kind == T.OUT_ELEMWISE_FUSABLE:
        if phase == 0 and n.dom_pattern == T.ELEMWISE and _check_path(
                n, dom, groups, lambda k, sink: _le(k, T.BROADCAST)):
            _commit(n, dom, groups)
    elif _le(kind, T.BROADCAST):
        if _le(n.dom_pattern, T.INJECTIVE) or n.dom_pattern == T.COMM_REDUCE:
            def fcond(k, sink):
                if not sink:
                    return _le(k, T.INJECTIVE)
                return _le(k, T.BROADCAST) or k in (T.COMM_REDUCE, T.INJECTIVE,
                                                    T.OUT_ELEMWISE_FUSABLE)
            if _check_path(n, dom, groups, fcond):
                _commit(n, dom, groups)
    elif kind in (T.INJECTIVE, TUPLE):
        if phase == 1 and _check_path(n, dom, groups, lambda k, sink: _le(k, T.INJECTIVE)):
            _commit(n, dom, groups)


class _Rewrite(ExprMutator):
    """Replace each group by a call of a primitive function over the group's inputs.

    Groups are convex: only a group's root (its last node in topological order) is used
    outside it, so the call replaces the root and the other members disappear.
    """

    def __init__(self, nodes, groups):
        super().__init__()
        self.members: dict = {}
        for n in nodes:                      # topological order within each group
            self.members.setdefault(groups.find(n.index), []).append(n.expr)
        self.root_of = {m[-1]: m for m in self.members.values()}

    def rewrite_Function(self, f):
        return f if f.attrs.get("Primitive") else self.rebuild(f)

    def rewrite_Call(self, e):
        members = self.root_of.get(e)
        if members is None:
            return self.rebuild(e)
        if len(members) == 1 and isinstance(e, (Constant, Tuple, TupleGetItem)):
            return self.rebuild(e)           # a lone tuple (access) or constant stays as is
        return self._group_call(members)

    rewrite_Tuple = rewrite_TupleGetItem = rewrite_Constant = rewrite_Call

    def _group_call(self, members):
        built: dict = {}
        params: list = []
        args: list = []

        def get(x):
            y = built.get(x)
            if y is None:                    # an input of the group
                y = built[x] = Var(f"p{len(params)}", x.checked_type)
                params.append(y)
                args.append(self.new(x))
            return y

        for m in members:
            if isinstance(m, Call):
                built[m] = Call(m.op, tuple(get(a) for a in m.args), m.attrs)
            elif isinstance(m, Tuple):
                built[m] = Tuple(tuple(get(f) for f in m.fields))
            elif isinstance(m, TupleGetItem):
                built[m] = TupleGetItem(get(m.tuple_value), m.index)
            else:
                built[m] = m                 # a scalar constant, kept inside
        fn = infer_expr_type(Function(params, built[members[-1]], None, {"Primitive": 1}))
        return Call(fn, args)


def fuse_expr(fn: Function, max_depth: int = 256) -> Function:
    typed = infer_expr_type(fn)
    nodes = build_graph(typed.body)
    groups = run_fusion(nodes, max_depth)
    body = _Rewrite(nodes, groups).visit(typed.body)
    return infer_expr_type(Function(typed.params, body, None, typed.attrs))


def fuse_ops(mod: IRModule, fuse_opt_level: int = -1) -> IRModule:
    ctx = PassContext.current()
    level = ctx.opt_level if fuse_opt_level < 0 else fuse_opt_level
    depth = ctx.config.get("relay.FuseOps.max_depth", 256) if level >= 1 else 1
    out = IRModule()
    for name, fn in mod.functions.items():
        out[name] = fuse_expr(fn, depth)
    return out
