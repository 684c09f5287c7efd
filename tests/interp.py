"""Test helper: a reference interpreter for lowered TIR (numpy semantics) and helpers to
compare two PrimFuncs on random arguments."""
import math

import numpy as np

from compiler.tir import dtype as dt
from compiler.tir import expr as E
from compiler.tir import stmt as S

_NP = {"float32": np.float32, "float64": np.float64, "int32": np.int64, "int64": np.int64,
       "int8": np.int64, "int16": np.int64, "bool": np.bool_, "uint8": np.int64}

def _fdiv(a, b):
    return np.floor_divide(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) \
        else a // b

def _tdiv(a, b):
    q = np.trunc(np.asarray(a, dtype=np.float64) / b).astype(np.int64)
    return q if q.ndim else int(q)

_BIN = {
    E.Add: lambda a, b: a + b, E.Sub: lambda a, b: a - b, E.Mul: lambda a, b: a * b,
    E.FloorDiv: _fdiv, E.FloorMod: lambda a, b: a - _fdiv(a, b) * b,
    E.Min: np.minimum, E.Max: np.maximum,
    E.LT: lambda a, b: a < b, E.LE: lambda a, b: a <= b, E.GT: lambda a, b: a > b,
    E.GE: lambda a, b: a >= b, E.EQ: lambda a, b: a == b, E.NE: lambda a, b: a != b,
    E.And: np.logical_and, E.Or: np.logical_or,
}

_CALL = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "fabs": np.abs,
         "floor": np.floor, "ceil": np.ceil}

class Interp:
    def __init__(self, buffers: dict):
        self.mem = dict(buffers)     # Buffer -> flat numpy array
        self.env: dict = {}

    # ------------------------------------------------------------------ expressions
    def ev(self, e):
        t = type(e)
        if t is E.IntImm:
            return bool(e.value) if e.dtype == "bool" else e.value
        if t is E.FloatImm:
            return _NP[e.dtype](e.value)
        if t is E.Var:
            return self.env[e]
        if t in _BIN:
            a, b = self.ev(e.a), self.ev(e.b)
            r = _BIN[t](a, b)
            if dt.is_float(e.dtype):
                r = _cast_np(r, e.dtype)
            return r
        if t is E.Div:
            a, b = self.ev(e.a), self.ev(e.b)
            return _cast_np(a / b, e.dtype) if dt.is_float(e.dtype) else _tdiv(a, b)
        if t is E.Mod:
            a, b = self.ev(e.a), self.ev(e.b)
            return a - _tdiv(a, b) * b
        if t is E.Not:
            return np.logical_not(self.ev(e.a))
        if t is E.Select:
            c, x, y = self.ev(e.condition), self.ev(e.true_value), self.ev(e.false_value)
            return np.where(c, x, y) if isinstance(c, np.ndarray) or isinstance(x, np.ndarray) \
                else (x if c else y)
        if t is E.Ramp:
            b, s = self.ev(e.base), self.ev(e.stride)
            return b + s * np.arange(e.lanes, dtype=np.int64)
        if t is E.Broadcast:
            v = self.ev(e.value)
            return np.full(e.lanes, v, dtype=_NP[dt.element_of(e.dtype)])
        if t is E.Cast:
            return _cast_np(self.ev(e.value), e.dtype)
        if t is E.Let:
            self.env[e.var] = self.ev(e.value)
            return self.ev(e.body)
        if t is E.BufferLoad:
            return self.mem[e.buffer][self.offset(e.buffer, e.indices)]
        if t is E.Call:
            return self.call(e)
        raise NotImplementedError(t.__name__)

    def call(self, e):
        if e.op == "if_then_else":
            c = self.ev(e.args[0])
            if isinstance(c, np.ndarray):
                return np.where(c, self.ev(e.args[1]), self.ev(e.args[2]))
            return self.ev(e.args[1]) if c else self.ev(e.args[2])
        return _cast_np(_CALL[e.op](*[self.ev(a) for a in e.args]), e.dtype)

    def offset(self, buf, indices):
        idx = [self.ev(i) for i in indices]
        if len(idx) == 1 and (len(buf.shape) != 1 or not buf.strides):
            return idx[0]
        strides = [self.ev(s) for s in buf.strides] if buf.strides else \
            [math.prod(self.ev(s) for s in buf.shape[k + 1:]) for k in range(len(buf.shape))]
        return sum(i * s for i, s in zip(idx, strides)) if idx else 0

    # ------------------------------------------------------------------ statements
    def run(self, s):
        t = type(s)
        if t is S.SeqStmt:
            for x in s.seq:
                self.run(x)
        elif t is S.For:
            lo, n = self.ev(s.min), self.ev(s.extent)
            for k in range(lo, lo + n):
                self.env[s.loop_var] = k
                self.run(s.body)
        elif t is S.BufferStore:
            off = self.offset(s.buffer, s.indices)
            self.mem[s.buffer][off] = self.ev(s.value)
        elif t is S.Allocate:
            b = s.buffer
            size = self.ev(b.strides[0]) * self.ev(b.shape[0]) if b.strides else \
                math.prod(self.ev(x) for x in b.shape)
            # garbage, not zeros: a pass that reads before writing must be caught
            self.mem[b] = np.full(size, 12345, dtype=_NP[b.dtype])
            self.run(s.body)
        elif t is S.IfThenElse:
            if self.ev(s.condition):
                self.run(s.then_case)
            elif s.else_case is not None:
                self.run(s.else_case)
        elif t is S.LetStmt:
            self.env[s.var] = self.ev(s.value)
            self.run(s.body)
        elif t is S.AttrStmt:
            self.run(s.body)
        elif t is S.Evaluate:
            self.ev(s.value)
        else:
            raise NotImplementedError(t.__name__)

def _cast_np(v, dtype):
    base = dt.element_of(dtype)
    if isinstance(v, np.ndarray):
        return v.astype(_NP[base])
    if base == "bool":
        return bool(v)
    if dt.is_float(base):
        return _NP[base](v)
    return int(v)

def run_func(func, arrays):
    """Run ``func`` on numpy ``arrays`` (one per param, modified in place)."""
    assert all(a.flags.c_contiguous for a in arrays)   # reshape(-1) must be a view
    Interp({b: a.reshape(-1) for b, a in zip(func.params, arrays)}).run(func.body)
    return arrays

def random_args(func, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for b in func.params:
        shape = tuple(x.value for x in b.shape)
        if dt.is_float(b.dtype):
            out.append(rng.standard_normal(shape).astype(_NP[b.dtype]))
        else:
            out.append(rng.integers(-50, 50, shape).astype(np.int64))
    return out

def assert_same_result(f, g, seed=0):
    """``f`` and ``g`` compute bit-identical outputs from the same random inputs."""
    a = run_func(f, random_args(f, seed))
    b = run_func(g, random_args(f, seed))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)

def ci(v, dtype="int32"):
    return E.IntImm(dtype, v)

def fi(v, dtype="float32"):
    return E.FloatImm(dtype, v)

def tiled_matmul(M=64, N=64, K=64, tile=8, kfactor=4, annotations=()):
    """A hand-lowered tiled matmul: 6 loops around the update, a cache-write local buffer,
    a vectorized inner loop of ``tile`` and an unrolled loop of ``kfactor``."""
    A = S.decl_buffer((M, K), "float32", "A")
    B = S.decl_buffer((K, N), "float32", "B")
    C = S.decl_buffer((M, N), "float32", "C")
    CL = S.decl_buffer((tile, tile), "float32", "C_local")
    io, jo, ko, ki, ii, ji = (E.Var(n) for n in ("i_o", "j_o", "k_o", "k_i", "i_i", "j_i"))
    ii2, ji2, ii3, ji3 = E.Var("i_i"), E.Var("j_i"), E.Var("i_i"), E.Var("j_i")
    init = S.For(ii2, ci(0), ci(tile), "serial", S.For(
        ji2, ci(0), ci(tile), "vectorized", S.BufferStore(CL, fi(0.0), (ii2, ji2))))
    kk = ko * kfactor + ki
    upd = S.BufferStore(CL, E.BufferLoad(CL, (ii, ji)) + E.BufferLoad(A, (io * tile + ii, kk))
                        * E.BufferLoad(B, (kk, jo * tile + ji)), (ii, ji))
    upd = S.For(ko, ci(0), ci(K // kfactor), "serial", S.For(
        ki, ci(0), ci(kfactor), "unrolled", S.For(
            ii, ci(0), ci(tile), "serial", S.For(ji, ci(0), ci(tile), "vectorized", upd))))
    wb = S.For(ii3, ci(0), ci(tile), "serial", S.For(
        ji3, ci(0), ci(tile), "vectorized",
        S.BufferStore(C, E.BufferLoad(CL, (ii3, ji3)), (io * tile + ii3, jo * tile + ji3))))
    body = S.Allocate(CL, S.seq(init, upd, wb))
    body = S.For(io, ci(0), ci(M // tile), "parallel",
                 S.For(jo, ci(0), ci(N // tile), "serial", body), annotations)
    return S.PrimFunc("mm", (A, B, C), body)
