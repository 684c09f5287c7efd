"""compiler.runtime on hand-written LLVM IR: compile, cache, load, call, time, sources, Target.

The kernels here are written by hand so the runtime is tested independently of lowering
and codegen.  Every compile uses ``cache=None`` or a tmp_path cache (never ~/.cache).
"""
import os
import pickle
import re
import signal

import llvmlite.binding as llvm
import numpy as np
import pytest
from runtime_helpers import ADD_META, BOOL_IR, COUNT_IR, COUNT_META, GOMP_IR, N, abc_arrays, add_ir

from compiler import te
from compiler.build import build, build_object, lower
from compiler.errors import BuildError
from compiler.runtime import (
    FuncMeta,
    ObjectCache,
    ParamMeta,
    as_aligned,
    compile_ir,
    compile_ir_full,
    default_cache,
    empty_aligned,
    flush_arguments,
    host_target,
    load_module,
    meta_from_primfunc,
    parse_target,
    set_default_cache,
)
from compiler.runtime import cacheflush as cacheflush_mod
from compiler.runtime import timer as timer_mod
from compiler.runtime.jit import process_stats
from compiler.runtime.meta import ir_param_alignments
from compiler.runtime.objfile import read_symbols
from compiler.tir import Add, BufferLoad, BufferStore, For, IntImm, PrimFunc, Var, decl_buffer

# Volatile so LLVM cannot fold n calls into one "C += n": counts are the real call counts.





@pytest.fixture(scope="module")
def add_mod():
    ir = add_ir()
    return load_module(compile_ir(ir, "llvm", cache=None), ADD_META, ir_text=ir)


@pytest.fixture(scope="module")
def count_mod():
    return load_module(compile_ir(COUNT_IR, cache=None), COUNT_META, ir_text=COUNT_IR)




# ------------------------------------------------------------------ calling kernels
def test_add_matches_numpy_aligned_and_misaligned(add_mod):
    a, b, c = abc_arrays()
    add_mod(a, b, c)   # numpy arrays are usually only 16-byte aligned: copied, not crashed
    np.testing.assert_array_equal(c, a + b)
    aa, bb, cc = as_aligned(a), as_aligned(b), empty_aligned(N)
    assert cc.ctypes.data % 64 == 0 and aa.ctypes.data % 64 == 0
    add_mod(aa, bb, cc)
    np.testing.assert_array_equal(cc, a + b)
    # a view at an odd 4-byte offset (element-aligned, not 64-aligned) is also written back
    buf = np.zeros(N + 1, np.float32)
    out = buf[1:]
    add_mod(a, b, out)
    np.testing.assert_array_equal(out, a + b)


def test_entry_and_named_functions(count_mod):
    c = np.zeros(1, np.int64)
    count_mod(c)
    count_mod["tick"](c)
    count_mod.get_function("count")(c)
    assert c[0] == 3
    assert count_mod.entry_name == "count" and "tick" in count_mod
    assert count_mod["count"].has_repeat and not count_mod["tick"].has_repeat
    with pytest.raises(KeyError, match="nope"):
        count_mod["nope"]


def test_libgomp_and_libm_symbols_resolve():
    obj = compile_ir(GOMP_IR, cache=None)
    meta = [("par", [("O", (4,), "int32")]),
            ("vexp", [("X", (16,), "float32", False), ("Y", (16,), "float32")])]
    mod = load_module(obj, meta)
    o = np.zeros(4, np.int32)
    mod(o)
    np.testing.assert_array_equal(o, [2, 2, 0, 0])   # two threads, each saw 2 threads
    x = np.linspace(-3, 3, 16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    mod["vexp"](x, y)
    np.testing.assert_allclose(y, np.exp(x), rtol=1e-6)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_gomp_after_fork_raises_instead_of_hanging():
    obj = compile_ir(GOMP_IR, cache=None)
    mod = load_module(obj, [("par", [("O", (4,), "int32")])])
    assert mod["par"].uses_gomp
    mod(np.zeros(4, np.int32))            # the parent has now run a parallel region
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                          # child: report what happened, never return
        signal.alarm(10)                  # if the guard failed, die instead of hanging
        msg = b"no error"
        try:
            mod(np.zeros(4, np.int32))
        except BuildError as e:
            msg = str(e).encode()
        finally:
            os.write(w, msg)
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        msg = f.read().decode()
    os.waitpid(pid, 0)
    assert "forked after its parent ran one" in msg and "spawn" in msg


def test_bool_param_is_one_byte_numpy_bool():
    mod = load_module(compile_ir(BOOL_IR, cache=None),
                      [("lnot", [("A", (8,), "bool", False), ("B", (8,), "bool")])])
    a = np.array([0, 1, 1, 0, 1, 0, 0, 1], dtype=bool)
    b = np.zeros(8, dtype=bool)
    mod(a, b)
    np.testing.assert_array_equal(b, ~a)
    with pytest.raises(ValueError, match="expected dtype bool, got uint8"):
        mod(a.view(np.uint8), b)


# ------------------------------------------------------------------ argument checks
def test_argument_count_and_type_errors(add_mod):
    a, b, c = abc_arrays()
    with pytest.raises(TypeError, match=r"'add' takes 3 arrays \(A, B, C\), got 2"):
        add_mod(a, b)
    with pytest.raises(TypeError, match="param 'B': expected a numpy.ndarray, got list"):
        add_mod(a, list(b), c)


def test_shape_dtype_contiguity_and_readonly_errors(add_mod):
    a, b, c = abc_arrays()
    with pytest.raises(ValueError, match=r"param 'B': expected shape \(1024,\), got \(512,\)"):
        add_mod(a, b[:512].copy(), c)
    with pytest.raises(ValueError, match="param 'A': expected dtype float32, got float64"):
        add_mod(a.astype(np.float64), b, c)
    with pytest.raises(ValueError, match="non-native byte order"):
        add_mod(a.astype(">f4"), b, c)
    strided = np.zeros(2 * N, np.float32)[::2]
    with pytest.raises(ValueError, match="param 'C': array is not C-contiguous"):
        add_mod(a, b, strided)
    ro = c.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="param 'C': the kernel writes this parameter"):
        add_mod(a, b, ro)
    a.flags.writeable = False     # read-only inputs are fine (slow pointer path)
    add_mod(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_aliasing_params_rejected(add_mod):
    a, b, c = abc_arrays()
    with pytest.raises(ValueError, match="params 'A' and 'C' share memory"):
        add_mod(a, b, a)
    with pytest.raises(ValueError, match="share memory"):
        add_mod(a, a, c)
    big = np.zeros(N + 8, np.float32)
    with pytest.raises(ValueError, match="share memory"):
        add_mod(big[:N], b, big[8:])       # overlapping views of one buffer


def test_errors_leave_outputs_untouched(add_mod):
    a, b, c = abc_arrays()
    with pytest.raises(ValueError):
        add_mod(a, b[:10].copy(), c)
    assert not c.any()


# ------------------------------------------------------------------ time_evaluator
def test_time_evaluator_counts_runs(count_mod):
    c = np.zeros(1, np.int64)
    res = count_mod.time_evaluator(number=7, repeat=3)(c)
    assert c[0] == 1 + 7 * 3          # one warm-up + number * repeat, in one native call each
    assert res.number == 7 and len(res.results) == 3
    assert all(t > 0 for t in res.results)
    assert res.mean > 0 and res.median > 0 and res.std >= 0
    assert res.min <= res.median <= res.max
    c[0] = 0
    count_mod.time_evaluator(number=2, repeat=2, warmup=False)(c)
    assert c[0] == 2 * 2              # no warm-up call


def test_time_evaluator_without_repeat_wrapper_falls_back(count_mod):
    c = np.zeros(1, np.int64)
    res = count_mod.time_evaluator("tick", number=5, repeat=2)(c)
    assert c[0] == 1 + 5 * 2 and res.number == 5


def test_time_evaluator_min_repeat_ms_grows_number(count_mod):
    c = np.zeros(1, np.int64)
    res = count_mod.time_evaluator(number=1, repeat=2, min_repeat_ms=20)(c)
    assert res.number > 1000
    for t in res.results:
        assert t * res.number >= 0.020 * 0.99
    assert c[0] >= 1 + res.number * 2


def test_time_evaluator_cache_flush_runs_before_each_repeat(add_mod, monkeypatch):
    calls = []
    real = timer_mod.flush_arguments
    monkeypatch.setattr(timer_mod, "flush_arguments",
                        lambda regions: (calls.append(list(regions)), real(regions)))
    a, b, c = abc_arrays()
    res = add_mod.time_evaluator(number=2, repeat=3, enable_cpu_cache_flush=True)(a, b, c)
    assert len(calls) == 3 and len(res.results) == 3 and res.mean > 0
    # TVM's cache_flush_cpu_non_first_arg: every array but the first, whole, each repeat
    assert all(len(r) == 2 and [n for _, n in r] == [b.nbytes, c.nbytes] for r in calls)
    np.testing.assert_array_equal(c, a + b)   # misaligned output written back after timing


def test_flush_arguments_keeps_data_and_falls_back_off_x86(monkeypatch):
    x = np.arange(100_003, dtype=np.float32)     # not a whole number of cache lines
    flush_arguments([(x.ctypes.data, x.nbytes), (x.ctypes.data, 0)])
    np.testing.assert_array_equal(x, np.arange(100_003, dtype=np.float32))
    assert (cacheflush_mod._native_flusher() is None) == (not cacheflush_mod._is_x86())
    whole = []
    monkeypatch.setattr(cacheflush_mod, "_native_flusher", lambda: None)
    monkeypatch.setattr(cacheflush_mod, "flush_cpu_cache", lambda: whole.append(1))
    flush_arguments([(x.ctypes.data, x.nbytes)])
    assert whole == [1]


def test_time_evaluator_argument_errors(add_mod):
    with pytest.raises(ValueError, match="number=0"):
        add_mod.time_evaluator(number=0)
    with pytest.raises(TypeError, match="repeat="):
        add_mod.time_evaluator(repeat="3")
    with pytest.raises(ValueError, match="min_repeat_ms"):
        add_mod.time_evaluator(min_repeat_ms=-1)
    with pytest.raises(KeyError):
        add_mod.time_evaluator("missing")
    with pytest.raises(TypeError, match="takes 3 arrays"):
        add_mod.time_evaluator()(np.zeros(N, np.float32))


# ------------------------------------------------------------------ sources and objects
def test_get_source_and_export_object(add_mod):
    ll = add_mod.get_source("ll")
    assert "define void @add(" in ll and "target triple" in ll
    asm = add_mod.get_source("asm")
    assert "add:" in asm and ".text" in asm
    with pytest.raises(ValueError, match="unknown format 'cuda'"):
        add_mod.get_source("cuda")
    obj = add_mod.export_object()
    assert isinstance(obj, bytes) and obj[:4] == b"\x7fELF"
    again = load_module(obj, add_mod.funcs_meta)
    a, b, c = abc_arrays(seed=3)
    again(a, b, c)
    np.testing.assert_array_equal(c, a + b)
    with pytest.raises(BuildError, match="without its IR"):
        again.get_source("ll")


def test_compile_ir_full_and_opt_levels():
    out = compile_ir_full(add_ir(), "llvm", opt_level=3)
    # LLVM's vectorizer picks the width of the host (8 lanes on AVX2, 16 on AVX-512)
    assert out.object[:4] == b"\x7fELF" and re.search(r"fadd <\d+ x float>", out.optimized_ir)
    o0 = compile_ir_full(add_ir(), "llvm", opt_level=0)
    assert " x float>" not in o0.optimized_ir      # O0 does not vectorize
    with pytest.raises(ValueError, match="opt_level 4"):
        compile_ir(add_ir(), opt_level=4, cache=None)
    with pytest.raises(TypeError, match="ir_text"):
        compile_ir(b"define", cache=None)


def test_bad_ir_raises_build_error():
    with pytest.raises(BuildError, match="does not parse"):
        compile_ir("define void @f( {", cache=None)
    bad = """define void @f() {
entry:
  br label %b
b:
  %x = add i32 %y, 1
  %y = add i32 %x, 1
  br label %b
}"""
    with pytest.raises(BuildError, match="fails verification.*dominate"):
        compile_ir(bad, cache=None)


def _verify_failing_after_optimization(monkeypatch, failing: set) -> list:
    """Make the module verifier reject the optimized modules of the attempts in
    ``failing`` (0-based): LLVM's optimizer has returned invalid IR (LLVM 22.1, fuzz seed
    2047), which codegen then met with an assertion that aborted the process.  Each
    attempt verifies twice: the parsed module, then the optimized one."""
    real = llvm.ModuleRef.verify
    calls: list = []

    def verify(self):
        calls.append(1)
        if len(calls) % 2 == 0 and len(calls) // 2 - 1 in failing:
            raise RuntimeError("Instruction does not dominate all uses!\n  %x = ...")
        return real(self)

    monkeypatch.setattr(llvm.ModuleRef, "verify", verify)
    return calls


def test_an_optimizer_that_breaks_the_ir_is_retried_with_fewer_loop_passes(monkeypatch):
    tunings = []
    real_pto = llvm.create_pipeline_tuning_options

    def pto(**kw):
        opts = real_pto(**kw)
        tunings.append(opts)
        return opts

    monkeypatch.setattr(llvm, "create_pipeline_tuning_options", pto)
    calls = _verify_failing_after_optimization(monkeypatch, {0})
    before = process_stats()["compiles"]
    mod = load_module(compile_ir(add_ir(), "llvm", cache=None), ADD_META)
    assert len(calls) == 4 and process_stats()["compiles"] == before + 2
    # the retry ran without LLVM's loop vectorizer (our codegen writes vector IR itself)
    assert tunings[0].loop_vectorization and not tunings[1].loop_vectorization
    a, b, c = abc_arrays()
    mod(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_an_optimizer_that_always_breaks_the_ir_raises_instead_of_aborting(monkeypatch):
    _verify_failing_after_optimization(monkeypatch, {0, 1, 2})
    with pytest.raises(BuildError, match=r"optimizer \(level 2\) turned valid IR into "
                       r"invalid IR with every pipeline tried \(Instruction does not "
                       r"dominate all uses!\); compile at opt_level=0"):
        compile_ir(add_ir(), "llvm", opt_level=2, cache=None)


def test_bad_objects_and_meta_raise_not_crash():
    obj = compile_ir(add_ir(), cache=None)
    for junk in (b"garbage", obj[: len(obj) // 2], b"\x7fELF" + b"\0" * 100):
        with pytest.raises(BuildError):
            load_module(junk, ADD_META)
    with pytest.raises(BuildError, match=r"does not define function\(s\) \['mul'\]"):
        load_module(obj, [("mul", [("A", (N,), "float32")])])
    undefined = compile_ir("declare void @nosuchfn()\ndefine void @f(ptr %A) {\n"
                           "  call void @nosuchfn()\n  ret void\n}", cache=None)
    with pytest.raises(BuildError, match="nosuchfn"):
        load_module(undefined, [("f", [("A", (1,), "float32")])])
    with pytest.raises(TypeError):
        load_module("not bytes", ADD_META)
    with pytest.raises(TypeError):
        load_module(obj, [("add",)])
    with pytest.raises(ValueError, match="shape"):
        load_module(obj, [("add", [("A", (-1,), "float32")])])
    with pytest.raises(ValueError, match="dtype 'float33'"):
        load_module(obj, [("add", [("A", (1,), "float33")])])
    with pytest.raises(BuildError, match="lists 1 params but the IR defines it with 3"):
        load_module(obj, [("add", [("A", (N,), "float32")])], ir_text=add_ir())


def test_object_for_other_cpu_is_refused():
    tgt = parse_target("llvm -mcpu=skylake-avx512 -mattr=+avx512f")
    if "+avx512f" in host_target().features.split(","):
        pytest.skip("host has AVX-512")
    obj = compile_ir(add_ir(), tgt, cache=None)
    with pytest.raises(BuildError, match="avx512f"):
        load_module(obj, ADD_META, target=tgt)


def test_symbols_and_alignment_from_ir():
    syms = read_symbols(compile_ir(GOMP_IR, cache=None))
    assert {"par", "vexp"} <= syms.defined and "par_worker" not in syms.defined
    assert {"GOMP_parallel", "expf"} <= syms.undefined
    assert read_symbols(b"junk") is None
    assert ir_param_alignments(add_ir()) == {"add": (64, 64, 64), "add__repeat": (None,) * 4}
    mod = load_module(compile_ir(add_ir(align=0), cache=None), ADD_META, ir_text=add_ir(align=0))
    assert [p.align for p in mod["add"].params] == [4, 4, 4]      # element size only
    assert [p.align for p in load_module(compile_ir(add_ir(), cache=None),
                                         ADD_META)["add"].params] == [64, 64, 64]


def test_meta_from_primfunc():
    A, B, C = (decl_buffer((4, 8), "float32", n) for n in "ABC")
    i = Var("i", "int32")
    body = For(i, IntImm("int32", 0), IntImm("int32", 4), "serial",
               BufferStore(C, Add(BufferLoad(A, (i, i)), BufferLoad(B, (i, i))), (i, i)))
    fm = meta_from_primfunc(PrimFunc("f", (A, B, C), body))
    assert fm == FuncMeta("f", (ParamMeta("A", (4, 8), "float32", False),
                                ParamMeta("B", (4, 8), "float32", False),
                                ParamMeta("C", (4, 8), "float32", True)))
    n = Var("n", "int32")
    D = decl_buffer((n,), "float32", "D")     # symbolic: n is read from D's length
    assert meta_from_primfunc(PrimFunc("g", (D,), body)).shape_vars == (("n", "int32"),)
    E = decl_buffer((n + 1,), "float32", "E")
    with pytest.raises(BuildError, match="not a whole dimension"):
        meta_from_primfunc(PrimFunc("g", (E,), body))
    with pytest.raises(TypeError):
        meta_from_primfunc("f")


# ------------------------------------------------------------------ build (orchestration)
@pytest.fixture
def tmp_default_cache(tmp_path):
    """build() uses the process default cache: point it at tmp_path for the test."""
    previous = default_cache()
    mine = ObjectCache(tmp_path / "default")
    set_default_cache(mine)
    yield mine
    set_default_cache(previous)


def test_build_schedule_and_primfunc_end_to_end(tmp_path, tmp_default_cache):
    n = 1000
    A = te.placeholder((n,), name="A", dtype="float32")
    B = te.placeholder((n,), name="B", dtype="float32")
    C = te.compute((n,), lambda i: A[i] * B[i] + A[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    mod = build(s, [A, B, C], target="llvm", name="fma_add")
    a, b, c = abc_arrays(n, seed=7)
    mod(a, b, c)
    np.testing.assert_allclose(c, a * b + a, rtol=1e-6)
    assert mod.entry_name == "fma_add" and mod["fma_add"].has_repeat
    assert mod.time_evaluator(number=3)(a, b, c).mean > 0
    func = lower(s, [A, B, C], name="fma_add")
    obj, meta, ir = build_object(func, "llvm", cache=ObjectCache(tmp_path))
    meta = pickle.loads(pickle.dumps(meta))          # shippable from a worker process
    assert [p.written for p in meta[0].params] == [False, False, True]
    assert all(isinstance(p.align, int) for p in meta[0].params)
    again = build(func)                               # a PrimFunc goes straight to codegen
    assert tmp_default_cache.hits == 1 and tmp_default_cache.writes == 1
    c2 = np.zeros(n, np.float32)
    again(a, b, c2)
    np.testing.assert_array_equal(c2, c)
    with pytest.raises(TypeError, match="args"):
        build(s)
    with pytest.raises(TypeError, match="Schedule or a tir.PrimFunc"):
        build("not a schedule")
