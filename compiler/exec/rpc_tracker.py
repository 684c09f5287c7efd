"""``python -m compiler.exec.rpc_tracker --port 9190``: start an RPC tracker (see
``compiler.rpc.tracker``); it prints its address as JSON, then serves."""
from __future__ import annotations

import argparse
import sys

from ..rpc.server import run_service
from ..rpc.tracker import serve_tracker


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compiler.exec.rpc_tracker",
                                 description="Hand free RPC servers to clients, by key.")
    ap.add_argument("--host", default="0.0.0.0")
    ap.add_argument("--port", type=int, default=9190)
    ap.add_argument("--port-end", type=int, default=9199)
    ap.add_argument("--die-with-parent", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    def serve_fn(announce):
        serve_tracker(args.host, args.port, args.port_end, announce=announce)
    return run_service("rpc_tracker", serve_fn, args.die_with_parent)


if __name__ == "__main__":
    sys.exit(main())
