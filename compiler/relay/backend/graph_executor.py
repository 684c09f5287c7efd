"""The graph executor (TVM's ``tvm.contrib.graph_executor``, re-exported there).

A built model runs as ONE native call: a generated driver function calls every kernel in
order with pointers into a single memory pool laid out by the build's storage plan
(inputs, params, intermediates and outputs all live in it), so the executor adds one
ctypes call per ``run`` however many kernels there are.  After the call each kernel's
status word is checked (a failed allocation inside a kernel raises here).

``GraphModule(lib["default"](dev))``: ``set_input`` (by name or index; numpy or NDArray;
shape and dtype checked), ``run``, ``get_output``, ``get_input``, ``get_num_outputs``,
``get_num_inputs``, ``benchmark``.  Inputs and outputs of a narrow format (bfloat16,
float8, int4, ...; ``Layout.formats``) live in the pool as their storage dtype and are
exchanged as numpy's (ml_dtypes') arrays of the format, bits unchanged.
"""
from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import CompilerError
from ...runtime.jit import link_objects
from ...runtime.module import empty_aligned, enter_parallel_runtime, kernel_error
from ...runtime.ndarray import NDArray, array, cpu
from ...runtime.timer import BenchmarkResult, benchmark_evaluator
from ...topi.narrow import from_storage, to_storage
from ..errors import RelayInputError

__all__ = ["GraphLib", "Layout", "GraphModule", "BenchmarkResult", "create", "profile"]



@dataclass(frozen=True)
class Layout:
    """Where every entry lives in the pool, and which entries are inputs/params/outputs."""
    pool_bytes: int
    entries: tuple            # (shape, dtype, byte offset) per entry
    inputs: tuple             # (name, entry)
    params: tuple             # (name, entry)
    outputs: tuple            # entries
    calls: tuple = ()         # (kernel name, entries of its arguments), in run order
    formats: tuple = ()       # (entry, narrow format) of inputs/outputs held as storage

    def to_json(self) -> dict:
        return {"pool_bytes": self.pool_bytes,
                "entries": [[list(s), d, o] for s, d, o in self.entries],
                "inputs": [list(x) for x in self.inputs], "params": [list(x) for x in self.params],
                "outputs": list(self.outputs), "calls": [[k, list(a)] for k, a in self.calls],
                "formats": [list(x) for x in self.formats]}

    @staticmethod
    def from_json(d: dict) -> Layout:
        return Layout(int(d["pool_bytes"]),
                      tuple((tuple(s), dt, int(o)) for s, dt, o in d["entries"]),
                      tuple((n, int(e)) for n, e in d["inputs"]),
                      tuple((n, int(e)) for n, e in d["params"]),
                      tuple(int(e) for e in d["outputs"]),
                      tuple((k, tuple(int(e) for e in a)) for k, a in d.get("calls", ())),
                      tuple((int(e), f) for e, f in d.get("formats", ())))


class GraphLib:
    """The kernels and the driver of one model, linked into this process."""

    def __init__(self, objects: dict, kernel_names, driver: str, uses_gomp: bool = True):
        self.objects = dict(objects)
        self.kernel_names = list(kernel_names)
        self.driver = driver
        exports = [driver] + [f"{k}{s}" for k in self.kernel_names
                              for s in ("", "__status", "__errors")]
        self._tracker: Any = link_objects(list(self.objects.values()), exports)
        self._run = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self._tracker[driver])
        self._status = [(k, ctypes.c_int32.from_address(self._tracker[f"{k}__status"]),
                         self._tracker[f"{k}__errors"]) for k in self.kernel_names]
        self.uses_gomp = uses_gomp

    def run(self, pool_addr: int) -> None:
        if self.uses_gomp:
            enter_parallel_runtime(self.driver)
        self._run(pool_addr)
        self.check_status()

    def check_status(self) -> None:
        for name, word, table in self._status:
            if word.value:
                code, word.value = word.value, 0
                raise kernel_error(table, code, name)

    def kernel(self, name: str, arity: int):
        """Kernel ``name`` as a ctypes function of ``arity`` pointers (for profiling)."""
        return ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * arity)(self._tracker[name])


class GraphModule:
    """A runnable model (TVM's ``graph_executor.GraphModule``).  Given a graph executor
    that lives in an RPC session (``remote_lib["default"](remote.cpu())``, an object
    with ``remote_graph`` set), it returns that object, which has the same methods."""

    def __new__(cls, module=None, device=None):
        if getattr(module, "remote_graph", False):
            return module
        return super().__new__(cls)

    def __init__(self, module, device=None):
        if isinstance(module, GraphModule):
            module = module._src
        layout, lib, params = module.layout, module.lib, module.params
        self._src: Any = module
        self.layout, self.lib, self.device = layout, lib, device or cpu()
        self._pool = empty_aligned((max(layout.pool_bytes, 64),), np.uint8)
        self._pool.fill(0)
        self._addr = self._pool.ctypes.data
        self._views = [self._view(e) for e in range(len(layout.entries))]
        self._input_index = {name: e for name, e in layout.inputs}
        self._param_index = {name: e for name, e in layout.params}
        self._unset = set(self._input_index)          # inputs never given: run refuses
        self._formats = dict(layout.formats)
        for name, e in layout.params:
            self._views[e][...] = params[name]

    def _view(self, e: int) -> np.ndarray:
        shape, dtype, off = self.layout.entries[e]
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return self._pool[off:off + n].view(dtype).reshape(shape)

    # ------------------------------------------------------------------ inputs
    def _input_entry(self, key) -> tuple:
        names = [n for n, _ in self.layout.inputs]
        if isinstance(key, int) and not isinstance(key, bool):
            if not 0 <= key < len(names):
                raise RelayInputError(f"set_input: index {key} out of range; the model has "
                                      f"{len(names)} inputs {names}")
            return names[key], self._input_index[names[key]]
        if key in self._param_index:                  # lib.get_params() names: p0, p1, ...
            return key, self._param_index[key]
        if key not in self._input_index:
            raise RelayInputError(f"set_input: unknown input {key!r}; the model's inputs are "
                                  f"{names}")
        return key, self._input_index[key]

    def set_input(self, key=None, value=None, **params) -> None:
        if key is not None:
            name, e = self._input_entry(key)
            a = value.numpy() if isinstance(value, NDArray) else np.asarray(value)
            if e in self._formats:        # an ml_dtypes array (or its storage) as storage
                a = self._storage(name, a, self._formats[e])
            view = self._views[e]
            if a.shape != view.shape or a.dtype != view.dtype:
                raise RelayInputError(f"set_input {name!r}: got shape {a.shape} dtype {a.dtype}, "
                                      f"expected shape {view.shape} dtype {view.dtype}")
            view[...] = a
            self._unset.discard(name)
        for k, v in params.items():
            self.set_input(k, v)

    @staticmethod
    def _storage(name: str, a: np.ndarray, fmt: str) -> np.ndarray:
        try:
            return to_storage(a, fmt)
        except CompilerError as exc:
            raise RelayInputError(f"set_input {name!r}: {exc}") from None

    def _entry_array(self, e: int) -> NDArray:
        """Entry ``e`` copied out, as numpy's narrow dtype if it holds a narrow format."""
        out = array(self._views[e], self.device)
        if e in self._formats:
            out = NDArray(from_storage(out.numpy(), self._formats[e]), self.device)
        return out

    def get_input(self, key) -> NDArray:
        _, e = self._input_entry(key)
        return self._entry_array(e)

    def get_num_inputs(self) -> int:
        return len(self.layout.inputs)

    # ------------------------------------------------------------------ run and outputs
    def run(self, **inputs) -> None:
        if inputs:
            self.set_input(**inputs)
        self._check_inputs_set()
        self.lib.run(self._addr)

    def _check_inputs_set(self) -> None:
        if self._unset:
            raise RelayInputError(f"run: input(s) {sorted(self._unset)} were never set; call "
                                  "set_input(name, value) first")

    def get_num_outputs(self) -> int:
        return len(self.layout.outputs)

    def get_output(self, index: int, out=None) -> NDArray:
        if not 0 <= index < len(self.layout.outputs):
            raise RelayInputError(f"get_output: index {index} out of range; the model has "
                                  f"{len(self.layout.outputs)} outputs")
        e = self.layout.outputs[index]
        if out is not None and not isinstance(out, NDArray):
            raise RelayInputError(f"get_output: out must be an NDArray, got {type(out).__name__}")
        result = self._entry_array(e)
        return out.copyfrom(result) if out is not None else result

    @property
    def module(self) -> GraphModule:
        """TVM's ``GraphModule.module`` (scripts call ``module.module.time_evaluator``)."""
        return self

    def time_evaluator(self, func_name: str = "run", dev=None, number: int = 10,
                       repeat: int = 1, min_repeat_ms: float = 0, **kwargs):
        """TVM's ``module.module.time_evaluator("run", dev, ...)``: a callable returning
        a ProfileResult of seconds per run (``number`` runs a repeat, grown until a
        repeat lasts ``min_repeat_ms``)."""
        if func_name != "run":
            raise RelayInputError(f"time_evaluator: a graph module times 'run', not "
                                  f"{func_name!r}")
        return benchmark_evaluator(self.benchmark, dev, number, repeat, min_repeat_ms)

    def benchmark(self, device=None, func_name: str = "run", repeat: int = 5, number: int = 5,
                  min_repeat_ms: float | None = None, end_to_end: bool = False,
                  **kwargs) -> BenchmarkResult:
        """Seconds per run: ``repeat`` samples, each the mean of ``number`` runs (grown until
        a sample lasts ``min_repeat_ms``); one warm-up run first."""
        if kwargs:
            self.set_input(**kwargs)
        self._check_inputs_set()
        self.lib.run(self._addr)
        results = []
        for _ in range(max(1, repeat)):
            n = max(1, number)
            while True:
                t0 = time.perf_counter()
                for _ in range(n):
                    self.lib.run(self._addr)
                dt = time.perf_counter() - t0
                if not min_repeat_ms or dt * 1e3 >= min_repeat_ms or n >= 1 << 20:
                    break
                n *= 2
            results.append(dt / n)
        return BenchmarkResult(results)


def profile(m: GraphModule, number: int = 10) -> list:
    """Per kernel: calls per run, milliseconds per run and share of the summed time, by
    running every call of the graph on its own ``number`` times (the debug executor's
    view; the sum slightly exceeds a driver run, which keeps caches warm between calls).
    Rows sorted by time, largest first."""
    m._check_inputs_set()
    m.lib.run(m._addr)
    base = m._addr
    offsets = [off for _, _, off in m.layout.entries]
    totals: dict = {}
    counts: dict = {}
    for name, args in m.layout.calls:
        fn = m.lib.kernel(name, len(args))
        ptrs = [base + offsets[e] for e in args]
        fn(*ptrs)
        t0 = time.perf_counter()
        for _ in range(number):
            fn(*ptrs)
        totals[name] = totals.get(name, 0.0) + (time.perf_counter() - t0) / number
        counts[name] = counts.get(name, 0) + 1
    m.lib.check_status()
    whole = sum(totals.values()) or 1.0
    return sorted(({"kernel": k, "calls": counts[k], "ms": round(t * 1e3, 4),
                    "share": round(t / whole, 4)} for k, t in totals.items()),
                  key=lambda r: -r["ms"])


def create(graph_json_str, libmod, device=None) -> GraphModule:
    """TVM's ``graph_executor.create(graph_json, lib, dev)``: ``libmod`` is a built factory."""
    return GraphModule(libmod, device)
