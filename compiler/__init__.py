"""A pure-Python tensor compiler: TE -> schedule -> TIR -> LLVM (llvmlite) -> JIT.

``compiler`` plays the role of ``tvm``: ``compiler.te``, ``compiler.tir``, ``compiler.topi``,
``compiler.relay``, ``compiler.transform.PassContext``, ``compiler.IRModule``,
``compiler.cpu(0)``, ``compiler.device("llvm")``, ``compiler.nd.array``,
``compiler.target.Target``, ``compiler.testing``, ``compiler.contrib.graph_executor``,
``compiler.register_func`` / ``get_global_func`` (packed functions for ``tir.call_packed``).
Importing it imports topi, which gives te tensors their arithmetic operators.
"""
from . import contrib, errors, nd, relay, rpc, runtime, target, te, testing, tir, topi, transform
from .build import build, build_object, lower
from .errors import BuildError, CodegenError, CompilerError, LoweringError, ScheduleError, TEError
from .relay.module import IRModule
from .runtime.ndarray import Device, cpu, device
from .runtime.packed import get_global_func, register_func
from .target import Target, parse_target

__all__ = ["te", "tir", "topi", "target", "testing", "relay", "rpc", "runtime", "transform",
           "contrib", "nd", "errors", "lower",
           "build", "build_object", "IRModule", "Device", "cpu", "device", "Target",
           "parse_target", "CompilerError", "TEError", "ScheduleError", "LoweringError",
           "CodegenError", "BuildError", "register_func", "get_global_func"]
