"""Client side of the RPC: sessions on a server, and requests to a tracker.

Role: ``connect(host, port)`` opens an ``RPCSession`` on a server;
``connect_tracker(host, port).request(key)`` asks the tracker for a free server of that
key and opens a session on it (TVM's ``rpc.connect`` / ``rpc.connect_tracker``).  A
session uploads files, loads modules (``RemoteModule``), holds arrays
(``RemoteNDArray``) and calls or times functions remotely.

Invariants: one request in flight per session (a lock serializes them); a request whose
reply does not come within its timeout (plus ``REPLY_MARGIN_SECONDS``) closes the
session and raises ``RPCError`` -- the server's own timer ends the session process;
a session whose process died raises ``RPCConnectionClosed`` on its next request.
"""
from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import weakref

import numpy as np

from ..runtime import ProfileResult, cpu, load_module
from ..runtime.libmeta import encode_meta
from ..runtime.meta import normalize_funcs_meta
from . import protocol as P
from .remote_graph import RemoteGraphFactory

REPLY_MARGIN_SECONDS = 5.0


def _upload_data(data, target) -> tuple:
    """``(bytes, remote file name)`` of an upload: a file's contents under its base name,
    or bytes under ``target``."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        if not target:
            raise P.RPCError("upload(bytes): target (the remote file name) is required")
        return bytes(data), target
    with open(os.fspath(data), "rb") as f:
        blob = f.read()
    return blob, target or os.path.basename(os.fspath(data))


class RPCSession:
    """A session on one RPC server (see the module doc)."""

    def __init__(self, sock: socket.socket, key: str = "", addr=("", 0)):
        self._sock: socket.socket | None = sock
        self._lock = threading.Lock()
        self.key, self.addr = key, tuple(addr)

    def __repr__(self) -> str:
        state = "open" if self._sock is not None else "closed"
        return f"RPCSession({self.addr[0]}:{self.addr[1]}, key={self.key!r}, {state})"

    def request(self, header: dict, blobs=(), timeout: float | None = None) -> tuple:
        """Send one request and return ``(reply, blobs)``; ``RPCError`` with the
        server's message if it failed there."""
        with self._lock:
            sock = self._sock
            if sock is None:
                raise P.RPCError(f"{self!r}: the session is closed")
            sock.settimeout(None if timeout is None else timeout + REPLY_MARGIN_SECONDS)
            try:
                P.send(sock, header, blobs)
                reply, out = P.recv(sock)
            except P.RPCConnectionClosed:
                self._drop()
                raise P.RPCConnectionClosed(
                    f"the RPC session on {self.addr[0]}:{self.addr[1]} ended during "
                    f"{header.get('op')!r} (the kernel crashed or outlived its timeout)"
                ) from None
            except TimeoutError:
                self._drop()
                raise P.RPCError(f"no reply to {header.get('op')!r} from "
                                 f"{self.addr[0]}:{self.addr[1]} within {timeout} s; the "
                                 "session was closed") from None
            except OSError as e:
                self._drop()
                raise P.RPCConnectionClosed(f"the RPC session on {self.addr[0]}:"
                                            f"{self.addr[1]} failed: {e}") from None
        if not reply.get("ok"):
            raise P.RPCError(f"remote {header.get('op')!r} failed: {reply.get('error')}")
        return reply, out

    def _drop(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    @property
    def is_open(self) -> bool:
        return self._sock is not None

    def close(self) -> None:
        if self._sock is not None:
            try:
                self.request({"op": "close"}, timeout=5.0)
            except P.RPCError:
                pass
        with self._lock:
            self._drop()

    def __enter__(self) -> RPCSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ TVM's API
    def cpu(self, dev_id: int = 0):
        """The remote CPU (kernels here always run on the CPU)."""
        return cpu(dev_id)

    def upload(self, data, target: str | None = None) -> None:
        """Copy a file (path) or bytes to the session's directory as ``target``."""
        blob, target = _upload_data(data, target)
        self.request({"op": "upload", "name": target}, [blob])

    def load_module(self, path_or_obj, funcs_meta=None):
        """An uploaded file by name (a RemoteModule, or a RemoteGraphFactory for a
        model exported by ``relay.build``), or object code with its ``funcs_meta``."""
        if funcs_meta is not None:
            meta = encode_meta(normalize_funcs_meta(funcs_meta))
            reply, _ = self.request({"op": "load_module", "meta": meta}, [bytes(path_or_obj)])
        else:
            reply, _ = self.request({"op": "load_module", "name": str(path_or_obj)})
        if reply.get("kind") == "graph_factory":       # a model exported by relay.build
            return RemoteGraphFactory(self, reply["handle"])
        return RemoteModule(self, reply["handle"], reply["entry_name"],
                            tuple(reply["functions"]))

    def array(self, data) -> RemoteNDArray:
        arr = np.ascontiguousarray(data)
        reply, _ = self.request(dict(P.array_header(arr), op="array"), [arr.tobytes()])
        return RemoteNDArray(self, reply["handle"], arr.shape, arr.dtype)

    def empty(self, shape, dtype="float32") -> RemoteNDArray:
        shape = tuple(int(d) for d in shape)
        reply, _ = self.request({"op": "empty", "shape": list(shape),
                                 "dtype": np.dtype(dtype).str})
        return RemoteNDArray(self, reply["handle"], shape, np.dtype(dtype))

    def free(self, *handles) -> None:
        self.request({"op": "free", "handles": [getattr(h, "handle", h) for h in handles]})


class RemoteNDArray:
    """An array living in a session; ``numpy()`` downloads it."""

    def __init__(self, session: RPCSession, handle: int, shape, dtype):
        self.session, self.handle = session, handle
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)

    def __repr__(self) -> str:
        return f"RemoteNDArray(handle={self.handle}, shape={self.shape}, dtype={self.dtype})"

    def numpy(self) -> np.ndarray:
        reply, blobs = self.session.request({"op": "download", "handle": self.handle})
        return P.array_from(reply, blobs[0])

    def copyfrom(self, data) -> RemoteNDArray:
        arr = np.ascontiguousarray(data, dtype=self.dtype)
        self.session.request(dict(P.array_header(arr), op="copy_from", handle=self.handle),
                             [arr.tobytes()])
        return self


def _args(session, args) -> tuple:
    """(wire arguments, [(local array, its temporary RemoteNDArray)]): local arrays (a
    numpy array or an NDArray, as ``nd.array(x, remote.cpu())`` makes) are uploaded for
    the call, as TVM's sessions copy them to the device."""
    out: list = []
    staged: list = []
    for a in args:
        if isinstance(a, RemoteNDArray):
            if a.session is not session:
                raise TypeError(f"remote call argument {a!r} belongs to another session")
            out.append({"h": a.handle})
        elif isinstance(a, (int, float)) and not isinstance(a, bool):
            out.append(a)
        elif isinstance(a, np.ndarray) or hasattr(a, "numpy"):
            tmp = session.array(a if isinstance(a, np.ndarray) else a.numpy())
            staged.append((a, tmp))
            out.append({"h": tmp.handle})
        else:
            raise TypeError(f"remote call argument {a!r}: expected an array or a number")
    return out, staged


def _unstage(session, staged, copy_back: bool) -> None:
    """Copy the call's results into the local arrays (every staged array: the session
    does not say which ones the kernel wrote) and free the temporaries."""
    if copy_back:
        for local, tmp in staged:
            data = tmp.numpy()
            if isinstance(local, np.ndarray):
                local[...] = data
            else:
                local.copyfrom(data)
    if staged:
        session.free(*[tmp for _, tmp in staged])


class RemoteModule:
    """A module loaded in a session."""

    def __init__(self, session: RPCSession, handle: int, entry_name: str, functions):
        self.session, self.handle = session, handle
        self.entry_name, self.function_names = entry_name, tuple(functions)

    def get_function(self, name: str) -> RemoteFunction:
        if name not in self.function_names:
            raise KeyError(f"remote module has no function {name!r}; it has "
                           f"{list(self.function_names)}")
        return RemoteFunction(self, name)

    __getitem__ = get_function

    def __call__(self, *args, timeout: float | None = None) -> None:
        self.get_function(self.entry_name)(*args, timeout=timeout)

    def time_evaluator(self, func_name=None, dev=None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, enable_cpu_cache_flush: bool = False,
                       warmup: bool = True, timeout: float | None = None,
                       single_shot: float | None = None):
        """A callable ``(*remote arrays) -> ProfileResult``, timed on the server; the
        server ends the session if a call outlives ``timeout``.  With ``single_shot``
        seconds, a warm-up call that slow is the only result."""
        name = self.entry_name if func_name is None else func_name
        self.get_function(name)

        def evaluate(*args) -> ProfileResult:
            wire, staged = _args(self.session, args)
            reply, _ = self.session.request(
                {"op": "time", "module": self.handle, "func": name, "args": wire,
                 "number": number, "repeat": repeat, "min_repeat_ms": min_repeat_ms,
                 "flush": bool(enable_cpu_cache_flush), "warmup": bool(warmup),
                 "timeout": timeout, "single_shot": single_shot}, timeout=timeout)
            _unstage(self.session, staged, copy_back=False)
            return ProfileResult(tuple(reply["results"]), int(reply["number"]))
        return evaluate


class RemoteFunction:
    def __init__(self, module: RemoteModule, name: str):
        self.module, self.name = module, name

    def __call__(self, *args, timeout: float | None = None) -> None:
        session = self.module.session
        wire, staged = _args(session, args)
        session.request({"op": "call", "module": self.module.handle, "func": self.name,
                         "args": wire, "timeout": timeout}, timeout=timeout)
        _unstage(session, staged, copy_back=True)


class LocalSession:
    """TVM's ``rpc.LocalSession``: the "remote" is this process (tutorials use it when
    no device is at hand).  Files are uploaded to a temporary directory, removed when
    the session is collected or closed; modules, arrays and devices are this
    process's own, so ``compiler.nd.array(x, session.cpu())`` works as in TVM."""

    def __init__(self):
        self._dir = tempfile.mkdtemp(prefix="rpc-local-")
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._dir, True)

    def cpu(self, dev_id: int = 0):
        return cpu(dev_id)

    def upload(self, data, target: str | None = None) -> None:
        blob, target = _upload_data(data, target)
        if os.path.basename(target) != target or target in ("", ".", ".."):
            raise P.RPCError(f"upload name {target!r}: expected a plain file name")
        with open(os.path.join(self._dir, target), "wb") as f:
            f.write(blob)

    def load_module(self, path):
        """A module uploaded to this session, by file name."""
        full = os.path.join(self._dir, os.path.basename(os.fspath(path)))
        if not os.path.isfile(full):
            raise P.RPCError(f"load_module: {path!r} was not uploaded to this session")
        return load_module(full)

    def close(self) -> None:
        self._cleanup()


def connect(url: str, port: int, key: str = "", session_timeout: float = 0,
            timeout: float = 10.0) -> RPCSession:
    """A session on the server at ``url:port`` (``key``: the server's, if it has one)."""
    sock = P.connect(url, port, timeout, "RPC server")
    sock.settimeout(timeout)
    try:
        P.send(sock, {"op": "hello", "key": key})
        reply, _ = P.recv(sock)
    except (OSError, P.RPCError) as e:
        sock.close()
        raise P.RPCError(f"the RPC server at {url}:{port} did not answer: {e}") from None
    if not reply.get("ok"):
        sock.close()
        raise P.RPCError(f"the RPC server at {url}:{port} refused the session: "
                         f"{reply.get('error')}")
    sock.settimeout(None)
    return RPCSession(sock, reply.get("key", key), (url, port))


class TrackerSession:
    """A connection to a tracker (TVM's ``rpc.TrackerSession``)."""

    def __init__(self, addr):
        self.host, self.port = P.parse_addr(addr, "tracker address")
        self._sock: socket.socket | None = P.connect(self.host, self.port, 10.0,
                                                     "RPC tracker")
        self._lock = threading.Lock()

    def _ask(self, header: dict, timeout: float | None) -> dict:
        with self._lock:
            if self._sock is None:
                raise P.RPCError(f"the tracker session with {self.host}:{self.port} is "
                                 "closed")
            self._sock.settimeout(None if timeout is None else timeout + REPLY_MARGIN_SECONDS)
            try:
                P.send(self._sock, header)
                reply, _ = P.recv(self._sock)
            except (OSError, P.RPCError) as e:
                self._sock.close()
                self._sock = None
                raise P.RPCError(f"the RPC tracker at {self.host}:{self.port} did not "
                                 f"answer {header.get('op')!r}: {e}") from None
        if not reply.get("ok"):
            raise P.RPCError(f"RPC tracker at {self.host}:{self.port}: {reply.get('error')}")
        return reply

    def summary(self) -> dict:
        """``{"servers": [{"key", "addr", "free", "sessions"}], "queue": {key: n}}``."""
        reply = self._ask({"op": "summary"}, 10.0)
        return {"servers": reply["servers"], "queue": reply["queue"]}

    def text_summary(self) -> str:
        info = self.summary()
        counts: dict = {}
        for s in info["servers"]:
            total, free = counts.get(s["key"], (0, 0))
            counts[s["key"]] = (total + 1, free + int(s["free"]))
        lines = ["Queue Status", "-" * 40, f"{'key':20s}{'total':>7s}{'free':>7s}"
                 f"{'pending':>9s}", "-" * 40]
        for key in sorted(set(counts) | set(info["queue"])):
            total, free = counts.get(key, (0, 0))
            lines.append(f"{key:20s}{total:7d}{free:7d}{info['queue'].get(key, 0):9d}")
        return "\n".join(lines)

    def request(self, key: str, priority: int = 1, session_timeout: float = 0,
                max_retry: int = 5, timeout: float | None = None) -> RPCSession:
        """A session on a free server of ``key`` (waits ``timeout`` s; None: forever)."""
        last = None
        for _ in range(max(1, max_retry)):
            reply = self._ask({"op": "request", "key": key, "priority": priority,
                               "timeout": timeout}, timeout)
            host, port = reply["addr"]
            try:
                return connect(host or self.host, int(port), key, session_timeout)
            except P.RPCError as e:
                last = e
        raise P.RPCError(f"could not open a session with key {key!r} after {max_retry} "
                         f"tries: {last}")

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None


def connect_tracker(url: str, port: int) -> TrackerSession:
    return TrackerSession((url, port))
