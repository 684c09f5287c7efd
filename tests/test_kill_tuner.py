"""``kill -9`` of a running ``tune``: the log stays valid, no worker outlives the tuner,
and the resumed run measures no state twice.

The tuner is killed at several points (while building, while timing, between log
writes: the delays land wherever they land, and the log grows between kills); the
process table is read from /proc.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

from records import load_records

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                                reason="reads the process table from /proc")


def _children() -> dict:
    """pid -> parent pid of every process."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            out[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def descendants(pid: int) -> set:
    parents = _children()
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for child, parent in parents.items():
            if parent == p and child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def tune(log, trials: int):
    cmd = [sys.executable, "-m", "autosched.cli", "matmul", "--args", "48", "48", "48",
           "--trials", str(trials), "--per-round", "8", "--retime", "0", "--confirm", "0",
           "--log", str(log), "--quiet"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def assert_all_exit(family, seconds: float, message: str) -> None:
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in family) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in family if alive(p)], message


def lines(log) -> list:
    return list(load_records(log, strict=True)) if os.path.exists(log) else []


def test_kill_9_keeps_the_log_and_leaves_no_worker(tmp_path):
    log = tmp_path / "mm.json"
    counts = []
    for delay in (2.5, 4.0, 3.0):
        proc = tune(log, 400)
        start = time.monotonic()
        before = len(lines(log))
        # wait until this run has measured something, then a little more
        while len(lines(log)) == before and time.monotonic() - start < 60:
            time.sleep(0.2)
        time.sleep(delay - 2.0)
        family = descendants(proc.pid)
        assert family, "the tuner started no worker"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert_all_exit(family, 10, "workers outlived the killed tuner")
        counts.append(len(lines(log)))          # strict: every line parses
    assert counts[0] > 0 and counts == sorted(counts)
    # the resumed run preloads everything and measures new states only
    proc = tune(log, 8)
    assert proc.wait(120) == 0, proc.stderr.read().decode()[-2000:]
    records = lines(log)
    assert len(records) == counts[-1] + 8
    steps = [r.input.steps for r in records]
    assert len(set(steps)) == len(steps), "a state was measured twice"


_OWNER = """
import time
from autosched.measure.workers import WorkerPool
pool = WorkerPool(1, name="orphan-test")
pool.map(time.sleep, [(0.01,)], timeout=30)      # the worker is up
print("ready", flush=True)
pool.map(time.sleep, [(120,)], timeout=300)      # a job far longer than the test
"""


def test_a_busy_worker_exits_soon_after_its_tuner_is_killed():
    proc = subprocess.Popen([sys.executable, "-c", _OWNER], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    time.sleep(0.5)                               # the long job is running
    family = descendants(proc.pid)
    assert family
    proc.send_signal(signal.SIGTERM)
    proc.wait(10)
    assert_all_exit(family, 5, "a busy worker outlived its tuner")
