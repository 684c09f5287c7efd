"""The RPC tracker: hands free servers, by key, to the clients that request them.

Role: servers register under a key and stay connected; a client's ``request`` waits
until a server of that key is free, marks it busy and answers with its address (the
server is told to ``expect`` a client).  The server reports ``free`` when the session
ends.  ``serve_tracker`` is the blocking loop (one thread per connection); ``Tracker``
starts it in a fresh interpreter (``python -m compiler.exec.rpc_tracker``), as TVM's
``rpc.Tracker`` does.

Invariants: a server is handed to one client at a time; among waiting requests for a
key, the highest ``priority`` is served first, then the oldest; a server whose
connection closes is forgotten (a request never gets a dead server's address).
"""
from __future__ import annotations

import itertools
import json
import socket
import threading
import time

from . import protocol as P
from .server import ServiceProcess, launch

_EXPECT_SECONDS = 30.0


class _State:
    def __init__(self):
        self.cond = threading.Condition()
        self.servers: dict = {}      # id -> dict(key, host, port, free, conn, served)
        self.waiting: list = []      # (-priority, seq, key) of requests being waited on
        self.seq = itertools.count()

    def summary(self) -> dict:
        with self.cond:
            servers = [{"key": s["key"], "addr": [s["host"], s["port"]], "free": s["free"],
                        "sessions": s["served"]} for s in self.servers.values()]
            queue: dict = {}
            for _p, _s, key in self.waiting:
                queue[key] = queue.get(key, 0) + 1
        return {"servers": servers, "queue": queue}

    def take(self, key: str, priority: int, timeout: float | None):
        """Wait for a free server of ``key``; None on timeout."""
        ticket = (-priority, next(self.seq), key)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.cond:
            self.waiting.append(ticket)
            try:
                while True:
                    first = min(t for t in self.waiting if t[2] == key)
                    free = [s for s in self.servers.values() if s["key"] == key and s["free"]]
                    if first == ticket and free:
                        server = min(free, key=lambda s: s["served"])
                        server["free"], server["served"] = False, server["served"] + 1
                        self.cond.notify_all()
                        return server
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return None
                    self.cond.wait(left)
            finally:
                self.waiting.remove(ticket)
                self.cond.notify_all()


def _serve_server(state: _State, conn, peer, msg) -> None:
    host = msg.get("host") or peer[0]
    entry = {"key": str(msg.get("key", "")), "host": host, "port": int(msg["port"]),
             "free": True, "conn": conn, "served": 0, "lock": threading.Lock()}
    with state.cond:
        state.servers[id(entry)] = entry
        state.cond.notify_all()
    try:
        while True:
            msg, _ = P.recv(conn)
            if msg.get("op") == "free":
                with state.cond:
                    entry["free"] = True
                    state.cond.notify_all()
    except (P.RPCError, OSError):
        pass
    finally:
        with state.cond:
            state.servers.pop(id(entry), None)
            state.cond.notify_all()


def _serve_client(state: _State, conn, msg) -> None:
    while True:
        op = msg.get("op")
        if op == "summary":
            P.send(conn, dict(state.summary(), ok=True))
        elif op == "request":
            timeout = msg.get("timeout")
            server = state.take(str(msg.get("key", "")), int(msg.get("priority", 1)),
                                None if timeout is None else float(timeout))
            if server is None:
                P.send(conn, {"ok": False, "error": f"no free RPC server with key "
                              f"{msg.get('key')!r} within {timeout} s"})
            else:
                with server["lock"]:
                    try:
                        P.send(server["conn"], {"op": "expect", "timeout": _EXPECT_SECONDS})
                    except OSError:
                        pass
                P.send(conn, {"ok": True, "addr": [server["host"], server["port"]],
                              "key": server["key"]})
        else:
            P.send(conn, {"ok": False, "error": f"unknown tracker request {op!r}"})
        msg, _ = P.recv(conn)


def _serve_conn(state: _State, conn, peer) -> None:
    try:
        msg, _ = P.recv(conn)
        if msg.get("op") == "register":
            _serve_server(state, conn, peer, msg)
        else:
            _serve_client(state, conn, msg)
    except (P.RPCError, OSError, ValueError, TypeError):
        pass
    finally:
        conn.close()


def serve_tracker(host: str = "0.0.0.0", port: int = 9190, port_end: int = 9199,
                  announce=None) -> None:
    """Serve forever; ``announce(text)`` gets the bound address as JSON."""
    listen = P.bind_free_port(host, port, port_end)
    if announce is not None:
        announce(json.dumps({"host": host, "port": listen.getsockname()[1]}))
    state = _State()
    while True:
        conn, peer = listen.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_serve_conn, args=(state, conn, peer), daemon=True).start()


class Tracker(ServiceProcess):
    """TVM's ``rpc.Tracker``: a tracker in its own process; ``terminate()`` stops it."""

    def __init__(self, host: str = "0.0.0.0", port: int = 9190, port_end: int = 9199,
                 silent: bool = False):
        self.proc, self.host, self.port, self._err = launch(
            "compiler.exec.rpc_tracker",
            ["--host", host, "--port", str(port), "--port-end", str(port_end)],
            "RPC tracker", silent)
