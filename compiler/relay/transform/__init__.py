"""Relay passes as TVM's pass objects: ``relay.transform.InferType()(mod)``.

Each pass is a named pure function ``IRModule -> IRModule`` in its own module; this
package wraps them as ``compiler.transform.Pass`` objects with TVM's names and opt
levels, and ``optimize_pipeline()`` is the plain list ``relay.build`` runs (a
``Sequential``: passes above the PassContext's opt_level or in its ``disabled_pass``
are skipped).
"""
from ...transform import Pass, PassContext, Sequential, module_pass
from .alter_op_layout import alter_op_layout
from .bind import bind_params_by_name
from .combine_parallel_dense import combine_parallel_dense
from .cse import eliminate_common_subexpr
from .dce import dead_code_elimination
from .dense_to_sparse import (
    conv2d_to_sparse,
    dense_to_sparse,
    search_fc_transpose,
    simplify_fc_transpose,
)
from .fold_constant import fold_constant, register_evaluator
from .fold_scale_axis import fold_scale_axis
from .fuse_ops import fuse_ops
from .infer_type import infer_expr_type, infer_type
from .simplify_expr import simplify_expr
from .simplify_inference import simplify_inference

__all__ = ["Pass", "PassContext", "Sequential", "module_pass", "InferType", "FuseOps",
           "FoldConstant", "SimplifyInference", "SimplifyExpr", "FoldScaleAxis", "AlterOpLayout",
           "EliminateCommonSubexpr", "CombineParallelDense", "DeadCodeElimination",
           "optimize_pipeline", "PIPELINE", "infer_type", "infer_expr_type",
           "bind_params_by_name", "fuse_ops", "fold_constant", "register_evaluator",
           "simplify_inference", "simplify_expr", "fold_scale_axis",
           "eliminate_common_subexpr", "combine_parallel_dense", "dead_code_elimination",
           "alter_op_layout", "DenseToSparse", "Conv2dToSparse", "SimplifyFCTranspose",
           "dense_to_sparse", "conv2d_to_sparse", "simplify_fc_transpose",
           "search_fc_transpose"]

# ruff: noqa: N802 - the pass constructors carry TVM's names


def InferType() -> Pass:
    return Pass(infer_type, "InferType", 0)


def FuseOps(fuse_opt_level: int = -1) -> Pass:
    """``fuse_opt_level`` -1 follows the PassContext (opt_level 0 fuses nothing)."""
    return Pass(lambda mod: fuse_ops(mod, fuse_opt_level), "FuseOps", 0)


def FoldConstant() -> Pass:
    return Pass(fold_constant, "FoldConstant", 2)


def SimplifyInference() -> Pass:
    return Pass(simplify_inference, "SimplifyInference", 0)


def SimplifyExpr() -> Pass:
    return Pass(simplify_expr, "SimplifyExpr", 0)


def FoldScaleAxis() -> Pass:
    return Pass(fold_scale_axis, "FoldScaleAxis", 3)


def AlterOpLayout() -> Pass:
    """Packs the constant weights of narrow NCHW convolutions and of dense layers (see
    alter_op_layout)."""
    return Pass(alter_op_layout, "AlterOpLayout", 3)


def EliminateCommonSubexpr() -> Pass:
    return Pass(eliminate_common_subexpr, "EliminateCommonSubexpr", 3)


def CombineParallelDense(min_num_branches: int = 3) -> Pass:
    return Pass(lambda mod: combine_parallel_dense(mod, min_num_branches),
                "CombineParallelDense", 4)


def DeadCodeElimination(inline_once: bool = False) -> Pass:
    return Pass(lambda mod: dead_code_elimination(mod, inline_once), "DeadCodeElimination", 1)


def DenseToSparse(weight_name, weight_shape) -> Pass:
    """Dense layers over the named weights become sparse_dense over their BSR parts
    (see dense_to_sparse); run by ``data_dep_optimization.bsr_dense.convert``."""
    return Pass(lambda mod: dense_to_sparse(mod, weight_name, weight_shape),
                "DenseToSparse", 0)


def Conv2dToSparse(weight_name, weight_shape, layout: str = "NHWC",
                   kernel_size: int = 1) -> Pass:
    """Plain 1x1 (or, with ``kernel_size=3``, 3x3) convolutions over the named weights
    become sparse_conv2d over their BSR parts (see dense_to_sparse); run by
    ``data_dep_optimization.bsr_conv2d.convert``."""
    return Pass(lambda mod: conv2d_to_sparse(mod, weight_name, weight_shape, layout,
                                             kernel_size), "Conv2dToSparse", 0)


def SimplifyFCTranspose(target_weight_name) -> Pass:
    """``dense(x, transpose(W))`` reads ``W.T`` instead (see dense_to_sparse)."""
    return Pass(lambda mod: simplify_fc_transpose(mod, target_weight_name),
                "SimplifyFCTranspose", 0)


# The order relay.build runs (TVM's build_module.cc, reduced to the passes we have):
# AlterOpLayout after CombineParallelDense, as in TVM, so the combined dense is packed.
PIPELINE = (InferType, SimplifyInference, FoldConstant, SimplifyExpr, FoldScaleAxis,
            EliminateCommonSubexpr, CombineParallelDense, AlterOpLayout, DeadCodeElimination,
            FuseOps, InferType)


def optimize_pipeline() -> Sequential:
    return Sequential([make() for make in PIPELINE], name="relay.optimize")
