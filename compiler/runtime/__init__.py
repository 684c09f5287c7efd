"""Runtime: targets, compiling LLVM IR to objects, loading them, calling and timing kernels.

Data flow: ``compile_ir(ir, target) -> bytes`` (cacheable, runs anywhere) and
``load_module(bytes, funcs_meta) -> Module`` (this process).  See docs/CONTRACTS.md s.4.
"""
from ..target import Target, host_target, parse_target
from .cache import DEFAULT_CACHE, ObjectCache, default_cache, set_default_cache
from .cacheflush import flush_arguments, flush_cpu_cache, last_level_cache_bytes
from .export import load_module, read_library, register_loader, save_library
from .jit import (
                  CompileOutput,
                  check_runnable,
                  compile_ir,
                  compile_ir_full,
                  link_objects,
                  process_stats,
                  runtime_libraries,
)
from .meta import FuncMeta, ParamMeta, meta_from_primfunc, normalize_funcs_meta, numpy_dtype
from .module import Function, Module, as_aligned, empty_aligned
from .ndarray import Device, NDArray, cpu, device
from .timer import BenchmarkResult, ProfileResult

__all__ = ["DEFAULT_CACHE", "ObjectCache", "default_cache", "set_default_cache",
           "CompileOutput", "check_runnable", "compile_ir", "compile_ir_full", "load_module",
           "process_stats",
           "runtime_libraries", "FuncMeta", "ParamMeta", "meta_from_primfunc",
           "normalize_funcs_meta", "numpy_dtype", "Function", "Module", "as_aligned",
           "empty_aligned", "Target", "host_target", "parse_target", "ProfileResult",
           "BenchmarkResult",
           "flush_arguments", "flush_cpu_cache", "last_level_cache_bytes", "link_objects",
           "read_library",
           "register_loader", "save_library", "Device", "NDArray", "cpu", "device"]
