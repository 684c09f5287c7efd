"""TIR: the loop-nest IR (expressions, statements, buffers), its printer and helpers."""
from . import dtype, ir_builder
from .calls import call_extern, call_packed, call_pure_extern
from .expr import (
                   EQ,
                   GE,
                   GT,
                   LE,
                   LT,
                   NE,
                   Add,
                   And,
                   BinaryOp,
                   Broadcast,
                   BufferLoad,
                   Call,
                   Cast,
                   CmpOp,
                   CommReducer,
                   Div,
                   FloatImm,
                   FloorDiv,
                   FloorMod,
                   IntImm,
                   IterVar,
                   Let,
                   Max,
                   Min,
                   Mod,
                   Mul,
                   Node,
                   Not,
                   Or,
                   PrimExpr,
                   ProducerLoad,
                   Ramp,
                   Range,
                   Reduce,
                   Select,
                   Shuffle,
                   StringImm,
                   Sub,
                   Var,
)
from .functor import Mutator, Visitor, post_order_visit, substitute
from .op import (
                   INTRINSICS,
                   call,
                   cast,
                   ceil,
                   const,
                   convert,
                   div,
                   erf,
                   exp,
                   floor,
                   floordiv,
                   floormod,
                   if_then_else,
                   indexdiv,
                   indexmod,
                   likely,
                   log,
                   max_value,
                   min_value,
                   power,
                   reinterpret,
                   rsqrt,
                   sigmoid,
                   sqrt,
                   tanh,
                   trunc,
                   truncdiv,
                   truncmod,
)
from .op import abs_ as abs
from .op import all_ as all
from .op import any_ as any
from .op import div as truncdiv_or_div
from .op import max_ as max  # noqa: F401
from .op import min_ as min
from .op import round_ as round
from .printer import astext
from .stmt import (
                   Allocate,
                   AttrStmt,
                   Buffer,
                   BufferStore,
                   Evaluate,
                   For,
                   ForKind,
                   IfThenElse,
                   LetStmt,
                   PrimFunc,
                   SeqStmt,
                   Stmt,
                   decl_buffer,
                   seq,
)

__all__ = [n for n in dir() if not n.startswith("_")]
