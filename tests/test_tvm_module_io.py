"""Saving and loading compiled modules by path, as TVM users do.

``mod.save("x.o")`` + ``tvm.contrib.cc.create_shared`` + ``tvm.runtime.load_module``,
``mod.export_library("x.so")`` (loaded here and in a fresh interpreter), ``.ll``/``.bc``
outputs, ``utils.tempdir()``, the keyword form of ``Target`` -- results checked against
numpy, parallel and exp kernels included, and bad files rejected with a clear error.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import compiler as tvm
from compiler import te
from compiler.contrib import cc, utils
from compiler.errors import BuildError

RNG = np.random.default_rng(7)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _vector_add(n=1024, name="myadd"):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    return tvm.build(s, [A, B, C], target="llvm", name=name)


def _parallel_exp(rows=16, cols=64, name="pexp"):
    """A parallel outer loop (libgomp) over a vectorized exp (our math kernels) + libm's
    scalar powf."""
    A = te.placeholder((rows, cols), name="A")
    B = te.compute((rows, cols), lambda i, j: te.exp(A[i, j]) + te.power(A[i, j], 2.0),
                   name="B")
    s = te.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    s[B].vectorize(B.op.axis[1])
    return tvm.build(s, [A, B], target="llvm", name=name)


def _check_add(mod, n=1024):
    dev = tvm.cpu(0)
    a = tvm.nd.array(RNG.random(n).astype("float32"), dev)
    b = tvm.nd.array(RNG.random(n).astype("float32"), dev)
    c = tvm.nd.array(np.zeros(n, "float32"), dev)
    mod(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())


def _check_pexp(mod, rows=16, cols=64):
    a = RNG.random((rows, cols)).astype("float32")
    b = np.zeros_like(a)
    mod(a, b)
    np.testing.assert_allclose(b, np.exp(a) + a ** 2, rtol=1e-5)


# ------------------------------------------------------------------ .o + create_shared
def test_save_object_create_shared_load_module():
    fadd = _vector_add()
    temp = utils.tempdir()
    fadd.save(temp.relpath("myadd.o"))
    cc.create_shared(temp.relpath("myadd.so"), [temp.relpath("myadd.o")])
    assert sorted(temp.listdir()) == ["myadd.o", "myadd.so"]
    fadd1 = tvm.runtime.load_module(temp.relpath("myadd.so"))
    assert fadd1.entry_name == "myadd"
    _check_add(fadd1)
    _check_add(fadd1["myadd"])
    a, b, c = np.ones(1024, "float32"), np.ones(1024, "float32"), np.zeros(1024, "float32")
    timer = fadd1.time_evaluator(fadd1.entry_name, tvm.cpu(0), number=3)
    assert timer(a, b, c).mean > 0
    with pytest.raises(ValueError, match="expected shape"):
        fadd1(np.ones(3, "float32"), a, c)       # signatures survive the round trip


def test_object_file_loads_directly():
    temp = utils.tempdir()
    _parallel_exp().save(temp.relpath("k.o"))
    _check_pexp(tvm.runtime.load_module(temp.relpath("k.o")))


def test_parallel_exp_kernel_survives_object_and_library_round_trips():
    mod = _parallel_exp()
    temp = utils.tempdir()
    mod.save(temp.relpath("pexp.o"))
    cc.create_shared(temp.relpath("pexp.so"), [temp.relpath("pexp.o")])
    mod.export_library(temp.relpath("pack.so"))
    for lib in ("pexp.so", "pack.so"):
        loaded = tvm.runtime.load_module(temp.relpath(lib))
        assert loaded["pexp"].uses_gomp          # fork-safety checks still apply
        _check_pexp(loaded)


def test_library_linked_from_two_objects_has_both_functions(tmp_path):
    def save(name, fn):
        A = te.placeholder((8,), name="A")
        B = te.compute((8,), lambda i: fn(A[i]), name="B")
        path = str(tmp_path / f"{name}.o")
        tvm.build(te.create_schedule(B.op), [A, B], name=name).save(path)
        return path

    paths = [save("dbl", lambda x: x * 2.0), save("inc", lambda x: x + 1.0)]
    cc.create_shared(str(tmp_path / "both.so"), paths)
    both = tvm.runtime.load_module(str(tmp_path / "both.so"))
    assert both.entry_name == "dbl"                  # the first object linked
    a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    both["inc"](a, b)
    np.testing.assert_array_equal(b, a + 1)
    both(a, b)
    np.testing.assert_array_equal(b, a * 2)


# ------------------------------------------------------------------ export_library
def test_export_library_loads_in_this_and_a_fresh_process(tmp_path):
    fadd = _vector_add(n=256, name="vadd")
    path = tmp_path / "vadd_pack.so"
    fadd.export_library(str(path))
    _check_add(tvm.runtime.load_module(str(path)), n=256)
    code = textwrap.dedent(f"""
        import numpy as np
        import compiler as tvm
        m = tvm.runtime.load_module({str(path)!r})
        a = np.arange(256, dtype="float32"); c = np.zeros(256, "float32")
        m(a, a.copy(), c)
        assert m.entry_name == "vadd" and np.array_equal(c, 2 * a)
        print("ok", tvm.runtime.process_stats()["compiles"])
    """)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok", "0"]          # loaded without compiling anything


def test_reexport_to_the_same_path_loads_the_new_code(tmp_path):
    path = str(tmp_path / "k.so")
    _vector_add(n=64, name="first").export_library(path)
    assert tvm.runtime.load_module(path).entry_name == "first"
    _vector_add(n=64, name="second").export_library(path)
    assert tvm.runtime.load_module(path).entry_name == "second"


def test_text_and_bitcode_outputs(tmp_path):
    fadd = _vector_add(n=64)
    fadd.save(str(tmp_path / "m.ll"))
    fadd.save(str(tmp_path / "m.bc"))
    text = (tmp_path / "m.ll").read_text()
    assert "define" in text and "@myadd" in text and "__tas_meta_myadd" in text
    assert (tmp_path / "m.bc").read_bytes()[:2] == b"BC"
    assert "define" in fadd.get_source() and fadd.get_source("") == fadd.get_source("ll")
    with pytest.raises(ValueError, match="unknown format"):
        fadd.save(str(tmp_path / "m.xyz"))


def test_loaded_library_cannot_be_saved_again(tmp_path):
    path = str(tmp_path / "k.so")
    _vector_add(n=64).export_library(path)
    loaded = tvm.runtime.load_module(path)
    assert loaded.type_key == "library" and loaded.imported_modules == []
    with pytest.raises(BuildError, match="loaded without its LLVM IR"):
        loaded.save(str(tmp_path / "again.o"))


# ------------------------------------------------------------------ bad files
def test_corrupt_and_foreign_files_raise_build_error(tmp_path):
    truncated = tmp_path / "trunc.so"
    good = tmp_path / "good.so"
    _vector_add(n=64).export_library(str(good))
    truncated.write_bytes(good.read_bytes()[:200])
    with pytest.raises(BuildError, match="not a well-formed ELF64"):
        tvm.runtime.load_module(str(truncated))
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"definitely not a library")
    with pytest.raises(BuildError, match="not an exported library .tar., nor a shared"):
        tvm.runtime.load_module(str(junk))
    foreign = tmp_path / "foreign.so"
    (tmp_path / "f.c").write_text("int answer(void) { return 42; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(foreign), str(tmp_path / "f.c")],
                   check=True)
    with pytest.raises(BuildError, match="holds no kernel metadata"):
        tvm.runtime.load_module(str(foreign))
    with pytest.raises(BuildError, match="does not exist"):
        tvm.runtime.load_module(str(tmp_path / "missing.so"))


def test_tampered_metadata_is_a_clear_error(tmp_path):
    obj = tmp_path / "k.o"
    _vector_add(n=64, name="tamper").save(str(obj))
    data = obj.read_bytes()
    key = b'"format":"tensor-autosched-kernels/1"'
    assert key in data
    obj.write_bytes(data.replace(key, key.replace(b"kernels/1", b"kernels/9")))
    with pytest.raises(BuildError, match="kernels/9"):
        tvm.runtime.load_module(str(obj))


def test_create_shared_reports_link_failures(tmp_path):
    with pytest.raises(BuildError, match="linking"):
        cc.create_shared(str(tmp_path / "x.so"), [str(tmp_path / "missing.o")])
    assert not (tmp_path / "x.so").exists()
    with pytest.raises(BuildError, match="not found"):
        cc.create_shared(str(tmp_path / "x.so"), [str(tmp_path / "a.o")],
                         cc="no-such-compiler-xyz")


# ------------------------------------------------------------------ utils, Target
def test_tempdir_is_removed_when_dropped_or_closed():
    temp = utils.tempdir()
    path = temp.temp_dir
    open(temp.relpath("f.txt"), "w").close()
    assert temp.listdir() == ["f.txt"]
    del temp
    assert not os.path.exists(path)
    with utils.tempdir() as t2:
        p2 = t2.temp_dir
    assert not os.path.exists(p2)


def test_target_keyword_form_and_host():
    tgt = tvm.target.Target(target="llvm", host="llvm")
    assert tgt.kind.name == "llvm"
    assert tgt.host is not None and tgt.host.kind.name == "llvm"
    assert tgt == tvm.target.Target("llvm") and str(tgt) == str(tvm.target.Target("llvm"))
    assert tvm.target.Target("llvm").host is None
    with pytest.raises(TypeError, match="once"):
        tvm.target.Target("llvm", target="llvm")
    A = te.placeholder((64,), name="A")
    B = te.placeholder((64,), name="B")
    C = te.compute((64,), lambda i: A[i] + B[i], name="C")
    _check_add(tvm.build(te.create_schedule(C.op), [A, B, C], target=tgt, name="add"), n=64)
