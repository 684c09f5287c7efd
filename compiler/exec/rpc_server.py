"""``python -m compiler.exec.rpc_server --tracker HOST:PORT --key KEY``: start an RPC
server (see ``compiler.rpc.server``); it prints its address as JSON, then serves."""
from __future__ import annotations

import argparse
import sys

from ..rpc import protocol
from ..rpc.server import serve


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
    if args.die_with_parent:
        protocol.die_with_parent()
    try:
        serve(args.host, args.port, args.port_end, args.key, args.tracker, args.custom_addr,
              announce=lambda text: print(text, flush=True))
    except protocol.RPCError as e:
        print(f"rpc_server: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
