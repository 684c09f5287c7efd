"""A pure-Python tensor compiler: TE -> schedule -> TIR -> LLVM (llvmlite) -> JIT."""
from . import errors, te, tir
from .errors import (BuildError, CodegenError, CompilerError, LoweringError, ScheduleError,
                     TEError)

__all__ = ["te", "tir", "errors", "CompilerError", "TEError", "ScheduleError",
           "LoweringError", "CodegenError", "BuildError"]
