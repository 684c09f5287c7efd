"""The RPC server: runs kernels for remote clients, one session at a time.

Role: ``serve(...)`` listens on the first free port of a range, optionally registers
with a tracker under a key, and for every accepted client forks a session process
(``session.run_session``) and waits for it to end before accepting the next; a session
that crashes or is killed by its timer ends only that process.  ``Server`` starts
``serve`` in a fresh interpreter (``python -m compiler.exec.rpc_server``), as TVM's
``rpc.Server`` does, and learns the bound port from its first line of output.

Protocol with a client: the client's first message is ``{"op": "hello", "key": ...}``;
a server with a key refuses a different non-empty key.  With a tracker: the server
sends ``register`` once, then ``free`` after every session; the tracker sends
``expect`` when it hands the server to a client, and a server whose client does not
arrive within ``expect``'s timeout reports itself free again.

Invariants: the parent process never loads or runs a kernel (so forking it is safe and
cheap); session processes die with the server (Linux).
"""
from __future__ import annotations

import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from . import protocol as P
from .session import run_session

_START_TIMEOUT = 60.0


def _register(tracker_addr, key: str, custom_addr):
    host, port = P.parse_addr(tracker_addr, "tracker address")
    sock = P.connect(host, port, 10.0, "RPC tracker")
    P.send(sock, {"op": "register", "key": key, "port": custom_addr[1],
                  "host": custom_addr[0]})
    return sock


def _handshake(conn: socket.socket, key: str) -> bool:
    conn.settimeout(10.0)
    try:
        hello, _ = P.recv(conn)
        want = hello.get("key", "")
        if hello.get("op") != "hello" or (key and want and want != key):
            P.send(conn, {"ok": False, "error": f"this RPC server has key {key!r}, the "
                          f"client asked for {want!r}"})
            return False
        P.send(conn, {"ok": True, "key": key})
    except (P.RPCError, OSError):
        return False
    conn.settimeout(None)
    return True


def _run_forked(conn: socket.socket, closing: list) -> None:
    """Serve one session in a child process and wait for it to end.

    The parent makes and removes the session's directory: a session killed by a signal
    (a crashing kernel) never reaches its own cleanup."""
    workdir = tempfile.mkdtemp(prefix="rpc-session-")
    pid = os.fork()
    if pid == 0:                                    # the session process
        code = 0
        try:
            for s in closing:
                s.close()
            P.die_with_parent()
            run_session(conn, workdir)
        except BaseException:                       # noqa: BLE001 - a child must not return
            code = 1
        os._exit(code)
    conn.close()
    try:
        os.waitpid(pid, 0)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def serve(host: str = "0.0.0.0", port: int = 9091, port_end: int = 9199, key: str = "",
          tracker_addr=None, custom_addr=None, announce=None) -> None:
    """Serve forever (see the module doc); ``announce(text)`` gets the bound address as
    JSON once the socket listens."""
    listen = P.bind_free_port(host, port, port_end)
    bound = listen.getsockname()[1]
    if announce is not None:
        announce(json.dumps({"host": host, "port": bound}))
    tracker = None
    if tracker_addr is not None:
        own = P.parse_addr(custom_addr, "custom_addr") if custom_addr else ("", bound)
        tracker = _register(tracker_addr, key, own)
    expect_until = None
    while True:
        ready, _, _ = select.select([listen] + ([tracker] if tracker else []), [], [], 1.0)
        if tracker is not None and tracker in ready:
            try:
                msg, _ = P.recv(tracker)
            except (P.RPCError, OSError):
                raise SystemExit("rpc_server: the tracker closed the connection") from None
            if msg.get("op") == "expect":
                expect_until = time.monotonic() + float(msg.get("timeout", 30.0))
        if listen in ready:
            conn, _ = listen.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if _handshake(conn, key):
                _run_forked(conn, [listen] + ([tracker] if tracker else []))
            else:
                conn.close()
            expect_until = time.monotonic() if tracker is not None else None
        if tracker is not None and expect_until is not None \
                and time.monotonic() >= expect_until:
            expect_until = None
            P.send(tracker, {"op": "free"})


def launch(module: str, args: list, what: str, silent: bool):
    """Start ``python -m module args`` and read its JSON address line:
    ``(process, host, port, stderr file or None)``.  Not ``silent``: the process writes
    its errors to this process's stderr; ``silent``: to a file, whose last lines a
    failed start reports."""
    err = tempfile.TemporaryFile() if silent else None
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.Popen([sys.executable, "-m", module] + args + ["--die-with-parent"],
                            stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                            env=env, cwd=tempfile.gettempdir())
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], _START_TIMEOUT)
    line = proc.stdout.readline() if ready else b""
    try:
        addr = json.loads(line)
        return proc, addr["host"], int(addr["port"]), err
    except (ValueError, KeyError, TypeError):
        proc.kill()
        proc.wait()
        tail = ["its errors are above"]
        if err is not None:
            err.seek(0)
            tail = err.read().decode(errors="replace").strip().splitlines()[-5:]
        raise P.RPCError(f"the {what} did not start (exit code {proc.returncode}): "
                         + (" | ".join(tail) or "no output")) from None


def run_service(name: str, serve_fn, die_with_parent: bool) -> int:
    """The body of a ``compiler.exec`` entry point: serve until killed, printing the
    address (JSON) first; an ``RPCError`` is reported on stderr with exit code 1."""
    if die_with_parent:
        P.die_with_parent()

    def announce(text: str) -> None:
        print(text, flush=True)
        if die_with_parent:
            # started by ``launch``, which reads this one line and then no more: later
            # output would fill the pipe and block the service
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.close(null)
    try:
        serve_fn(announce)
    except P.RPCError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


class ServiceProcess:
    """A tracker or server running in a process this one started."""

    proc = None

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def __del__(self):
        try:
            self.terminate()
        except Exception:   # noqa: BLE001 - interpreter shutdown
            pass


class Server(ServiceProcess):
    """TVM's ``rpc.Server``: an RPC server in its own process (see the module doc).

    ``port`` is the first port tried, ``port_end`` bounds the range; with
    ``tracker_addr`` the server registers under ``key``.  ``terminate()`` stops it."""

    def __init__(self, host: str = "0.0.0.0", port: int = 9091, port_end: int = 9199,
                 tracker_addr=None, key: str = "", custom_addr=None, silent: bool = False):
        args = ["--host", host, "--port", str(port), "--port-end", str(port_end),
                "--key", key]
        if tracker_addr is not None:
            th, tp = P.parse_addr(tracker_addr, "tracker_addr")
            args += ["--tracker", f"{th}:{tp}"]
        if custom_addr is not None:
            ch, cp = P.parse_addr(custom_addr, "custom_addr")
            args += ["--custom-addr", f"{ch}:{cp}"]
        self.proc, self.host, self.port, self._err = launch(
            "compiler.exec.rpc_server", args, "RPC server", silent)
        self.key = key
