"""Run fuzz cases in isolated worker processes, so a crash or a hang is a finding.

Role: ``run_cases(seed, cases, jobs, timeout)`` hands case numbers to ``jobs`` worker
processes (started by the "forkserver" method: libgomp and LLVM are not fork-safe after
use) and collects one ``fuzz.Outcome`` per case, in case order.  A worker that dies
while running a case (segfault, abort) yields a ``crash`` outcome for that case and is
replaced; one that takes longer than ``timeout`` seconds is killed and yields ``hang``.
Case generation happens in the worker from (seed, case), so only integers travel.
"""
from __future__ import annotations

import multiprocessing as mp
import time
from multiprocessing.connection import wait

from . import fuzz


def _worker(conn, seed: int, check) -> None:
    while True:
        try:
            k = conn.recv()
        except EOFError:
            return
        if k is None:
            return
        try:
            out = check(seed, k)
        except Exception as err:  # noqa: BLE001 - an unexpected error is a finding too
            out = fuzz.Outcome(k, "?", "?", "refused", f"{type(err).__name__}: {err}"[:500])
        conn.send(out.to_json())


class _Slot:
    """One worker process and the case it is running."""

    def __init__(self, ctx, seed: int, check):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, seed, check), daemon=True)
        self.proc.start()
        child.close()
        self.case: int | None = None
        self.deadline = 0.0

    def give(self, k: int, timeout: float) -> None:
        self.case, self.deadline = k, time.monotonic() + timeout
        self.conn.send(k)

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(timeout=2)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()


def _lost(seed: int, k: int, status: str, detail: str) -> fuzz.Outcome:
    family, source, state = fuzz.make_case(seed, k)
    recs = tuple(tuple(s.to_record()) for s in state.transform_steps)
    return fuzz.Outcome(k, family, source, status, detail, recs)


def run_cases(seed: int, cases, jobs: int = 2, timeout: float = 60.0,
              progress=None, check=fuzz.check_case) -> list:
    """Outcomes of ``cases`` (an iterable of ints), isolated in ``jobs`` processes.

    ``check(seed, case) -> Outcome`` runs in the workers (a module-level function)."""
    ctx = mp.get_context("forkserver")
    todo = list(cases)
    results: dict = {}
    slots = [_Slot(ctx, seed, check) for _ in range(max(1, min(jobs, len(todo))))]
    try:
        pos = 0
        for s in slots:
            if pos < len(todo):
                s.give(todo[pos], timeout)
                pos += 1
        while len(results) < len(todo):
            busy = [s for s in slots if s.case is not None]
            wait_for = max(0.0, min(s.deadline for s in busy) - time.monotonic())
            ready = wait([s.conn for s in busy] + [s.proc.sentinel for s in busy],
                         timeout=wait_for)
            for i, s in enumerate(slots):
                if s.case is None:
                    continue
                out = _collect(s, ready, seed)
                if out is None:
                    continue
                results[s.case] = out
                if progress is not None:
                    progress(out)
                if not s.proc.is_alive():
                    slots[i] = s = _Slot(ctx, seed, check)
                s.case = None
                if pos < len(todo):
                    s.give(todo[pos], timeout)
                    pos += 1
    finally:
        for s in slots:
            s.stop()
    return [results[k] for k in todo]


def _collect(s: _Slot, ready, seed: int):
    """The outcome of ``s``'s case if it finished, crashed or timed out, else None."""
    if s.conn in ready:
        try:
            d = s.conn.recv()
            return fuzz.Outcome(d["case"], d["family"], d["source"], d["status"], d["detail"],
                                tuple(tuple(x) for x in d["steps"]))
        except (EOFError, OSError):
            pass
    case = s.case
    assert case is not None                   # only busy slots are collected
    if s.conn in ready or s.proc.sentinel in ready:
        s.proc.join(timeout=1)
        return _lost(seed, case, "crash", f"worker died (exit code {s.proc.exitcode})")
    if time.monotonic() >= s.deadline:
        s.proc.kill()
        s.proc.join()
        return _lost(seed, case, "hang", "no result within the time limit")
    return None


__all__ = ["run_cases"]
