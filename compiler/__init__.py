"""A pure-Python tensor compiler: TE -> schedule -> TIR -> LLVM (llvmlite) -> JIT.

``compiler`` plays the role of ``tvm``: ``compiler.te``, ``compiler.tir``,
``compiler.relay``, ``compiler.transform.PassContext``, ``compiler.IRModule``,
``compiler.cpu(0)``, ``compiler.nd.array``, ``compiler.contrib.graph_executor``.
"""
from . import contrib, errors, nd, relay, runtime, te, tir, transform
from .build import build, build_object, lower
from .errors import BuildError, CodegenError, CompilerError, LoweringError, ScheduleError, TEError
from .relay.module import IRModule
from .runtime.ndarray import Device, cpu, device
from .target import Target, parse_target

__all__ = ["te", "tir", "relay", "runtime", "transform", "contrib", "nd", "errors", "lower",
           "build", "build_object", "IRModule", "Device", "cpu", "device", "Target",
           "parse_target", "CompilerError", "TEError", "ScheduleError", "LoweringError",
           "CodegenError", "BuildError"]
