"""TVM's built-in task-input check function for sparse kernels (``try_get_sparse_input``).

Role: name the BSR weight placeholders of a ``topi.nn.sparse_dense`` op as TVM does, so a
TVM script's ``task_inputs={prefix + "W_data": ..., prefix + "W_indices": ...,
prefix + "W_indptr": ...}`` reaches them: ``prefix`` is
``sparse_dense_bsr_{N}_{K}_{BS_R}_{BS_C}_{len(indices)}_{len(indptr)}_``.  Registered
when the package is imported.

Invariants: only the first BSR sparse_dense op reachable from the arguments is named (as
TVM); operands whose roles are ambiguous (two 1-D operands of the same length) are left
unnamed rather than guessed.
"""
from __future__ import annotations

from compiler.te.tensor import ComputeOp, post_order_ops
from compiler.topi import tag as _tag

from .task_inputs import register_task_input_check_func


def _dims(t) -> tuple:
    return tuple(int(d.value) for d in t.shape)


def sparse_input_names(args) -> dict:
    """{placeholder tensor: TVM's task input name} for the sparse op among ``args``."""
    ops = post_order_ops([a for a in args if isinstance(a.op, ComputeOp)])
    for op in ops:
        if op.tag != _tag.SPARSE_DENSE_BSR_BLOCK:
            continue
        ins = list(op.input_tensors)
        dense = [t for t in ins if len(t.shape) == 2]
        data = [t for t in ins if len(t.shape) == 3]
        one_d = [t for t in ins if len(t.shape) == 1]
        if len(dense) != 1 or len(data) != 1 or len(one_d) != 2:
            return {}
        blocks, bs_r, bs_c = _dims(data[0])
        indices = [t for t in one_d if _dims(t)[0] == blocks]
        indptr = [t for t in one_d if _dims(t)[0] != blocks]
        if len(indices) != 1 or len(indptr) != 1:
            return {}
        k = _dims(dense[0])[1]
        n = (_dims(indptr[0])[0] - 1) * bs_r
        prefix = (f"sparse_dense_bsr_{n}_{k}_{bs_r}_{bs_c}_{_dims(indices[0])[0]}_"
                  f"{_dims(indptr[0])[0]}_")
        return {data[0]: prefix + "W_data", indices[0]: prefix + "W_indices",
                indptr[0]: prefix + "W_indptr"}
    return {}


register_task_input_check_func("try_get_sparse_input", sparse_input_names, override=True)
