"""Code generation: lowered, flattened PrimFuncs -> LLVM IR text (``codegen_llvm``).

Modules: llvm.py (entry point, module assembly), llvm_function.py (the emitter and its
dispatch tables), llvm_expr/llvm_memory/llvm_calls/llvm_stmt/llvm_parallel (emitter
mixins by node family), llvm_lanes (per-lane scalarization), llvm_types (types and
literals), llvm_builder (text builders), mathlib (vector math kernels).
"""
from .llvm import codegen_llvm

__all__ = ["codegen_llvm"]
