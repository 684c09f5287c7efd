"""A model loaded in an RPC session and run there (TVM's remote graph executor).

Role: ``remote.load_module("net.tar")`` of a library exported from ``relay.build`` gives a
``RemoteGraphFactory``; ``factory["default"](remote.cpu())`` makes a graph executor in
the session, a ``RemoteGraphModule``, which ``graph_executor.GraphModule(...)`` returns as
it is.  Its methods are the local GraphModule's: ``set_input`` (arrays are sent),
``run``, ``get_output``/``get_input`` (copied back as local NDArrays), ``benchmark`` and
``module.time_evaluator("run", dev, ...)`` (timed on the server).

Invariants: the model's own errors (an unknown input, a wrong shape, an input never
set) come back as ``RPCError`` naming them and the session lives on; a crash or a run
that outlives its ``timeout`` ends the session (``RPCConnectionClosed``).
"""
from __future__ import annotations

import numpy as np

from ..runtime.ndarray import NDArray, array
from ..runtime.timer import BenchmarkResult, benchmark_evaluator
from . import protocol as P

__all__ = ["RemoteGraphFactory", "RemoteGraphModule"]


def _local(value) -> np.ndarray:
    return np.ascontiguousarray(value.numpy() if hasattr(value, "numpy") else value)


class RemoteGraphFactory:
    """A model loaded in a session: ``factory["default"](dev)`` makes an executor."""

    entry_name = "default"
    function_names = ("default",)

    def __init__(self, session, handle: int):
        self.session, self.handle = session, handle

    def __repr__(self) -> str:
        return f"RemoteGraphFactory(handle={self.handle}, {self.session!r})"

    def __getitem__(self, key):
        if key != "default":
            raise KeyError(f"a remote model has only 'default', not {key!r}")
        return self._create

    get_function = __getitem__

    def _create(self, dev=None) -> RemoteGraphModule:
        reply, _ = self.session.request({"op": "graph_create", "module": self.handle})
        return RemoteGraphModule(self.session, reply["handle"], reply["inputs"],
                                 int(reply["num_outputs"]), dev)


class RemoteGraphModule:
    """A graph executor in a session (see the module doc)."""

    remote_graph = True       # graph_executor.GraphModule(x) returns x itself

    def __init__(self, session, handle: int, inputs, num_outputs: int, device=None):
        self.session, self.handle, self.device = session, handle, device
        self.input_names = tuple(name for name, _, _ in inputs)
        self.num_outputs = num_outputs

    def __repr__(self) -> str:
        return (f"RemoteGraphModule(inputs={list(self.input_names)}, "
                f"outputs={self.num_outputs}, {self.session!r})")

    @property
    def module(self) -> RemoteGraphModule:
        return self

    def _key(self, key) -> dict:
        return {"index": key} if isinstance(key, int) and not isinstance(key, bool) else \
            {"name": key}

    def set_input(self, key=None, value=None, **params) -> None:
        if key is not None:
            arr = _local(value)
            self.session.request(dict(P.array_header(arr), op="graph_set_input",
                                      graph=self.handle, **self._key(key)), [arr.tobytes()])
        for k, v in params.items():
            self.set_input(k, v)

    def run(self, timeout: float | None = None, **inputs) -> None:
        if inputs:
            self.set_input(**inputs)
        self.session.request({"op": "graph_run", "graph": self.handle, "timeout": timeout},
                             timeout=timeout)

    def _array(self, op: str, key: dict) -> NDArray:
        reply, blobs = self.session.request(dict(key, op=op, graph=self.handle))
        return array(P.array_from(reply, blobs[0]))

    def get_output(self, index: int, out=None) -> NDArray:
        result = self._array("graph_get_output", {"index": int(index)})
        return out.copyfrom(result) if out is not None else result

    def get_input(self, key) -> NDArray:
        return self._array("graph_get_input", self._key(key))

    def get_num_outputs(self) -> int:
        return self.num_outputs

    def get_num_inputs(self) -> int:
        return len(self.input_names)

    def benchmark(self, device=None, func_name: str = "run", repeat: int = 5, number: int = 5,
                  min_repeat_ms: float | None = None, end_to_end: bool = False,
                  timeout: float | None = None, **kwargs) -> BenchmarkResult:
        """Seconds per run, timed on the server (as the local GraphModule's)."""
        if kwargs:
            self.set_input(**kwargs)
        reply, _ = self.session.request(
            {"op": "graph_benchmark", "graph": self.handle, "repeat": repeat,
             "number": number, "min_repeat_ms": min_repeat_ms, "timeout": timeout},
            timeout=timeout)
        return BenchmarkResult(list(reply["results"]))

    def time_evaluator(self, func_name: str = "run", dev=None, number: int = 10,
                       repeat: int = 1, min_repeat_ms: float = 0, **kwargs):
        """TVM's ``module.module.time_evaluator("run", dev, ...)`` on the server."""
        if func_name != "run":
            raise P.RPCError(f"time_evaluator: a remote graph module times 'run', not "
                             f"{func_name!r}")
        return benchmark_evaluator(self.benchmark, dev, number, repeat, min_repeat_ms)
