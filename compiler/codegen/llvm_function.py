"""``FunctionEmitter``: the emitter mixins composed, with their dispatch tables.

Role: one instance generates the body of one LLVM function (a PrimFunc, or a parallel
worker body outlined from it).  Dispatch is a dict from node class to unbound method,
built once here: a type lookup per node is the cheapest dispatch Python offers, and
codegen speed matters because the tuner compiles thousands of candidates.
Invariant: every expression and statement class that may reach codegen (contract §3)
has an entry; anything else raises CodegenError naming the node.
"""
from __future__ import annotations

from typing import ClassVar

from ..tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    Ramp,
    Select,
    Shuffle,
    StringImm,
    Sub,
    Var,
)
from ..tir.stmt import Allocate, AttrStmt, BufferStore, Evaluate, For, IfThenElse, LetStmt, SeqStmt
from .llvm_builder import FunctionBuilder
from .llvm_calls import CallMixin
from .llvm_expr import ExprMixin
from .llvm_memory import MemoryMixin
from .llvm_parallel import ParallelMixin
from .llvm_stmt import StmtMixin


class FunctionEmitter(ExprMixin, MemoryMixin, CallMixin, StmtMixin, ParallelMixin,
                      FunctionBuilder):
    """Generates one function's instructions from TIR."""

    _EXPR: ClassVar[dict] = {}
    _STMT: ClassVar[dict] = {}


_E = FunctionEmitter
_E._EXPR.update({
    Var: _E._e_var, IntImm: _E._e_imm, FloatImm: _E._e_imm, StringImm: _E._e_string,
    Cast: _E._e_cast, Add: _E._e_add, Sub: _E._e_sub, Mul: _E._e_mul, Div: _E._e_div,
    Mod: _E._e_mod, FloorDiv: _E._e_floordiv, FloorMod: _E._e_floormod,
    Min: _E._e_min, Max: _E._e_max,
    EQ: _E._e_cmp, NE: _E._e_cmp, LT: _E._e_cmp, LE: _E._e_cmp, GT: _E._e_cmp,
    GE: _E._e_cmp, And: _E._e_and, Or: _E._e_or, Not: _E._e_not, Select: _E._e_select,
    Ramp: _E._e_ramp, Broadcast: _E._e_broadcast, Shuffle: _E._e_shuffle, Let: _E._e_let,
    Call: _E._e_call, BufferLoad: _E._e_load,
})
_E._STMT.update({
    SeqStmt: _E._s_seq, AttrStmt: _E._s_attr, Evaluate: _E._s_evaluate,
    LetStmt: _E._s_let, IfThenElse: _E._s_if, For: _E._s_for, Allocate: _E._s_allocate,
    BufferStore: _E._s_store,
})
