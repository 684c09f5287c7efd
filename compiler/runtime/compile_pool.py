"""Compile many LLVM modules in parallel worker processes (LLVM holds a global lock, so
threads would not help).

Workers are fresh interpreters running ``python -m compiler.runtime.compile_worker``,
talking over their stdin/stdout; they never import the caller's ``__main__`` (so a
script calling ``relay.build`` needs no ``if __name__ == "__main__":`` guard, unlike
multiprocessing's spawn and forkserver) and never inherit the parent's LLVM or OpenMP
state (unlike fork).  Messages are a JSON header line followed by raw bytes; nothing is
pickled.  A worker that dies (an LLVM abort) turns into a BuildError naming the module;
the other workers are stopped.

``compile_many(irs, target, cache_dir, workers)`` returns the object bytes in order;
each worker stores what it compiles in the ObjectCache at ``cache_dir`` (None: no cache).
"""
from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading

from ..errors import BuildError

__all__ = ["compile_many", "send", "recv"]

WORKER = "compiler.runtime.compile_worker"


def send(stream, header: dict, payload: bytes) -> None:
    stream.write(json.dumps(dict(header, size=len(payload))).encode() + b"\n")
    stream.write(payload)
    stream.flush()


def recv(stream):
    line = stream.readline()
    if not line:
        return None, b""
    header = json.loads(line)
    return header, stream.read(header["size"])


def _worker_loop(proc, jobs: queue.Queue, results: list, names, target: str, cache_dir,
                 failures: list) -> None:
    while not failures:
        try:
            k, ir = jobs.get_nowait()
        except queue.Empty:
            return
        try:
            send(proc.stdin, {"target": target, "cache_dir": cache_dir}, ir.encode())
            header, obj = recv(proc.stdout)
        except (BrokenPipeError, OSError, ValueError):
            header, obj = None, b""
        if header is None:
            failures.append(f"the compile worker died while compiling {names[k]} "
                            f"(exit code {proc.poll()})")
            return
        if not header["ok"]:
            failures.append(f"compiling {names[k]}: {header['error']}")
            return
        results[k] = obj


def compile_many(irs, target, cache_dir=None, workers: int = 2, names=None) -> list:
    irs = list(irs)
    names = list(names) if names is not None else [f"module {k}" for k in range(len(irs))]
    jobs: queue.Queue = queue.Queue()
    for k, ir in enumerate(irs):
        jobs.put((k, ir))
    results: list = [None] * len(irs)
    failures: list = []
    procs = [subprocess.Popen([sys.executable, "-m", WORKER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
             for _ in range(max(1, min(workers, len(irs))))]
    threads = [threading.Thread(target=_worker_loop, daemon=True,
                                args=(p, jobs, results, names, str(target), cache_dir,
                                      failures)) for p in procs]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for p in procs:
            try:
                if p.stdin is not None:
                    p.stdin.close()
            except OSError:
                pass
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    if failures:
        raise BuildError(failures[0])
    return results
