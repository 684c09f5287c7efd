"""TIR: the loop-nest IR (expressions, statements, buffers), its printer and helpers."""
from . import dtype
from .expr import (EQ, GE, GT, LE, LT, NE, Add, And, BinaryOp, Broadcast, Call, Cast, CmpOp,
                   CommReducer, Div, FloatImm, FloorDiv, FloorMod, IntImm, IterVar, Let, Max,
                   Min, Mod, Mul, Node, Not, Or, PrimExpr, ProducerLoad, Ramp, Range, Reduce,
                   Select, Shuffle, StringImm, Sub, Var, BufferLoad)
from .stmt import (Allocate, AttrStmt, Buffer, BufferStore, Evaluate, For, ForKind,
                   IfThenElse, LetStmt, PrimFunc, SeqStmt, Stmt, decl_buffer, seq)
from .op import (INTRINSICS, abs_ as abs, all_ as all, any_ as any, call, cast, ceil, const,
                 convert, erf, exp, floor, floordiv, floormod, if_then_else, log, max_value,
                 min_value, power, round_ as round, rsqrt, sigmoid, sqrt, tanh, truncmod, truncdiv, trunc)
from .op import max_ as max, min_ as min, div as truncdiv_or_div  # noqa: F401
from .functor import Mutator, Visitor, post_order_visit, substitute
from .printer import astext

__all__ = [n for n in dir() if not n.startswith("_")]
