"""Paired timings of two tuned kernels, each in a long-lived process of its own side.

Role: ``scripts/bench_vs_tvm.py`` starts one timing process per side in serve mode
(``_metaschedule_worker.serve``: a ``{"ready": true}`` line, then one JSON timing per
request line) and asks them in turn, the side going first alternating by pair.  The two
figures of a pair are taken a fraction of a second apart, so both see the machine in the
same state: on this shared host a slow spell (another tenant's load) lasts seconds and
slows a kernel by up to 2.4x, long enough to cover one side's whole fresh-process round
and not the other's.  The verdict reads the median of the per-pair ratios.

Invariants: a process that fails, exits or stays silent past the timeout raises
``RuntimeError`` naming its command; the processes are closed (stdin shut, then killed
if they linger) whatever happens.  Lines that are not JSON objects (a library's log
output) are skipped.
"""
from __future__ import annotations

import json
import queue
import statistics
import subprocess
import tempfile
import threading
import time

SIDES = ("metaschedule", "ours")
CLOSE_SECONDS = 10.0        # how long a closed process may take to exit before a kill


def json_object(line: str) -> dict | None:
    """The JSON object on ``line``, or None (not JSON, or not an object)."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


class TimingProcess:
    """A serve-mode timing process: ``time()`` asks it for one timing (median ms)."""

    def __init__(self, cmd: list, env: dict, timeout: float):
        self.cmd, self.timeout = cmd, timeout
        self._err = tempfile.TemporaryFile(mode="w+")
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._err, text=True, env=env)
        except OSError as err:
            self._err.close()
            raise RuntimeError(f"timing process {cmd[0]} could not start: {err}") from None
        self._lines: queue.Queue = queue.Queue()
        # a reader thread, so that a silent process times out instead of blocking
        threading.Thread(target=self._read, daemon=True).start()
        try:
            self._answer()      # the ready line (or the error preparing the kernel)
        except BaseException:
            self.close()
            raise

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _answer(self) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"timing process {self.cmd[1]} gave no answer in "
                                   f"{self.timeout:g} s") from None
            if line is None:
                raise RuntimeError(f"timing process {self.cmd[1]} exited: {self._tail()}")
            obj = json_object(line)
            if obj is None:
                continue
            if obj.get("error"):
                raise RuntimeError(f"timing process {self.cmd[1]} failed: {obj['error']}")
            return obj

    def _tail(self) -> str:
        self.proc.poll()
        self._err.seek(0)
        tail = self._err.read().strip().splitlines()[-1:]
        return tail[0] if tail else f"exit status {self.proc.returncode}"

    def time(self) -> float:
        try:
            self.proc.stdin.write("time\n")
            self.proc.stdin.flush()
        except OSError:
            raise RuntimeError(f"timing process {self.cmd[1]} exited: {self._tail()}") \
                from None
        res = self._answer()
        if not res.get("best_ms"):
            raise RuntimeError(f"timing process {self.cmd[1]} answered without a time: "
                               f"{res}")
        return float(res["best_ms"])

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=CLOSE_SECONDS)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._err.close()


def paired(cmds: dict, env: dict, pairs: int, timeout: float) -> dict:
    """``pairs`` pairs of timings of the two sides' serve-mode processes (``cmds``: side
    -> command, both of ``SIDES``), alternating which side goes first; the figures,
    per-pair ratios (MetaSchedule ms / ours ms) and their median as ``ratio``, or the
    figures so far and ``error``."""
    figures: dict = {side: [] for side in SIDES}
    procs: dict = {}
    try:
        for side in SIDES:
            procs[side] = TimingProcess(cmds[side], env, timeout)
        for i in range(pairs):
            for side in (SIDES if i % 2 == 0 else SIDES[::-1]):
                figures[side].append(procs[side].time())
    except RuntimeError as err:
        return {"error": str(err), "metaschedule_ms": figures["metaschedule"],
                "ours_ms": figures["ours"]}
    finally:
        for proc in procs.values():
            proc.close()
    ratios = [a / b for a, b in zip(figures["metaschedule"], figures["ours"])]
    return {"metaschedule_ms": figures["metaschedule"], "ours_ms": figures["ours"],
            "metaschedule_median_ms": statistics.median(figures["metaschedule"]),
            "ours_median_ms": statistics.median(figures["ours"]),
            "pair_ratios": ratios, "ratio": statistics.median(ratios)}
