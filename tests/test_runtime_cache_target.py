"""Runtime: the on-disk object cache, compiling across processes/threads, Target parsing."""
import concurrent.futures
import multiprocessing
import os
import pathlib
import threading

import numpy as np
import pytest

from compiler.errors import BuildError
from compiler.runtime import (
    DEFAULT_CACHE,
    ObjectCache,
    compile_ir,
    default_cache,
    host_target,
    load_module,
    parse_target,
    process_stats,
)
from compiler.runtime import cache as cache_mod
from compiler.runtime.cache import resolve_cache

N = 1024

from runtime_helpers import ADD_META, abc_arrays, add_ir  # noqa: E402


# ------------------------------------------------------------------ object cache
def test_cache_miss_then_hit(tmp_path):
    cache = ObjectCache(tmp_path)
    obj1 = compile_ir(add_ir(), "llvm", cache=cache)
    obj2 = compile_ir(add_ir(), "llvm", cache=cache)
    assert obj1 == obj2
    assert (cache.misses, cache.hits, cache.writes) == (1, 1, 1)
    compile_ir(add_ir(), "llvm", opt_level=1, cache=cache)      # opt level is in the key
    compile_ir(add_ir(n=512), "llvm", cache=cache)              # so is the IR
    compile_ir(add_ir(), "llvm -num-cores=1", cache=cache)       # and the target
    assert cache.misses == 4 and len(list(tmp_path.glob("*.obj"))) == 4
    assert not list(tmp_path.glob(".tmp-*"))


@pytest.mark.parametrize("damage", ["garbage", "truncate", "flip", "directory"])
def test_corrupt_entry_is_a_miss(tmp_path, damage):
    cache = ObjectCache(tmp_path)
    good = compile_ir(add_ir(), cache=cache)
    path = cache.path(cache.key(add_ir(), host_target(), 3))
    data = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"not an object")
    elif damage == "truncate":
        path.write_bytes(data[: len(data) - 10])
    elif damage == "flip":
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    else:
        path.unlink()
        path.mkdir()       # unreadable entry: reading raises an OSError
    obj = compile_ir(add_ir(), cache=cache)
    assert obj == good and cache.hits == 0 and cache.misses == 2
    load_module(obj, ADD_META)(*abc_arrays())


def test_cache_write_failures_are_harmless(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cache = ObjectCache(blocker / "sub")           # cannot mkdir below a file
    assert compile_ir(add_ir(), cache=cache)[:4] == b"\x7fELF"
    assert cache.errors >= 1 and cache.writes == 0 and cache.hits == 0

    def broken_replace(src, dst):
        raise OSError("disk full")
    good = ObjectCache(tmp_path / "c")
    monkeypatch.setattr(cache_mod.os, "replace", broken_replace)
    assert good.put("k" * 64, b"data") is False
    assert list((tmp_path / "c").iterdir()) == []  # the temporary file was removed


def test_cache_atomic_put_and_concurrent_writers(tmp_path):
    cache = ObjectCache(tmp_path)
    payloads = [bytes([k]) * 200_000 for k in range(4)]

    def writer(k):
        for _ in range(5):
            assert cache.put("same", payloads[k])
    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.get("same") in payloads          # always one whole entry
    assert [p.name for p in tmp_path.iterdir()] == ["same.obj"]
    assert cache.clear() == 1 and cache.get("same") is None


def test_default_cache_configuration(tmp_path):
    assert default_cache().directory == (
        pathlib.Path("~/.cache/tensor-autosched/objects").expanduser())
    assert resolve_cache(None) is None
    mine = ObjectCache(tmp_path)
    assert resolve_cache(mine) is mine and resolve_cache(DEFAULT_CACHE) is default_cache()
    with pytest.raises(TypeError, match="expected an ObjectCache"):
        compile_ir(add_ir(), cache="yes")
    k = ObjectCache.key(add_ir(), host_target(), 3)
    assert k == ObjectCache.key(add_ir(), parse_target("llvm"), 3) and len(k) == 64


# ------------------------------------------------------------------ processes and threads
def test_compile_in_spawned_worker_and_load_here():
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        obj = pool.submit(compile_ir, add_ir(), "llvm", None, None).result(timeout=60)
    mod = load_module(obj, ADD_META)
    a, b, c = abc_arrays(seed=5)
    mod(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_concurrent_compiles_from_threads():
    before = process_stats()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        objs = list(pool.map(lambda n: compile_ir(add_ir(n=n), cache=None), [64, 128] * 4))
    assert objs[0] == objs[2] and objs[0] != objs[1]
    assert process_stats()["compiles"] == before["compiles"] + 8


# ------------------------------------------------------------------ Target
def test_target_str_is_stable_and_round_trips():
    t = parse_target("llvm")
    assert str(t) == str(parse_target("llvm")) == str(host_target())
    assert str(t).startswith("llvm -keys=cpu -mcpu=")
    assert parse_target(str(t)) == t
    a = parse_target("llvm -num-cores=4 -mcpu=znver3 -mattr=+avx2,+fma")
    b = parse_target("llvm -mattr=+avx2,+fma -mcpu=znver3 -num-cores=4")
    assert a == b and str(a) == "llvm -keys=cpu -mcpu=znver3 -mattr=+avx2,+fma -num-cores=4"
    foreign = parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1 -opt-level=2")
    assert "-mtriple=aarch64-linux-gnu" in str(foreign) and "-opt-level=2" in str(foreign)
    assert parse_target(str(foreign)) == foreign
    assert parse_target(t) is t and hash(a) == hash(b)


@pytest.mark.parametrize("text", ["", "cuda", "llvm -foo=1", "llvm mcpu", "llvm -num-cores=x",
                                  "llvm -num-cores=0", "llvm -opt-level=5", None, 3])
def test_target_parse_errors(text):
    with pytest.raises(BuildError, match="target"):
        parse_target(text)


def test_target_vector_width_follows_features():
    t = host_target()
    feats = t.features.split(",")
    expect = 512 if "+avx512f" in feats else 256 if "+avx2" in feats else 128
    assert t.vector_bits == expect and t.vector_lanes(32) == expect // 32
    assert parse_target("llvm -mcpu=x86-64 -mattr=+avx2").vector_bits == 256
    assert parse_target("llvm -mcpu=znver4").vector_lanes(32) == 16
    assert os.cpu_count() >= t.num_cores >= 1
