"""Wire format shared by the RPC tracker, server and client.

A message is ``MAGIC`` (4 bytes), the length of a JSON header (4 bytes, big-endian),
the header (a JSON object, UTF-8), then one raw byte string per entry of the header's
``"blobs"`` list of lengths.  Object code and array data travel as blobs; everything
else is JSON.  Nothing is ever unpickled, so a peer can at worst send a message that
fails to decode, which is an ``RPCError`` naming what was wrong.

Invariants: ``send`` writes a whole message or raises; ``recv`` returns a whole message,
raises ``RPCConnectionClosed`` at a clean end of stream before a message starts, and
``RPCError`` on anything malformed (wrong magic, oversized or non-object header).
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import struct

import numpy as np

from ..errors import CompilerError

MAGIC = b"TASR"
_HEAD = struct.Struct(">4sI")
MAX_HEADER_BYTES = 1 << 20
MAX_BLOB_BYTES = 1 << 34
_PR_SET_PDEATHSIG = 1                 # linux/prctl.h


class RPCError(CompilerError):
    """An RPC peer is unreachable, misbehaved, or reported an error."""


class RPCConnectionClosed(RPCError):
    """The peer closed the connection (for a session: its process ended)."""


def send(sock: socket.socket, header: dict, blobs=()) -> None:
    """Write one message: ``header`` (JSON-serializable dict) and raw ``blobs``."""
    blobs = [bytes(b) if not isinstance(b, (bytes, memoryview)) else b for b in blobs]
    doc = dict(header, blobs=[len(b) for b in blobs])
    text = json.dumps(doc, separators=(",", ":")).encode()
    if len(text) > MAX_HEADER_BYTES:
        raise RPCError(f"RPC header of {len(text)} bytes is over the limit of "
                       f"{MAX_HEADER_BYTES}: send large data as blobs")
    sock.sendall(_HEAD.pack(MAGIC, len(text)) + text)
    for b in blobs:
        sock.sendall(b)


def _read(sock: socket.socket, n: int, at_start: bool = False) -> bytes:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            if at_start and got == 0:
                raise RPCConnectionClosed("the RPC peer closed the connection")
            raise RPCConnectionClosed(f"the RPC peer closed the connection in the middle "
                                      f"of a message ({got} of {n} bytes read)")
        got += k
    return bytes(buf)


def recv(sock: socket.socket) -> tuple:
    """Read one message: ``(header dict, [blob bytes, ...])``."""
    magic, size = _HEAD.unpack(_read(sock, _HEAD.size, at_start=True))
    if magic != MAGIC:
        raise RPCError(f"RPC message starts with {magic!r}, expected {MAGIC!r} (is the "
                       "peer an RPC server or tracker of this project?)")
    if size > MAX_HEADER_BYTES:
        raise RPCError(f"RPC header of {size} bytes is over the limit of {MAX_HEADER_BYTES}")
    try:
        header = json.loads(_read(sock, size))
    except (ValueError, UnicodeDecodeError) as e:
        raise RPCError(f"RPC header is not valid JSON ({e})") from None
    lengths = header.get("blobs", []) if isinstance(header, dict) else None
    if not isinstance(lengths, list) or not all(
            isinstance(n, int) and 0 <= n <= MAX_BLOB_BYTES for n in lengths):
        raise RPCError(f"RPC header {str(header)[:200]!r}: expected an object whose "
                       "'blobs' is a list of byte counts")
    return header, [_read(sock, n) for n in lengths]


def array_header(arr: np.ndarray) -> dict:
    """The JSON description of an array sent as a blob (C order)."""
    return {"dtype": arr.dtype.str, "shape": list(arr.shape)}


def array_from(desc: dict, blob: bytes) -> np.ndarray:
    """A writable C-order array from ``array_header``'s description and its bytes."""
    try:
        dtype = np.dtype(desc["dtype"])
        shape = tuple(int(d) for d in desc["shape"])
    except (KeyError, TypeError, ValueError) as e:
        raise RPCError(f"array description {desc!r}: expected 'dtype' and 'shape' "
                       f"({e})") from None
    if dtype.hasobject:
        raise RPCError(f"array dtype {dtype}: object arrays are not accepted")
    if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != len(blob):
        raise RPCError(f"array {shape} {dtype}: expected "
                       f"{int(np.prod(shape)) * dtype.itemsize} bytes, got {len(blob)}")
    return np.frombuffer(blob, dtype=dtype).reshape(shape).copy()


def parse_addr(addr, what: str) -> tuple:
    """``(host, port)`` from a tuple or ``"host:port"`` text."""
    if isinstance(addr, str):
        host, sep, port = addr.rpartition(":")
        if not sep or not port.isdigit():
            raise RPCError(f"{what} {addr!r}: expected 'host:port'")
        return host, int(port)
    try:
        host, port = addr
    except (TypeError, ValueError):
        raise RPCError(f"{what} {addr!r}: expected (host, port) or 'host:port'") from None
    if not isinstance(host, str) or isinstance(port, bool) or not isinstance(port, int):
        raise RPCError(f"{what} {addr!r}: expected (host: str, port: int)")
    return host, port


def bind_free_port(host: str, port: int, port_end: int) -> socket.socket:
    """A listening socket on the first free port in ``[port, port_end)``."""
    if not 0 < port < port_end <= 65536:
        raise RPCError(f"port range [{port}, {port_end}): expected 0 < port < port_end "
                       "<= 65536")
    for p in range(port, port_end):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((host, p))
        except OSError:
            sock.close()
            continue
        sock.listen(16)
        return sock
    raise RPCError(f"no free port on {host} in [{port}, {port_end})")


def connect(host: str, port: int, timeout: float | None, what: str) -> socket.socket:
    """A connected TCP socket (``RPCError`` naming ``what`` if nobody listens)."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as e:
        raise RPCError(f"cannot connect to the {what} at {host}:{port}: {e}") from None
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(None)
    return sock


def die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (no-op elsewhere), so a
    tracker or server started for a tuning run never outlives it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:
        os._exit(0)
