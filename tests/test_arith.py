"""Tests of tir.arith (bounds, simplification, linearity) and tir.analysis."""
import random

import pytest
from interp import Interp

from compiler import tir
from compiler.tir import expr as E
from compiler.tir import stmt as S
from compiler.tir.analysis import (
    count_nodes,
    free_vars,
    structural_equal,
    structural_hash,
    undefined_buffers,
    uses_var,
)
from compiler.tir.arith import const_int_bound, detect_linear, simplify_expr


def c(v, dtype="int32"):
    return E.IntImm(dtype, v)


i, j, k = E.Var("i"), E.Var("j"), E.Var("k")
io, ii = E.Var("io"), E.Var("ii")
x = E.Var("x", "float32")


def s(e, **ranges):
    vr = {globals()[n]: r for n, r in ranges.items()}
    return str(simplify_expr(e, vr))


# ------------------------------------------------------------------ bounds
@pytest.mark.parametrize("expr, ranges, want", [
    (lambda: io * 16 + ii, {"io": (0, 3), "ii": (0, 15)}, (0, 63)),
    (lambda: i - j, {"i": (0, 5), "j": (2, 3)}, (-3, 3)),
    (lambda: i * j, {"i": (-2, 3), "j": (-1, 4)}, (-8, 12)),
    (lambda: E.FloorDiv(i, c(4)), {"i": (-5, 9)}, (-2, 2)),
    (lambda: E.FloorMod(i, c(8)), {"i": (0, 100)}, (0, 7)),
    (lambda: E.FloorMod(i, c(8)), {"i": (9, 12)}, (1, 4)),
    (lambda: E.FloorMod(i, c(8)), {"i": (0, 3)}, (0, 3)),
    (lambda: E.Min(i, c(4)), {"i": (0, 10)}, (0, 4)),
    (lambda: E.Max(i, j), {"i": (0, 10)}, (0, None)),
    (lambda: E.Max(i, j), {"i": (0, 10), "j": (-3, 12)}, (0, 12)),
    (lambda: E.Select(E.LT(i, c(2)), c(5), j), {"j": (0, 3)}, (0, 5)),
    (lambda: E.Cast("int64", i), {"i": (1, 2)}, (1, 2)),
    (lambda: E.Cast("int8", i), {"i": (0, 1000)}, (-128, 127)),
    (lambda: i + j, {"i": (0, 4)}, (None, None)),
    (lambda: E.Mod(i, c(5)), {"i": (-20, 20)}, (-4, 4)),
    (lambda: E.Div(i, c(5)), {"i": (-20, 24)}, (-4, 4)),
])
def test_const_int_bound(expr, ranges, want):
    vr = {globals()[n]: r for n, r in ranges.items()}
    assert const_int_bound(expr(), vr) == want


# ------------------------------------------------------------------ simplify: golden cases
def test_linear_canonicalization():
    assert s((i * 16 + j) - i * 16) == "j"
    assert s(E.Mul(E.Mul(i, c(4)), c(8))) == "i * 32"
    assert s(E.Mul(E.Add(i, c(1)), c(4)) - c(4) + j * 2 - j) == "i * 4 + j"
    assert s(E.Sub(c(16), E.Add(i, c(3)))) == "13 - i"
    assert s(E.Sub(E.Sub(i, j), i)) == "j * -1"
    assert s(E.Add(E.Add(j, i), E.Sub(c(2), j))) == "i + 2"


def test_terms_are_collected_structurally():
    # two distinct but equal subtrees cancel
    a1, a2 = E.FloorDiv(i, c(3)), E.FloorDiv(i, c(3))
    assert s(E.Sub(E.Add(a1, j), a2)) == "j"


def test_floordiv_floormod_rules():
    assert s(E.FloorDiv(io * 16 + ii, c(16)), ii=(0, 15)) == "io"
    assert s(E.FloorMod(io * 16 + ii, c(16)), ii=(0, 15)) == "ii"
    # without a range for ii the remainder part must stay
    assert s(E.FloorDiv(io * 16 + ii, c(16))) == "io + ii // 16"
    assert s(E.FloorMod(io * 16 + ii, c(16))) == "ii % 16"
    assert s(E.FloorDiv(io * 16 + ii + 20, c(16)), ii=(0, 11)) == "io + 1"
    assert s(E.FloorMod(io * 16 + ii + 20, c(16)), ii=(0, 11)) == "ii + 4"
    # gcd rule: fused axes split by a divisor of the fused extent
    assert s(E.FloorDiv(io * 8 + ii, c(16)), ii=(0, 7)) == "io // 2"
    assert s(E.FloorMod(io * 8 + ii, c(16)), ii=(0, 7)) == "io % 2 * 8 + ii"
    assert s(E.FloorDiv(E.FloorDiv(i, c(4)), c(8))) == "i // 32"
    assert s(E.FloorMod(E.FloorMod(i, c(16)), c(4))) == "i % 4"
    assert s(E.FloorDiv(i, c(8)) * 8 + E.FloorMod(i, c(8))) == "i"
    assert s(E.FloorDiv(c(-7), c(2))) == "-4"
    assert s(E.FloorMod(c(-7), c(2))) == "1"


def test_truncating_division_only_when_non_negative():
    assert s(E.Div(io * 16 + ii, c(16)), io=(0, 9), ii=(0, 15)) == "io"
    assert s(E.Div(i, c(4))) == "T.Div(i, 4)"        # i may be negative: untouched
    assert s(E.Div(c(-7), c(2))) == "-3"
    assert s(E.Mod(c(-7), c(2))) == "-1"


def test_bounds_decide_comparisons_min_max():
    assert s(E.LT(i, c(64)), i=(0, 63)) == "T.bool(True)"
    assert s(E.GE(i, c(64)), i=(0, 63)) == "T.bool(False)"
    assert s(E.LT(io * 8 + ii, c(64)), io=(0, 7), ii=(0, 7)) == "T.bool(True)"
    assert s(E.LT(io * 8 + ii, c(60)), io=(0, 7), ii=(0, 7)) == "io * 8 + ii < 60"
    assert s(E.EQ(i + 1, i)) == "T.bool(False)"
    assert s(E.NE(i * 2, i + i)) == "T.bool(False)"
    assert s(E.Min(i, c(100)), i=(0, 63)) == "i"
    assert s(E.Max(i + 4, i)) == "i + 4"
    assert s(E.Min(E.Min(i, c(10)), c(4))) == "T.min(i, 4)"
    assert s(E.Min(i, j)) == "T.min(i, j)"
    assert s(E.LT(i + 12, c(14))) == "i < 2"                 # constants move right
    assert s(E.LT(c(3), j + 1 - k)) == "j - k > 2"
    assert s(E.LT(i * 8 + 6, c(30))) == "i < 3"              # divided by the gcd
    assert s(E.LE(i * 8 - j * 4, c(30))) == "i * 2 - j <= 7"
    assert s(E.GE(i * 8, c(30))) == "i >= 4"
    assert s(E.GT(i * 8, c(-30))) == "i > -4"
    assert s(E.EQ(i * 8, c(30))) == "T.bool(False)"
    assert s(E.NE(i * 8 + j * 2, c(30))) == "i * 4 + j != 15"
    assert s(E.LT(E.FloorDiv(i * 8 + j, c(10)), c(6))) == "i * 8 + j < 60"
    assert s(E.LE(E.FloorDiv(i, c(10)), c(6))) == "i <= 69"
    assert s(E.GT(E.FloorDiv(i, c(10)), c(6))) == "i > 69"
    assert s(E.GE(c(6), E.FloorDiv(i + 3, c(10)))) == "i <= 66"


def test_select_logic_and_pinned_vars():
    t, f = c(1, "bool"), c(0, "bool")
    assert s(E.Select(E.LT(i, c(8)), j, k), i=(0, 7)) == "j"
    assert s(E.Call("int32", "if_then_else", (E.GE(i, c(8)), j, k)), i=(0, 7)) == "k"
    assert s(E.And(E.LT(i, j), t)) == "i < j"
    assert s(E.Or(E.LT(i, j), t)) == "T.bool(True)"
    assert s(E.And(E.LT(i, j), f)) == "T.bool(False)"
    assert s(E.Not(E.Not(E.LT(i, j)))) == "i < j"
    assert s(E.Not(E.LT(i, j))) == "i >= j"
    assert s(E.Not(E.LT(x, x))) == "not (x < x)"         # floats: NaN makes both false
    assert s(E.Select(E.LT(i, j), k + 1, 1 + k)) == "k + 1"
    assert s(i * 8 + j, i=(3, 3)) == "j + 24"           # an extent-1 loop var is a constant


def test_floats_are_never_reassociated():
    assert s(E.Add(E.Add(x, E.FloatImm("float32", 1.0)), E.FloatImm("float32", 2.0))) == \
        "x + T.float32(1.0) + T.float32(2.0)"
    assert s(E.Mul(x, E.FloatImm("float32", 1.0))) == "x"
    assert s(E.Add(x, E.FloatImm("float32", 0.0))) == "x"
    assert s(E.Sub(x, x)) == "x - x"                     # NaN/inf: not zero
    assert s(E.Mul(E.FloatImm("float32", 2.0), E.FloatImm("float32", 3.5))) == "T.float32(7.0)"
    assert s(E.Cast("float32", E.Add(c(2), c(3)))) == "T.float32(5.0)"


def test_vector_ramp_algebra():
    r = E.Ramp(i * 8, c(1), 8)
    assert s(E.Add(r, E.Broadcast(j, 8))) == "T.Ramp(i * 8 + j, 1, 8)"
    assert s(E.Mul(r, E.Broadcast(c(2), 8))) == "T.Ramp(i * 16, 2, 8)"
    assert s(E.Sub(r, r)) == "T.Broadcast(0, 8)"
    assert s(E.FloorDiv(E.Ramp(i * 8, c(1), 8), E.Broadcast(c(8), 8))) == "T.Broadcast(i, 8)"
    assert s(E.FloorMod(E.Ramp(i * 8, c(1), 4), E.Broadcast(c(8), 4))) == "T.Ramp(0, 1, 4)"
    assert s(E.FloorDiv(E.Ramp(i, c(1), 8), E.Broadcast(c(8), 8))) == \
        "T.Ramp(i, 1, 8) // T.Broadcast(8, 8)"


def test_unchanged_expressions_keep_identity():
    exprs = [i * 16 + j, E.FloorDiv(i, c(3)) + j * 2 - 7, E.Min(i, j),
             E.Add(x, E.FloatImm("float32", 1.0)), E.LT(i, j),
             E.BufferLoad(S.decl_buffer((16,), "float32", "A"), (i * 4 + j,))]
    for e in exprs:
        assert simplify_expr(e) is e, str(e)
    e = E.Add(i * 16 + j, c(0))
    assert simplify_expr(e) is not e and str(simplify_expr(e)) == "i * 16 + j"


# ------------------------------------------------------------------ simplify: brute force
RANGES = {"i": (0, 7), "j": (0, 15), "k": (-4, 4), "io": (0, 3)}
VARS = [globals()[n] for n in RANGES]


def _ev(e, env):
    it = Interp({})
    it.env = dict(env)
    return it.ev(e)


def _rand_expr(rng, depth):
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(VARS) if rng.random() < 0.7 else c(rng.randint(-6, 20))
    a, b = _rand_expr(rng, depth - 1), _rand_expr(rng, depth - 1)
    op = rng.choice(["add", "sub", "mulc", "mul", "fdiv", "fmod", "min", "max", "sel",
                     "tdiv"])
    if op == "add":
        return E.Add(a, b)
    if op == "sub":
        return E.Sub(a, b)
    if op == "mulc":
        return E.Mul(a, c(rng.randint(-3, 9)))
    if op == "mul":
        return E.Mul(a, b)
    if op == "fdiv":
        return E.FloorDiv(a, c(rng.randint(1, 17)))
    if op == "fmod":
        return E.FloorMod(a, c(rng.randint(1, 17)))
    if op == "tdiv":
        return E.Div(a, c(rng.randint(1, 9)))
    if op == "min":
        return E.Min(a, b)
    if op == "max":
        return E.Max(a, b)
    cmp = rng.choice([E.LT, E.LE, E.GT, E.GE, E.EQ, E.NE])
    return E.Select(cmp(a, b), a, b)


def test_simplify_preserves_values_random():
    rng = random.Random(1234)
    ranges = {v: RANGES[v.name] for v in VARS}
    changed = 0
    for _ in range(400):
        e = _rand_expr(rng, 4)
        se = simplify_expr(e, ranges)
        changed += se is not e
        lo, hi = const_int_bound(e, ranges)
        for _ in range(12):
            env = {v: rng.randint(*RANGES[v.name]) for v in VARS}
            wv, gv = _ev(e, env), _ev(se, env)
            assert wv == gv, f"{e}  ->  {se} at {env}: {wv} != {gv}"
            assert (lo is None or lo <= wv) and (hi is None or wv <= hi), (str(e), lo, hi, wv)
    assert changed > 100    # the generator exercises real rewrites


def test_simplify_is_idempotent_random():
    rng = random.Random(99)
    ranges = {v: RANGES[v.name] for v in VARS}
    for _ in range(200):
        e = simplify_expr(_rand_expr(rng, 3), ranges)
        assert structural_equal(simplify_expr(e, ranges), e), str(e)


def test_comparisons_random():
    rng = random.Random(7)
    ranges = {v: RANGES[v.name] for v in VARS}
    for _ in range(300):
        a, b = _rand_expr(rng, 2), _rand_expr(rng, 2)
        e = rng.choice([E.LT, E.LE, E.GT, E.GE, E.EQ, E.NE])(a, b)
        se = simplify_expr(e, ranges)
        for _ in range(8):
            env = {v: rng.randint(*RANGES[v.name]) for v in VARS}
            assert bool(_ev(e, env)) == bool(_ev(se, env)), f"{e} -> {se} at {env}"


def test_linear_comparisons_random():
    rng = random.Random(11)
    ranges = {v: RANGES[v.name] for v in VARS}
    for _ in range(300):
        lhs = c(rng.randint(-20, 20))
        for v in rng.sample(VARS, rng.randint(1, 3)):
            lhs = lhs + v * rng.choice([-12, -4, -3, 2, 4, 6, 8, 16])
        if rng.random() < 0.3:
            lhs = E.FloorDiv(lhs, c(rng.randint(1, 12)))
        cls = rng.choice([E.LT, E.LE, E.GT, E.GE, E.EQ, E.NE])
        e = cls(lhs, c(rng.randint(-40, 40))) if rng.random() < 0.5 else \
            cls(c(rng.randint(-40, 40)), lhs)
        se = simplify_expr(e)
        for _ in range(10):
            env = {v: rng.randint(*RANGES[v.name]) for v in VARS}
            assert bool(_ev(e, env)) == bool(_ev(se, env)), f"{e} -> {se} at {env}"
        assert structural_equal(simplify_expr(se, ranges), simplify_expr(e, ranges))


# ------------------------------------------------------------------ detect_linear
def test_detect_linear():
    base, stride = detect_linear(io * 16 + ii * 2 + 5, ii)
    assert str(base) == "io * 16 + 5" and str(stride) == "2"
    base, stride = detect_linear(io * 16 + 5, ii)
    assert str(base) == "io * 16 + 5" and str(stride) == "0"
    base, stride = detect_linear((ii + io) * j - ii, ii)     # symbolic stride
    assert str(base) == "io * j" and str(stride) == "j - 1"
    assert detect_linear(E.FloorDiv(ii, c(2)), ii) is None
    assert detect_linear(ii * ii, ii) is None
    assert detect_linear(x, ii) is None                       # not an integer


# ------------------------------------------------------------------ analysis
def test_structural_equal_and_hash():
    assert structural_equal(i * 4 + j, i * 4 + j)
    assert not structural_equal(i * 4 + j, i * 4 + k)
    assert not structural_equal(i * 4 + j, i * 5 + j)
    assert structural_equal(i * 4 + j, k * 4 + i, map_free_vars=True)
    assert not structural_equal(i + i, k + j, map_free_vars=True)
    assert structural_hash(i * 4 + j) == structural_hash(i * 4 + j)
    A = S.decl_buffer((8,), "float32", "A")
    v1, v2 = E.Var("v"), E.Var("w")
    loop1 = S.For(v1, c(0), c(8), "serial", S.BufferStore(A, E.FloatImm("float32", 1.0), (v1,)))
    loop2 = S.For(v2, c(0), c(8), "serial", S.BufferStore(A, E.FloatImm("float32", 1.0), (v2,)))
    loop3 = S.For(v2, c(0), c(8), "serial", S.BufferStore(A, E.FloatImm("float32", 2.0), (v2,)))
    assert structural_equal(loop1, loop2)      # bound loop vars are matched by position
    assert not structural_equal(loop1, loop3)


def test_uses_var_free_vars_count():
    A = S.decl_buffer((8,), "float32", "A")
    body = S.For(i, c(0), j, "serial", S.BufferStore(A, E.FloatImm("float32", 1.0), (i + k,)))
    assert uses_var(body, k) and uses_var(body, {j}) and not uses_var(body, io)
    assert free_vars(body) == [j, k]
    assert count_nodes(i * 4 + j) == 5
    f = S.PrimFunc("f", (A,), body)
    assert undefined_buffers(f) == []
    B = S.decl_buffer((8,), "float32", "B")
    g = S.PrimFunc("g", (A,), S.BufferStore(B, E.FloatImm("float32", 1.0), (c(0),)))
    assert undefined_buffers(g) == [B]


@pytest.mark.parametrize("x,y", [(2**62 + 3, 3), (-(2**62) - 5, 7), (2**60 + 1, -(2**31)),
                                 (-7, 2), (7, -2), (-7, -2), (0, 5)])
def test_integer_constant_folding_is_exact_beyond_2_53(x, y):
    q = tir.truncdiv(tir.const(x, "int64"), tir.const(y, "int64"))
    r = tir.truncmod(tir.const(x, "int64"), tir.const(y, "int64"))
    want_q = abs(x) // abs(y) * (1 if (x >= 0) == (y > 0) else -1)
    assert (q.value, r.value) == (want_q, x - want_q * y)
    fq = tir.floordiv(tir.const(x, "int64"), tir.const(y, "int64"))
    assert fq.value == x // y
