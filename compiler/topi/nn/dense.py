"""Dense and matmul family (TVM's ``nn.dense``, ``nn.matmul``, ``nn.batch_matmul``).

Invariants: the product is one reduction ComputeOp tagged "dense" / "matmul" /
"batch_matmul" (pattern out_elemwise_fusable) whose attrs record ``transpose_a`` and
``transpose_b`` so schedules know which operand has the reduction axis innermost; an
optional bias is a separate "broadcast" stage after it (fused by the schedules).
Operands are cast to ``out_dtype`` inside the sum, as TVM does.  The second operand is
named in ``attrs["layout_free_placeholders"]`` (as TVM's): a weight whose layout the
auto-scheduler may rewrite.  ``dense_pack`` reads a weight packed by blocks of ``nr``
output units, (N/nr, K, nr) (TVM's "NC{nr}n"), and records ``nr`` as
``attrs["weight_vector"]``.
"""
from __future__ import annotations

from ...te import api as te
from .. import tag as _tag
from ..utils import check_dtype, check_tensor, const_tuple, error, make


def _out_dtype(op, a, b, out_dtype):
    if a.dtype != b.dtype and out_dtype is None:
        raise error(op, "tensor_b", b, f"dtype {a.dtype} like the first operand "
                    "(or pass out_dtype)")
    return check_dtype(op, "out_dtype", out_dtype) or a.dtype


def _cast(x, dtype):
    return x if x.dtype == dtype else x.astype(dtype)


def _add_bias(op, out, bias, axis_len):
    if bias is None:
        return out
    check_tensor(op, "bias", bias, ndim=1)
    if const_tuple(bias.shape)[0] != axis_len:
        raise error(op, "bias", bias, f"shape ({axis_len},) matching the output units")
    d = out.dtype
    return make(out.shape, lambda *i: out(*i) + _cast(bias[i[-1]], d), name="T_add",
                tag=_tag.BROADCAST)


def dense(data, weight, bias=None, out_dtype=None):
    """``data @ weight.T (+ bias)``; data (M, K), weight (N, K), bias (N,)."""
    op = "nn.dense"
    check_tensor(op, "data", data, ndim=2)
    check_tensor(op, "weight", weight, ndim=2)
    m, k = const_tuple(data.shape)
    n, k2 = const_tuple(weight.shape)
    if k != k2:
        raise error(op, "weight", weight, f"shape (units, {k}): in_dim must match data's "
                    f"last dimension {k}")
    odt = _out_dtype(op, data, weight, out_dtype)
    r = te.reduce_axis((0, k), name="k")
    out = make((m, n), lambda i, j: te.sum(_cast(data[i, r], odt) * _cast(weight[j, r], odt),
                                           axis=r),
               name="T_dense", tag=_tag.DENSE, transpose_a=False, transpose_b=True,
               layout_free_placeholders=[weight])
    return _add_bias(op, out, bias, n)


def dense_pack(data, weight, bias=None, out_dtype=None):
    """``data @ W.T (+ bias)`` with W given packed, ``weight[j // nr, k, j % nr] =
    W[j, k]`` (TVM's ``nn.contrib_dense_pack``, weight layout "NC{nr}n"; relay's
    AlterOpLayout makes it from a constant (N, K) weight).  ``nr`` output units are then
    one contiguous weight load per k, so the x86 schedule keeps an MR x nr tile of vector
    accumulators, as a GEMM micro-kernel does.  data (M, K), weight (N/nr, K, nr)."""
    op = "nn.contrib_dense_pack"
    check_tensor(op, "data", data, ndim=2)
    check_tensor(op, "weight", weight, ndim=3)
    m, k = const_tuple(data.shape)
    nb, k2, nr = const_tuple(weight.shape)
    if k != k2:
        raise error(op, "weight", weight, f"shape (units/nr, {k}, nr): in_dim must match "
                    f"data's last dimension {k}")
    odt = _out_dtype(op, data, weight, out_dtype)
    r = te.reduce_axis((0, k), name="k")
    out = make((m, nb * nr), lambda i, j: te.sum(
        _cast(data[i, r], odt) * _cast(weight[j // nr, r, j % nr], odt), axis=r),
        name="T_dense_pack", tag=_tag.DENSE, transpose_a=False, transpose_b=False,
        weight_vector=nr, layout_free_placeholders=[weight])
    return _add_bias(op, out, bias, nb * nr)


def pack_dense_weight(w, nr: int):
    """numpy (N, K) -> (N/nr, K, nr), the layout ``dense_pack`` reads."""
    n, k = w.shape
    return w.reshape(n // nr, nr, k).transpose(0, 2, 1).copy()


def matmul(tensor_a, tensor_b, bias=None, out_dtype=None, transpose_a=False,
           transpose_b=False):
    """``op(a) @ op(b) (+ bias)`` where op transposes when the flag is set."""
    op = "nn.matmul"
    check_tensor(op, "tensor_a", tensor_a, ndim=2)
    check_tensor(op, "tensor_b", tensor_b, ndim=2)
    for arg, v in (("transpose_a", transpose_a), ("transpose_b", transpose_b)):
        if not isinstance(v, bool):
            raise error(op, arg, v, "a bool")
    sa, sb = const_tuple(tensor_a.shape), const_tuple(tensor_b.shape)
    m, k = (sa[1], sa[0]) if transpose_a else sa
    kb, n = (sb[1], sb[0]) if transpose_b else sb
    if k != kb:
        raise error(op, "tensor_b", tensor_b, f"a reduction extent {k} matching tensor_a "
                    f"{sa} (transpose_a={transpose_a}, transpose_b={transpose_b})")
    odt = _out_dtype(op, tensor_a, tensor_b, out_dtype)
    r = te.reduce_axis((0, k), name="k")

    def f(i, j):
        a = tensor_a[r, i] if transpose_a else tensor_a[i, r]
        b = tensor_b[j, r] if transpose_b else tensor_b[r, j]
        return te.sum(_cast(a, odt) * _cast(b, odt), axis=r)
    out = make((m, n), f, name="T_matmul", tag=_tag.MATMUL, transpose_a=transpose_a,
               transpose_b=transpose_b, layout_free_placeholders=[tensor_b])
    return _add_bias(op, out, bias, n)


def batch_matmul(tensor_a, tensor_b, oshape=None, out_dtype=None, transpose_a=False,
                 transpose_b=True):
    """Batched ``op(a) @ op(b)``; a (B, M, K), b (B, N, K) by default; batch 1 broadcasts."""
    op = "nn.batch_matmul"
    check_tensor(op, "tensor_a", tensor_a, ndim=3)
    check_tensor(op, "tensor_b", tensor_b, ndim=3)
    for arg, v in (("transpose_a", transpose_a), ("transpose_b", transpose_b)):
        if not isinstance(v, bool):
            raise error(op, arg, v, "a bool")
    sa, sb = const_tuple(tensor_a.shape), const_tuple(tensor_b.shape)
    ba, m, k = (sa[0], sa[2], sa[1]) if transpose_a else sa
    bb, kb, n = (sb[0], sb[2], sb[1]) if transpose_b else sb
    if k != kb:
        raise error(op, "tensor_b", tensor_b, f"a reduction extent {k} matching tensor_a "
                    f"{sa} (transpose_a={transpose_a}, transpose_b={transpose_b})")
    if ba != bb and 1 not in (ba, bb):
        raise error(op, "tensor_b", tensor_b, f"batch {ba} like tensor_a, or batch 1")
    batch = max(ba, bb)
    if oshape is not None and tuple(const_tuple(oshape)) != (batch, m, n):
        raise error(op, "oshape", oshape, f"{(batch, m, n)}")
    odt = _out_dtype(op, tensor_a, tensor_b, out_dtype)
    r = te.reduce_axis((0, k), name="k")

    def f(b, i, j):
        xb = 0 if ba == 1 else b
        yb = 0 if bb == 1 else b
        x = tensor_a[xb, r, i] if transpose_a else tensor_a[xb, i, r]
        y = tensor_b[yb, j, r] if transpose_b else tensor_b[yb, r, j]
        return te.sum(_cast(x, odt) * _cast(y, odt), axis=r)
    return make((batch, m, n), f, name="T_batch_matmul", tag=_tag.BATCH_MATMUL,
                transpose_a=transpose_a, transpose_b=transpose_b,
                layout_free_placeholders=[tensor_b])
