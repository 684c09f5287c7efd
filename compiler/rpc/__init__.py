"""Remote measurement (TVM's ``tvm.rpc``): a tracker, servers and client sessions.

``Tracker`` and ``Server`` start their loops in fresh interpreters; ``connect`` opens a
session on a server, ``connect_tracker(...).request(key)`` one on any free server
registered under ``key``.  The wire format is JSON headers with raw byte blobs
(``protocol``): nothing is unpickled.  Kernels run in a per-session process of the
server, so a crash or a hang ends that session only.
"""
from .client import (
                     LocalSession,
                     RemoteFunction,
                     RemoteModule,
                     RemoteNDArray,
                     RPCSession,
                     TrackerSession,
                     connect,
                     connect_tracker,
)
from .protocol import RPCConnectionClosed, RPCError
from .server import Server
from .tracker import Tracker

__all__ = ["LocalSession", "RemoteFunction", "RemoteModule", "RemoteNDArray", "RPCSession",
           "TrackerSession", "connect", "connect_tracker", "RPCConnectionClosed", "RPCError",
           "Server", "Tracker"]
