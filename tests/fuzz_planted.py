"""A fuzz check with planted failures, run in fuzz_runner's worker processes."""
import ctypes
import time

from autosched import fuzz


def planted_check(seed, k):
    if k == 3:
        ctypes.string_at(0)          # segfault
    if k == 5:
        time.sleep(60)               # hang
    return fuzz.Outcome(k, "planted", "test", "ok")
