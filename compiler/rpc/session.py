"""The server side of one RPC session: a table of handles and the requests on them.

Role: ``run_session(sock, workdir)`` answers requests on one client connection until the
client closes it.  It runs in a process of its own (the server forks one per session),
so a kernel that crashes ends only this process, and the client sees the connection
close.  A request with a ``timeout`` arms a real-time timer whose default action kills
the process: a hanging kernel cannot be interrupted from Python, only ended.

Requests (``op``) and replies (``{"ok": true, ...}`` or ``{"ok": false, "error": ...}``):
``ping``; ``upload`` (file ``name``, one blob) into the session's directory;
``load_module`` (an uploaded ``name``, or object code as a blob with ``meta``: the JSON
of ``libmeta.encode_meta``) -> module ``handle``, ``entry_name``, ``functions``;
``array`` (``dtype``, ``shape``, one blob) / ``empty`` -> array ``handle``; ``download``;
``copy_from``; ``zero``; ``free``; ``call`` and ``time`` (module, ``func``, ``args``:
``{"h": handle}`` for arrays, plain numbers for scalars) -> ``results``, ``number``;
with ``single_shot`` seconds, ``time`` times its warm-up call and, when that call is as
slow, replies with it alone (``"single_shot": true``).

A loaded model (a graph executor factory, ``kind`` "graph_factory") makes graph
executors: ``graph_create`` (``module``) -> ``handle``, ``inputs`` (name, shape, dtype)
and ``num_outputs``; on one (``graph``): ``graph_set_input`` (``name`` or ``index``, one
array blob), ``graph_run``, ``graph_get_output`` / ``graph_get_input`` -> one array blob,
``graph_benchmark`` (``repeat``, ``number``, ``min_repeat_ms``) -> ``results``.  The
model's own checks (shapes, unset inputs) come back as errors; the session lives on.

Invariants: handles are never reused within a session; arrays are 64-byte aligned; the
session directory is removed when the session ends.
"""
from __future__ import annotations

import os
import shutil
import signal
import time
import traceback

import numpy as np

from ..runtime import Module, empty_aligned, load_module
from ..runtime.libmeta import decode_meta
from . import protocol as P


class _GraphOps:
    """The requests on graph executors (mixed into the session: see the module doc)."""

    objects: dict

    def keep(self, obj) -> int:
        raise NotImplementedError

    def _graph(self, req):
        g = self.objects.get(req.get("graph"))
        if g is None or not _is_graph(g):
            raise P.RPCError(f"handle {req.get('graph')!r} is not a live graph executor of "
                             "this session")
        return g

    def op_graph_create(self, req, blobs):
        factory = self.objects.get(req.get("module"))
        if factory is None or not _is_graph_factory(factory):
            raise P.RPCError(f"handle {req.get('module')!r} is not a loaded model of this "
                             "session")
        g = factory["default"]()
        entries = g.layout.entries
        inputs = [[name, list(entries[e][0]), str(entries[e][1])] for name, e in g.layout.inputs]
        return {"handle": self.keep(g), "inputs": inputs,
                "num_outputs": g.get_num_outputs()}, []

    def op_graph_set_input(self, req, blobs):
        key = req.get("index", req.get("name"))
        self._graph(req).set_input(key, P.array_from(req, blobs[0] if blobs else b""))
        return {}, []

    def op_graph_run(self, req, blobs):
        g = self._graph(req)
        with _deadline(req.get("timeout")):
            g.run()
        return {}, []

    def _send_array(self, arr):
        data = np.ascontiguousarray(arr.numpy())
        return P.array_header(data), [data.tobytes()]

    def op_graph_get_output(self, req, blobs):
        return self._send_array(self._graph(req).get_output(int(req.get("index", 0))))

    def op_graph_get_input(self, req, blobs):
        return self._send_array(self._graph(req).get_input(req.get("index", req.get("name"))))

    def op_graph_benchmark(self, req, blobs):
        g = self._graph(req)
        with _deadline(req.get("timeout")):
            res = g.benchmark(repeat=int(req.get("repeat", 5)), number=int(req.get("number", 5)),
                              min_repeat_ms=req.get("min_repeat_ms"))
        return {"results": list(res.results)}, []


def _is_graph_factory(obj) -> bool:
    """A loaded model (relay's factory module: its loader is registered by relay)."""
    return hasattr(obj, "get_graph_json") and hasattr(obj, "__getitem__")


def _is_graph(obj) -> bool:
    return hasattr(obj, "layout") and hasattr(obj, "set_input") and hasattr(obj, "run")


class _Session(_GraphOps):
    def __init__(self, workdir: str):
        self.workdir = workdir
        self.objects: dict = {}
        self.next_handle = 1

    def keep(self, obj) -> int:
        h = self.next_handle
        self.next_handle += 1
        self.objects[h] = obj
        return h

    def get(self, h, kind):
        obj = self.objects.get(h)
        if obj is None or not isinstance(obj, kind):
            raise P.RPCError(f"handle {h!r} is not a live {kind.__name__} of this session")
        return obj

    # ------------------------------------------------------------------ requests
    def op_ping(self, req, blobs):
        return {"pid": os.getpid()}, []

    def op_upload(self, req, blobs):
        name = req.get("name")
        if not isinstance(name, str) or not name or os.path.basename(name) != name \
                or name in (".", ".."):
            raise P.RPCError(f"upload name {name!r}: expected a plain file name")
        with open(os.path.join(self.workdir, name), "wb") as f:
            f.write(blobs[0] if blobs else b"")
        return {}, []

    def op_load_module(self, req, blobs):
        if "meta" in req:
            if len(blobs) != 1:
                raise P.RPCError("load_module with 'meta' needs the object code as one blob")
            mod = load_module(blobs[0], decode_meta(req["meta"], "load_module meta"))
        else:
            name = req.get("name")
            path = os.path.join(self.workdir, os.path.basename(str(name)))
            if not os.path.isfile(path):
                raise P.RPCError(f"load_module: {name!r} was not uploaded to this session")
            mod = load_module(path)
        if _is_graph_factory(mod):
            return {"handle": self.keep(mod), "kind": "graph_factory", "entry_name": "default",
                    "functions": ["default"]}, []
        return {"handle": self.keep(mod), "kind": "module", "entry_name": mod.entry_name,
                "functions": list(mod.function_names)}, []

    def op_array(self, req, blobs):
        data = P.array_from(req, blobs[0] if blobs else b"")
        arr = empty_aligned(data.shape, data.dtype)
        arr[...] = data
        return {"handle": self.keep(arr)}, []

    def op_empty(self, req, blobs):
        arr = empty_aligned(tuple(int(d) for d in req["shape"]), str(req["dtype"]))
        arr.fill(0)
        return {"handle": self.keep(arr)}, []

    def op_download(self, req, blobs):
        arr = self.get(req.get("handle"), np.ndarray)
        return P.array_header(arr), [arr.tobytes()]

    def op_copy_from(self, req, blobs):
        arr = self.get(req.get("handle"), np.ndarray)
        data = P.array_from(req, blobs[0] if blobs else b"")
        if data.shape != arr.shape or data.dtype != arr.dtype:
            raise P.RPCError(f"copy_from: array {handle_text(req)} is {arr.shape} {arr.dtype}, "
                             f"the data {data.shape} {data.dtype}")
        arr[...] = data
        return {}, []

    def op_zero(self, req, blobs):
        for h in req.get("handles", []):
            self.get(h, np.ndarray).fill(0)
        return {}, []

    def op_free(self, req, blobs):
        for h in req.get("handles", []):
            self.objects.pop(h, None)
        return {}, []

    def _func_and_args(self, req):
        mod = self.get(req.get("module"), Module)
        func = mod.get_function(req.get("func") or mod.entry_name)
        args = [self.get(a["h"], np.ndarray) if isinstance(a, dict) else a
                for a in req.get("args", [])]
        return mod, func, args

    def op_call(self, req, blobs):
        _mod, func, args = self._func_and_args(req)
        with _deadline(req.get("timeout")):
            func(*args)
        return {}, []

    def op_time(self, req, blobs):
        mod, func, args = self._func_and_args(req)
        single_shot = req.get("single_shot")
        ev = mod.time_evaluator(func.meta.name, number=int(req.get("number", 10)),
                                repeat=int(req.get("repeat", 1)),
                                min_repeat_ms=req.get("min_repeat_ms", 0),
                                enable_cpu_cache_flush=bool(req.get("flush", False)),
                                warmup=bool(req.get("warmup", True)) and single_shot is None)
        with _deadline(req.get("timeout")):
            if single_shot is not None:
                # the warm-up call, timed: a call this slow is the measurement
                t0 = time.perf_counter()
                func(*args)
                first = time.perf_counter() - t0
                if first >= float(single_shot):
                    return {"results": [first], "number": 1, "single_shot": True}, []
            res = ev(*args)
        return {"results": list(res.results), "number": res.number, "single_shot": False}, []


def handle_text(req) -> str:
    return f"handle {req.get('handle')!r}"


class _deadline:
    """Kill this process if the block outlives ``seconds`` (None or <= 0: no limit)."""

    def __init__(self, seconds):
        self.seconds = float(seconds) if seconds else 0.0

    def __enter__(self):
        if self.seconds > 0:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        if self.seconds > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)


def run_session(sock, workdir: str) -> None:
    """Answer requests on ``sock`` until the client closes it; then remove ``workdir``."""
    session = _Session(workdir)
    try:
        while True:
            try:
                req, blobs = P.recv(sock)
            except (P.RPCConnectionClosed, OSError):
                return
            op = req.get("op")
            handler = getattr(session, f"op_{op}", None) if isinstance(op, str) else None
            if op == "close":
                P.send(sock, {"ok": True})
                return
            try:
                if handler is None:
                    raise P.RPCError(f"unknown RPC request {op!r}")
                reply, out = handler(req, blobs)
                P.send(sock, dict(reply, ok=True), out)
            except Exception as e:  # noqa: BLE001 - any failure of a request is its reply;
                # a crash (signal) still ends the session process, as it must
                P.send(sock, {"ok": False, "error": f"{type(e).__name__}: {e}",
                              "trace": traceback.format_exc(limit=4)})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
