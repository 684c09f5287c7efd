"""TVM's ``auto_scheduler.utils`` helpers for remote devices.

``request_remote(device_key, host, port, priority, timeout)``: a session on a server of
``device_key`` from the tracker at ``host:port`` (``compiler.rpc``).
``check_remote(device_key, host, port, priority, timeout)``: whether such a device
answers within ``timeout`` seconds.
"""
from __future__ import annotations

from compiler import rpc

__all__ = ["request_remote", "check_remote"]


def _tracker_address(host, port) -> tuple:
    """TVM falls back on ``TVM_TRACKER_HOST``/``TVM_TRACKER_PORT``; configuration here is
    explicit, so both must be given."""
    if not host or not port:
        raise rpc.RPCError(f"request_remote: tracker host {host!r} and port {port!r}: give "
                           "both (environment variables are not read)")
    return host, int(port)


def request_remote(device_key: str, host=None, port=None, priority: int = 1,
                   timeout: float = 60) -> rpc.RPCSession:
    """A session on a free server registered as ``device_key``."""
    host, port = _tracker_address(host, port)
    tracker = rpc.connect_tracker(host, port)
    try:
        return tracker.request(device_key, priority=priority, timeout=timeout)
    finally:
        tracker.close()


def check_remote(device_key: str, host=None, port=None, priority: int = 100,
                 timeout: float = 10) -> bool:
    """Whether a server of ``device_key`` gives a session within ``timeout`` seconds."""
    try:
        with request_remote(device_key, host, port, priority, timeout) as remote:
            remote.request({"op": "ping"}, timeout=timeout)
        return True
    except rpc.RPCError:
        return False
