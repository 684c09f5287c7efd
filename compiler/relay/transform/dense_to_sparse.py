"""Dense layers and 1x1/3x3 convolutions over sparse weights (TVM's ``DenseToSparse``,
``Conv2dToSparse`` and ``SimplifyFCTranspose``).

``dense_to_sparse(mod, names, shapes)``: every ``nn.dense(x, W)`` whose weight is the
parameter ``W`` named in ``names`` becomes ``nn.sparse_dense(x, (W.data, W.indices,
W.indptr))`` over three new parameters of the BSR shape ``[blocks, bs_r, bs_c, blocks,
rows + 1]`` given in ``shapes`` (``relay.analysis.sparse_dense.process_params`` returns
both and stores the parts in ``params`` under those names).

``conv2d_to_sparse(mod, names, shapes, layout, kernel_size)``: the same for every plain
``kernel_size`` x ``kernel_size`` ``nn.conv2d`` (1 or 3; see
``relay.analysis.sparse_conv2d.plain_conv``) over a named weight, which becomes
``nn.sparse_conv2d``; the shape is ``[blocks, bs_r, (bs_c,) blocks, rows + 1]`` (no
``bs_c`` for a 1x1 kernel's one-column blocks) as ``process_params`` returns it.  A named
weight read by a convolution sparse_conv2d cannot compute (strided, grouped, padded
otherwise) is an error.

``simplify_fc_transpose(mod, names)``: ``nn.dense(x, transpose(W))`` over a 2-D parameter
``W`` named in ``names`` reads a new parameter ``W.T`` instead (its value is ``W``
transposed, stored by ``data_dep_optimization.simplify_fc_transpose.convert``), so the
weight is a plain dense weight the sparse conversion can see.

Invariants: the rewritten function's parameters are its body's free variables in order
of first use (TVM's), so parameters no call reads any more are dropped; a weight read
by several layers gets one set of new parameters.
"""
from __future__ import annotations

from ..analysis.basic import free_vars
from ..analysis.sparse_conv2d import plain_conv
from ..errors import RelayError
from ..expr import Call, Function, Var, var
from ..functor import ExprMutator, post_order
from ..module import IRModule
from ..op import nn as nn_ops
from ..op.nn_more import sparse_conv2d, sparse_dense
from ..op.registry import Op
from ..ty import TensorType
from .infer_type import infer_expr_type

__all__ = ["dense_to_sparse", "conv2d_to_sparse", "simplify_fc_transpose",
           "search_fc_transpose"]


def _is(node, name: str) -> bool:
    return isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == name


def _transposed_weight(call):
    """``W`` when ``call`` is ``nn.dense(x, transpose(W))`` over a 2-D Var, else None."""
    if not _is(call, "nn.dense") or not _is(call.args[1], "transpose"):
        return None
    t = call.args[1]
    w = t.args[0]
    axes = t.attrs.axes
    if not isinstance(w, Var) or not isinstance(w.type_annotation, TensorType) or \
            len(w.type_annotation.shape) != 2 or axes not in (None, (1, 0), [1, 0]):
        return None
    return w


def search_fc_transpose(expr) -> list:
    """Names of the parameters read as ``nn.dense(x, transpose(W))``, each once."""
    out: list = []
    for node in post_order(expr):
        w = _transposed_weight(node)
        if w is not None and w.name_hint not in out:
            out.append(w.name_hint)
    return out


class _ToSparse(ExprMutator):
    """Calls of ``op`` over a named weight become ``make(x, parts)``."""

    def __init__(self, pass_name: str, op: str, shapes: dict, lengths: tuple, make,
                 accept=None, expected: str = ""):
        super().__init__()
        self.pass_name, self.op, self.shapes = pass_name, op, shapes
        self.lengths, self.make, self.accept = lengths, make, accept
        self.expected = expected
        self.parts: dict = {}

    def _parts(self, w: Var) -> tuple:
        got = self.parts.get(w.name_hint)
        if got is None:
            s = [int(d) for d in self.shapes[w.name_hint]]
            if len(s) not in self.lengths:
                col = "(bs_c,) " if 4 in self.lengths else "bs_c, "
                raise RelayError(f"{self.pass_name}: weight {w.name_hint!r} shape {s}; expected "
                                 f"[blocks, bs_r, {col}blocks, rows + 1]")
            t = w.type_annotation
            dtype = t.dtype if isinstance(t, TensorType) else "float32"
            got = self.parts[w.name_hint] = (
                var(w.name_hint + ".data", shape=tuple(s[:-2]), dtype=dtype),
                var(w.name_hint + ".indices", shape=(s[-2],), dtype="int32"),
                var(w.name_hint + ".indptr", shape=(s[-1],), dtype="int32"))
        return got

    def rewrite_Call(self, e):
        w = e.args[1] if _is(e, self.op) else None
        if not isinstance(w, Var) or w.name_hint not in self.shapes:
            return self.rebuild(e)
        if self.accept is not None and not self.accept(e):
            raise RelayError(f"{self.pass_name}: weight {w.name_hint!r} is read by a {self.op} "
                             f"the sparse kernel does not compute (expected {self.expected})")
        return self.make(self.new(e.args[0]), self._parts(w))


class _FromTransposed(ExprMutator):
    def __init__(self, names: set):
        super().__init__()
        self.names = names
        self.vars: dict = {}

    def rewrite_Call(self, e):
        w = _transposed_weight(e)
        if w is None or w.name_hint not in self.names:
            return self.rebuild(e)
        new = self.vars.get(w.name_hint)
        if new is None:
            t = w.type_annotation
            assert isinstance(t, TensorType)      # _transposed_weight checked it
            new = self.vars[w.name_hint] = var(w.name_hint + ".T",
                                               shape=tuple(reversed(t.shape)), dtype=t.dtype)
        return nn_ops.dense(self.new(e.args[0]), new, e.attrs.units, e.attrs.out_dtype)


def _over_functions(mod: IRModule, mutator) -> IRModule:
    out = IRModule()
    for name, fn in mod.functions.items():
        new = mutator.visit(fn) if isinstance(fn, Function) else fn
        if isinstance(new, Function) and new is not fn:
            new = Function(free_vars(new.body), new.body, None, new.attrs)
        out[name] = infer_expr_type(new) if isinstance(new, Function) else new
    return out


def dense_to_sparse(mod: IRModule, weight_name, weight_shape) -> IRModule:
    names = [str(n) for n in weight_name]
    if len(names) != len(weight_shape):
        raise RelayError(f"DenseToSparse: {len(names)} weight names but "
                         f"{len(weight_shape)} shapes; expected one shape per name")
    return _over_functions(mod, _ToSparse("DenseToSparse", "nn.dense",
                                          dict(zip(names, weight_shape)), (5,), sparse_dense))


def conv2d_to_sparse(mod: IRModule, weight_name, weight_shape, layout: str = "NHWC",
                     kernel_size: int = 1) -> IRModule:
    names = [str(n) for n in weight_name]
    if len(names) != len(weight_shape):
        raise RelayError(f"Conv2dToSparse: {len(names)} weight names but "
                         f"{len(weight_shape)} shapes; expected one shape per name")
    if kernel_size not in (1, 3):
        raise RelayError(f"Conv2dToSparse: kernel_size {kernel_size!r}; expected 1 or 3")
    expected = (f"a {kernel_size}x{kernel_size} convolution with stride 1, "
                f"{'no padding' if kernel_size == 1 else 'padding 1'}, no dilation and one "
                "group")
    mutator = _ToSparse("Conv2dToSparse", "nn.conv2d", dict(zip(names, weight_shape)), (4, 5),
                        lambda x, parts: sparse_conv2d(x, parts, layout, kernel_size),
                        lambda call: plain_conv(call, layout, kernel_size), expected)
    return _over_functions(mod, mutator)


def simplify_fc_transpose(mod: IRModule, target_weight_name) -> IRModule:
    return _over_functions(mod, _FromTransposed({str(n) for n in target_weight_name}))
