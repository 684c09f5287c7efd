"""A pure-Python tensor compiler: TE -> schedule -> TIR -> LLVM (llvmlite) -> JIT."""
from . import errors, te, tir
from .build import build, build_object, lower
from .errors import BuildError, CodegenError, CompilerError, LoweringError, ScheduleError, TEError
from .target import Target, parse_target

__all__ = ["te", "tir", "errors", "lower", "build", "build_object", "Target", "parse_target",
           "CompilerError", "TEError", "ScheduleError", "LoweringError", "CodegenError",
           "BuildError"]
