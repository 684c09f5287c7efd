"""The compile worker ``compile_pool`` starts: ``python -m compiler.runtime.compile_worker``.

One LLVM IR module in (a JSON header line with the target and cache directory, then the
IR bytes), one object out (or an error message), until stdin closes.  Kept apart from
``compile_pool`` so running it as ``__main__`` never imports a second copy of the pool.
"""
from __future__ import annotations

import sys

from .cache import ObjectCache
from .compile_pool import recv, send
from .jit import compile_ir


def _serve() -> None:
    """Worker loop: one IR in, one object (or an error) out, until stdin closes."""
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr             # a stray print must not corrupt the protocol
    while True:
        header, ir = recv(inp)
        if header is None:
            return
        cache = ObjectCache(header["cache_dir"]) if header.get("cache_dir") else None
        try:
            obj = compile_ir(ir.decode(), header["target"], cache=cache)
            send(out, {"ok": True}, obj)
        except Exception as e:          # reported to the parent, which raises it
            send(out, {"ok": False, "error": f"{type(e).__name__}: {e}"}, b"")


if __name__ == "__main__":
    _serve()
