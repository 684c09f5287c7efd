"""``python -m compiler.exec.rpc_server --tracker HOST:PORT --key KEY``: start an RPC
server (see ``compiler.rpc.server``); it prints its address as JSON, then serves."""
from __future__ import annotations

import argparse
import sys

from ..rpc.server import run_service, serve


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compiler.exec.rpc_server",
                                 description="Run kernels for RPC clients.")
    ap.add_argument("--host", default="0.0.0.0")
    ap.add_argument("--port", type=int, default=9091)
    ap.add_argument("--port-end", type=int, default=9199)
    ap.add_argument("--tracker", default=None, help="the tracker's HOST:PORT")
    ap.add_argument("--key", default="", help="the key this server registers under")
    ap.add_argument("--custom-addr", default=None,
                    help="HOST:PORT the tracker gives clients (default: as seen by it)")
    ap.add_argument("--die-with-parent", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    def serve_fn(announce):
        serve(args.host, args.port, args.port_end, args.key, args.tracker, args.custom_addr,
              announce=announce)
    return run_service("rpc_server", serve_fn, args.die_with_parent)


if __name__ == "__main__":
    sys.exit(main())
