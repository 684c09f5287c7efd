"""Graph codegen: the fused ``main`` function as TVM's graph JSON plus a storage plan.

Walking ``main`` in post-order: every parameter is an input node, every tensor constant a
param node (``p0``, ``p1``, ... with its value in ``params``), every call of a primitive
function a ``tvm_op`` node running its kernel; tuples and tuple accesses only route
entries.  Memory planning gives inputs, params and graph outputs storage of their own
and lets intermediates share storage by liveness: a call's outputs take the smallest
free block that fits (else a new one), and its inputs' blocks become free after it,
never before, so a kernel's inputs and outputs never alias.  Storages are laid out in
one pool at 64-byte aligned offsets; the driver (``driver_ir``) calls the kernels in
order with pointers into that pool.  A param whose every reader takes a layout-transformed
copy (tuned kernels with layout rewrite) stays a node but holds an empty tensor, so such a
weight is stored once.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ...codegen.llvm_types import global_name
from ..errors import RelayError
from ..expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from ..functor import post_order
from ..ty import TensorType, TupleType

__all__ = ["GraphPlan", "plan_graph", "driver_ir", "ALIGN"]

ALIGN = 64


@dataclass
class GraphPlan:
    nodes: list = field(default_factory=list)       # graph JSON nodes
    entries: list = field(default_factory=list)     # (node id, index, shape, dtype)
    storage_of: list = field(default_factory=list)  # entry -> storage id
    storage_bytes: list = field(default_factory=list)
    offsets: list = field(default_factory=list)     # storage -> byte offset in the pool
    pool_bytes: int = 0
    inputs: dict = field(default_factory=dict)      # input name -> entry
    params: dict = field(default_factory=dict)      # param name -> numpy value
    param_entries: dict = field(default_factory=dict)
    outputs: list = field(default_factory=list)     # head entries
    calls: list = field(default_factory=list)       # (kernel name, [entries: ins + outs])
    kernels: list = field(default_factory=list)     # distinct Kernel objects, call order

    def entry_view(self, pool: np.ndarray, e: int) -> np.ndarray:
        _, _, shape, dtype = self.entries[e]
        off = self.offsets[self.storage_of[e]]
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return pool[off:off + n].view(dtype).reshape(shape)

    def graph_json(self) -> str:
        shapes = [list(e[2]) for e in self.entries]
        dtypes = [e[3] for e in self.entries]
        arg_nodes = [k for k, n in enumerate(self.nodes) if n["op"] == "null"]
        row_ptr, k = [0], 0
        for n in self.nodes:
            k += int(n.get("attrs", {}).get("num_outputs", "1"))
            row_ptr.append(k)
        heads = [[self.entries[e][0], self.entries[e][1], 0] for e in self.outputs]
        return json.dumps({"nodes": self.nodes, "arg_nodes": arg_nodes, "heads": heads,
                           "attrs": {"dltype": ["list_str", dtypes],
                                     "storage_id": ["list_int", self.storage_of],
                                     "shape": ["list_shape", shapes]},
                           "node_row_ptr": row_ptr}, indent=1)


def _types(t) -> list:
    return [t] if isinstance(t, TensorType) else [x for f in t.fields for x in _types(f)]


def plan_graph(main: Function, lower) -> GraphPlan:
    """``lower(fn, const_inputs) -> Kernel`` is called for each primitive function, in
    order; ``const_inputs[i]`` is true when input i of the call is a param."""
    plan = GraphPlan()
    entries_of: dict = {}
    for p in main.params:
        if p.name_hint in plan.inputs:
            raise RelayError(f"main has two parameters named {p.name_hint!r}; graph inputs are "
                             "set by name, so parameter names must be unique")
        entries_of[p] = [_leaf(plan, "null", p.name_hint, p.checked_type)]
        plan.inputs[p.name_hint] = entries_of[p][0]
    seen_kernels: dict = {}
    param_of: dict = {}      # param entry -> param name
    rewritten: dict = {}     # (param name, transform) -> entry of the transformed copy
    for node in post_order(main.body, into_functions=False):
        if node in entries_of or isinstance(node, (Var, Function)):
            continue
        if isinstance(node, Constant):
            name = f"p{len(plan.params)}"
            entries_of[node] = [_leaf(plan, "null", name, node.checked_type)]
            plan.params[name] = node.data
            plan.param_entries[name] = entries_of[node][0]
            param_of[entries_of[node][0]] = name
        elif isinstance(node, Tuple):
            entries_of[node] = [e for f in node.fields for e in entries_of[f]]
        elif isinstance(node, TupleGetItem):
            entries_of[node] = _tuple_item(entries_of[node.tuple_value], node)
        elif isinstance(node, Call) and isinstance(node.op, Function):
            ins = [e for a in node.args for e in entries_of[a]]
            kernel = lower(node.op, tuple(e in param_of for e in ins))
            seen_kernels.setdefault(kernel.name, kernel)
            ins = _rewritten_weights(plan, kernel, ins, param_of, rewritten)
            outs = _op_node(plan, kernel.name, ins, node.checked_type)
            plan.calls.append((kernel.name, ins + outs))
            entries_of[node] = outs
        else:
            raise RelayError(f"graph codegen: {type(node).__name__} at the top level of main; "
                             "run FuseOps first (every operator must be in a primitive "
                             "function)")
    plan.outputs = list(entries_of[main.body])
    plan.kernels = list(seen_kernels.values())
    _drop_unread_params(plan)
    _plan_memory(plan)
    return plan


def _drop_unread_params(plan) -> None:
    """A param that no call reads any more (every reader takes a layout-transformed copy)
    keeps its graph node but becomes an empty tensor: its data is neither stored with the
    library nor given room in the pool (else a rewritten weight costs twice its memory)."""
    read = {e for _, args in plan.calls for e in args} | set(plan.outputs)
    for name, e in plan.param_entries.items():
        if e not in read:
            nid, index, _, dtype = plan.entries[e]
            plan.entries[e] = (nid, index, (0,), dtype)
            plan.params[name] = np.empty((0,), dtype=dtype)


def _rewritten_weights(plan, kernel, ins, param_of, rewritten) -> list:
    """``ins`` with each weight the kernel reads in a rewritten layout replaced by a param
    holding the transformed data, made once per (param, transform) at build time."""
    ins = list(ins)
    for tr in kernel.arg_transforms:
        name = param_of[ins[tr.arg_index]]
        key = (name, tr)
        if key not in rewritten:
            data = np.asarray(tr.apply(np.asarray(plan.params[name])))
            new = f"p{len(plan.params)}"
            rewritten[key] = _leaf(plan, "null", new, TensorType(tuple(data.shape),
                                                                 str(data.dtype)))
            plan.params[new] = data
            plan.param_entries[new] = rewritten[key]
            param_of[rewritten[key]] = new
        ins[tr.arg_index] = rewritten[key]
    return ins


def _tuple_item(entries, node):
    t = node.tuple_value.checked_type
    start = sum(len(_types(f)) for f in t.fields[:node.index])
    return entries[start:start + len(_types(t.fields[node.index]))]


def _leaf(plan, op, name, t) -> int:
    if not isinstance(t, TensorType):
        raise RelayError(f"graph input {name!r} has type {t}; graph inputs must be tensors")
    nid = len(plan.nodes)
    plan.nodes.append({"op": op, "name": name, "inputs": []})
    plan.entries.append((nid, 0, t.shape, t.dtype))
    return len(plan.entries) - 1


def _op_node(plan, name, ins, ret_type) -> list:
    outs = _types(ret_type) if isinstance(ret_type, TupleType) else [ret_type]
    nid = len(plan.nodes)
    plan.nodes.append({"op": "tvm_op", "name": name, "attrs": {
        "func_name": name, "num_inputs": str(len(ins)), "num_outputs": str(len(outs)),
        "flatten_data": "0"},
        "inputs": [[plan.entries[e][0], plan.entries[e][1], 0] for e in ins]})
    first = len(plan.entries)
    for k, t in enumerate(outs):
        plan.entries.append((nid, k, t.shape, t.dtype))
    return list(range(first, first + len(outs)))


def _nbytes(entry) -> int:
    _, _, shape, dtype = entry
    return max(1, int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize)


def _plan_memory(plan: GraphPlan) -> None:
    n = len(plan.entries)
    storage = [-1] * n
    sizes: list = []

    def new(size):
        sizes.append(size)
        return len(sizes) - 1

    pinned = set(plan.inputs.values()) | set(plan.param_entries.values()) | set(plan.outputs)
    for e in sorted(pinned):
        storage[e] = new(_nbytes(plan.entries[e]))
    last_use = {}
    for k, (_, args) in enumerate(plan.calls):
        for e in args:
            last_use[e] = k
    free: list = []                       # storage ids of intermediates no longer live
    for k, (_, args) in enumerate(plan.calls):
        for e in args:
            if storage[e] >= 0:
                continue
            need = _nbytes(plan.entries[e])
            fits = [s for s in free if sizes[s] >= need]
            if fits:
                s = min(fits, key=lambda x: sizes[x])
                free.remove(s)
            elif free:
                s = max(free, key=lambda x: sizes[x])      # grow the largest free block
                free.remove(s)
                sizes[s] = need
            else:
                s = new(need)
            storage[e] = s
        for e in args:
            if e not in pinned and last_use.get(e) == k and storage[e] not in free:
                free.append(storage[e])
    plan.storage_of = storage
    plan.storage_bytes = sizes
    off = 0
    for s in sizes:
        plan.offsets.append(off)
        off += -(-s // ALIGN) * ALIGN
    plan.pool_bytes = max(off, ALIGN)


def driver_ir(plan: GraphPlan, symbol: str, kernel_arity: dict) -> str:
    """LLVM IR of ``void @symbol(ptr %pool)`` calling every kernel in order."""
    lines = [f"declare void {global_name(k)}({', '.join(['ptr'] * n)})"
             for k, n in kernel_arity.items()]
    lines += [f"define void {global_name(symbol)}(ptr %pool) nounwind {{", "entry:"]
    tmp = 0
    for name, args in plan.calls:
        ops = []
        for e in args:
            off = plan.offsets[plan.storage_of[e]]
            lines.append(f"  %a{tmp} = getelementptr inbounds i8, ptr %pool, i64 {off}")
            ops.append(f"ptr %a{tmp}")
            tmp += 1
        lines.append(f"  call void {global_name(name)}({', '.join(ops)})")
    lines += ["  ret void", "}"]
    return "\n".join(lines) + "\n"
