"""``python -m compiler.exec.query_rpc_tracker --port 9190``: print the tracker's
servers and pending requests by key."""
from __future__ import annotations

import argparse
import sys

from ..rpc import RPCError, connect_tracker


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compiler.exec.query_rpc_tracker",
                                 description="Show an RPC tracker's queue status.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9190)
    args = ap.parse_args(argv)
    try:
        tracker = connect_tracker(args.host, args.port)
        print(tracker.text_summary())
        tracker.close()
    except RPCError as e:
        print(f"query_rpc_tracker: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
