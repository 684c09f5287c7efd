"""Helpers of the topi tests: random inputs, build-and-run, and ``verify``, which builds
an op twice -- with its default CPU schedule and with a plain ``te.create_schedule`` --
and compares both against a numpy reference, so every kernel is checked under the
schedule users get and under the naive loop nest; ``expect_error`` checks a TEError's
message."""
import numpy as np
import pytest

from compiler import TEError, build, te, topi

RNG = np.random.default_rng(7)


def rand(shape, dtype="float32", lo=-1.0, hi=1.0):
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if dtype.startswith("int") or dtype.startswith("uint"):
        return RNG.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def shape_of(t):
    return tuple(int(d.value) for d in t.shape)


def run(s, inputs, outs, arrays, name="topi_kernel"):
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    mod = build(s, list(inputs) + list(outs), name=name)
    res = [np.zeros(shape_of(o), dtype=o.dtype) for o in outs]
    mod(*arrays, *res)
    return res


def verify(inputs, outs, arrays, refs, schedule=None, rtol=1e-5, atol=1e-5, plain=True):
    """Check ``outs`` against ``refs`` under the default schedule and a plain one."""
    outs_l = outs if isinstance(outs, (list, tuple)) else [outs]
    refs_l = refs if isinstance(refs, (list, tuple)) else [refs]
    schedule = schedule or topi.generic.schedule_default
    scheds = [("default", schedule(outs_l if len(outs_l) > 1 else outs_l[0]))]
    if plain:
        scheds.append(("plain", te.create_schedule([o.op for o in outs_l])))
    for label, s in scheds:
        got = run(s, inputs, outs_l, arrays)
        for g, r in zip(got, refs_l):
            r = np.asarray(r)
            assert g.shape == r.shape, (label, g.shape, r.shape)
            if g.dtype == np.bool_ or np.issubdtype(g.dtype, np.integer):
                np.testing.assert_array_equal(g, r.astype(g.dtype), err_msg=label)
            else:
                np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, err_msg=label)


def expect_error(fn, *fragments):
    """``fn()`` raises TEError whose message contains every fragment."""
    with pytest.raises(TEError) as info:
        fn()
    msg = str(info.value)
    for frag in fragments:
        assert frag in msg, msg
    return msg
