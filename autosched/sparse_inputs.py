"""TVM's built-in task-input check functions for sparse kernels (``try_get_sparse_input``
and ``try_get_conv2d_sparse_input``).

Role: name the BSR weight placeholders of a ``topi.nn.sparse_dense`` or
``sparse_conv2d`` op as TVM does, so a TVM script's ``task_inputs={prefix + "W_data":
..., prefix + "W_indices": ..., prefix + "W_indptr": ...}`` reaches them: ``prefix`` is
``sparse_dense_bsr_{N}_{K}_{BS_R}_{BS_C}_{len(indices)}_{len(indptr)}_`` (``sparse_conv2d_bsr_...``
for a convolution, ``BS_C`` 1 for its 2-D data, ``K`` nine times the input channels for
a 3x3 one).  Registered when the package is imported, together with the sink through
which relay's sparse conversions (``relay.analysis.sparse_dense``/``sparse_conv2d``
``process_params``) register the BSR parts they make under ``"default"``, as TVM's.

Invariants: only the first BSR sparse_dense op reachable from the arguments is named (as
TVM); operands whose roles are ambiguous (two 1-D operands of the same length) are left
unnamed rather than guessed.
"""
from __future__ import annotations

from compiler.relay.analysis.sparse_dense import add_task_input_sink
from compiler.te.tensor import ComputeOp, post_order_ops
from compiler.topi import tag as _tag

from .task_inputs import register_task_input_buffer, register_task_input_check_func


def _dims(t) -> tuple:
    return tuple(int(d.value) for d in t.shape)


# block stage tag -> (prefix, dims of the dense operand, dims its weight data may have);
# a 3x3 convolution's dense operand is its im2col stage
_KINDS = {_tag.SPARSE_DENSE_BSR_BLOCK: ("sparse_dense_bsr", 2, (3,)),
          _tag.SPARSE_CONV2D_BSR_BLOCK: ("sparse_conv2d_bsr", 4, (2, 3)),
          _tag.SPARSE_CONV3X3_NHWC_BLOCK: ("sparse_conv2d_bsr", 2, (3,)),
          _tag.SPARSE_CONV3X3_NCHW: ("sparse_conv2d_bsr", 3, (3,))}
_CONV_TAGS = (_tag.SPARSE_CONV2D_BSR_BLOCK, _tag.SPARSE_CONV3X3_NHWC_BLOCK,
              _tag.SPARSE_CONV3X3_NCHW)


def _names_of(op, prefix: str, dense_dims: int, data_dims: tuple) -> dict:
    ins = list(op.input_tensors)
    # when the dense operand and the weight data have as many dims, the dense one is
    # the computed (im2col) tensor
    dense = [t for t in ins if len(t.shape) == dense_dims and (
        dense_dims not in data_dims or isinstance(t.op, ComputeOp))]
    data = [t for t in ins if len(t.shape) in data_dims and all(t is not d for d in dense)]
    one_d = [t for t in ins if len(t.shape) == 1]
    if len(dense) != 1 or len(data) != 1 or len(one_d) != 2:
        return {}
    blocks, bs_r, *rest = _dims(data[0])
    bs_c = rest[0] if rest else 1
    indices = [t for t in one_d if _dims(t)[0] == blocks]
    indptr = [t for t in one_d if _dims(t)[0] != blocks]
    if len(indices) != 1 or len(indptr) != 1:
        return {}
    shape = _dims(dense[0])
    # the reduced (input) width: a dense operand's columns, a convolution's channels
    k = shape[1] if dense_dims == 2 or op.attrs.get("layout") == "NCHW" else shape[-1]
    n = (_dims(indptr[0])[0] - 1) * bs_r
    full = f"{prefix}_{n}_{k}_{bs_r}_{bs_c}_{_dims(indices[0])[0]}_{_dims(indptr[0])[0]}_"
    return {data[0]: full + "W_data", indices[0]: full + "W_indices",
            indptr[0]: full + "W_indptr"}


def _first_sparse(args, tags) -> dict:
    """{placeholder tensor: TVM's task input name} for the first sparse op among ``args``
    whose block stage has one of ``tags``."""
    for op in post_order_ops([a for a in args if isinstance(a.op, ComputeOp)]):
        if op.tag in tags:
            return _names_of(op, *_KINDS[op.tag])
    return {}


def sparse_input_names(args) -> dict:
    """TVM's ``try_get_sparse_input``: the names of a sparse_dense op's BSR weight."""
    return _first_sparse(args, (_tag.SPARSE_DENSE_BSR_BLOCK,))


def conv2d_sparse_input_names(args) -> dict:
    """TVM's ``try_get_conv2d_sparse_input``: the names of a sparse_conv2d's weight (not
    in TVM: a 3x3 one's too, whose ``K`` is ``9 * in_channels``, the width of its weight
    matrix, as TVM's ``process_params`` names them)."""
    return _first_sparse(args, _CONV_TAGS)


register_task_input_check_func("try_get_sparse_input", sparse_input_names, override=True)
register_task_input_check_func("try_get_conv2d_sparse_input", conv2d_sparse_input_names,
                               override=True)


def _register_default(workload_key: str, name: str, array) -> None:
    register_task_input_buffer(workload_key, name, array, overwrite=True)


# relay's sparse conversions register the BSR parts they make, as TVM's process_params
add_task_input_sink(_register_default)
