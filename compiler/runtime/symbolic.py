"""Symbolic parameter shapes: how a dimension is written down and bound at call time.

Role: a kernel built from ``te.var`` shapes receives its shape variables as trailing
scalar arguments; this module describes those dimensions in ``ParamMeta.shape`` and,
at each call, reads the variables from the arrays, checks every dimension and returns
the scalar values to pass.

A dimension is plain data (JSON-safe once tuples become lists, so module save/load and
the kernel cache can store it):
- an ``int``: a fixed extent;
- a ``str``: a shape variable, named as in ``FuncMeta.shape_vars``;
- a tuple ``(op, a, b)`` with ``op`` in ``OPS`` and ``a``/``b`` dimensions: an integer
  expression of shape variables (``n + 1``, ``(n + 3) // 4``).
Invariants: evaluating a dimension never executes code (a fixed table of integer
operations); every shape variable appears as a whole dimension of some parameter,
which is where its value is read from (checked by ``check_shape_vars``).
"""
from __future__ import annotations

import operator
from collections.abc import Callable

from ..tir import expr as E

OPS: dict[str, Callable[[int, int], int]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "floordiv": operator.floordiv, "floormod": operator.mod, "min": min, "max": max}
_TIR_OPS = {E.Add: "add", E.Sub: "sub", E.Mul: "mul", E.FloorDiv: "floordiv",
            E.FloorMod: "floormod", E.Min: "min", E.Max: "max"}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%"}
_LIMITS = {"int32": 2**31 - 1, "int64": 2**63 - 1}


def encode_dim(e, names: dict):
    """The plain-data form of TIR dimension ``e``; ``names`` maps shape Vars to names.

    Raises ValueError for a dimension that is not an integer expression of them.
    """
    t = type(e)
    if t is E.IntImm:
        return int(e.value)
    if t is E.Var:
        return names[e]
    if t is E.Cast and e.dtype.startswith("int"):
        return encode_dim(e.value, names)
    op = _TIR_OPS.get(t)
    if op is None:
        raise ValueError(f"dimension {e} is not an integer expression of shape variables "
                         "(+, -, *, //, %, min, max)")
    return (op, encode_dim(e.a, names), encode_dim(e.b, names))


def check_dim(dim, where: str):
    """``dim`` validated and normalized (lists from JSON become tuples)."""
    if isinstance(dim, bool):
        raise ValueError(f"{where}: shape dimension {dim!r} must be an int, a variable name "
                         "or an (op, a, b) expression")
    if isinstance(dim, int) or (hasattr(dim, "__index__") and not isinstance(dim, str)):
        if int(dim) < 0:
            raise ValueError(f"{where}: shape dimension {dim!r} is negative")
        return int(dim)
    if isinstance(dim, str) and dim:
        return dim
    if isinstance(dim, (tuple, list)) and len(dim) == 3 and dim[0] in OPS:
        return (dim[0], check_dim(dim[1], where), check_dim(dim[2], where))
    raise ValueError(f"{where}: shape dimension {dim!r} must be a non-negative int, a "
                     f"variable name or (op, a, b) with op in {sorted(OPS)}")


def dim_names(dim) -> list:
    """Shape variable names used in ``dim``."""
    if isinstance(dim, str):
        return [dim]
    if isinstance(dim, tuple):
        return dim_names(dim[1]) + dim_names(dim[2])
    return []


def check_shape_vars(fname: str, params, shape_vars) -> tuple:
    """Validate ``shape_vars`` ((name, dtype) pairs) against the params' dimensions."""
    out = []
    for sv in shape_vars:
        if not isinstance(sv, (tuple, list)) or len(sv) != 2 or sv[1] not in _LIMITS \
                or not isinstance(sv[0], str) or not sv[0]:
            raise ValueError(f"function {fname!r}: shape variable {sv!r} must be (name, "
                             "'int32' or 'int64')")
        out.append((sv[0], sv[1]))
    declared = [n for n, _ in out]
    if len(set(declared)) != len(declared):
        raise ValueError(f"function {fname!r}: shape variables {declared} repeat a name")
    whole = {d for p in params for d in p.shape if isinstance(d, str)}
    used = {n for p in params for d in p.shape for n in dim_names(d)}
    for n in sorted(used - set(declared)):
        raise ValueError(f"function {fname!r}: dimension name {n!r} is not one of its "
                         f"shape variables {declared}")
    for n in declared:
        if n not in whole:
            raise ValueError(f"function {fname!r}: shape variable {n!r} is not a whole "
                             "dimension of any parameter, so a call cannot tell its value; "
                             "expected some parameter of shape (..., n, ...)")
    return tuple(out)


def eval_dim(dim, env: dict) -> int:
    if isinstance(dim, int):
        return dim
    if isinstance(dim, str):
        return env[dim]
    return OPS[dim[0]](eval_dim(dim[1], env), eval_dim(dim[2], env))


def dim_text(dim) -> str:
    """``dim`` as the user wrote it (``n + 1``)."""
    if isinstance(dim, (int, str)):
        return str(dim)
    a, b = dim_text(dim[1]), dim_text(dim[2])
    sym = _SYMBOL.get(dim[0])
    return f"({a} {sym} {b})" if sym else f"{dim[0]}({a}, {b})"


def shape_text(shape) -> str:
    inner = ", ".join(dim_text(d) for d in shape)
    return f"({inner}{',' if len(shape) == 1 else ''})"


def bind_shapes(fm, arrays) -> tuple:
    """``(concrete shapes, shape variable values)`` of a call of ``fm`` on ``arrays``.

    Each variable takes its value from the first parameter where it is a whole
    dimension; then every dimension of every array is checked against its value.
    Raises ValueError naming the parameter, the dimension, what was expected and what
    was passed.  Arguments without a ``shape`` are left to the caller's type check.
    """
    env, origin = {}, {}
    for p, a in zip(fm.params, arrays):
        shape = getattr(a, "shape", None)
        if shape is None:
            continue
        if len(shape) != len(p.shape):
            raise ValueError(f"function {fm.name!r} param {p.name!r}: expected "
                             f"{len(p.shape)} dimensions {shape_text(p.shape)}, got an array "
                             f"of shape {tuple(shape)}")
        for d, dim in enumerate(p.shape):
            if isinstance(dim, str) and dim not in env:
                env[dim], origin[dim] = int(shape[d]), (p.name, d)
    shapes = []
    for p, a in zip(fm.params, arrays):
        shape = getattr(a, "shape", None)
        if shape is None or any(n not in env for d in p.shape for n in dim_names(d)):
            shapes.append(p.shape)
            continue
        want = tuple(eval_dim(d, env) for d in p.shape)
        for d, (w, g) in enumerate(zip(want, shape)):
            if w != g:
                raise ValueError(_mismatch(fm.name, p.name, d, p.shape[d], w, g, env, origin))
        shapes.append(want)
    values = []
    for name, dtype in fm.shape_vars:
        v = env.get(name, 0)
        if v > _LIMITS[dtype]:
            pname, d = origin[name]
            raise ValueError(f"function {fm.name!r} param {pname!r}: dimension {d} is shape "
                             f"variable {name!r} of dtype {dtype}, which cannot hold {v}")
        values.append(v)
    return tuple(shapes), values


def _mismatch(fname, pname, d, dim, want, got, env, origin) -> str:
    where = f"function {fname!r} param {pname!r}: dimension {d}"
    if isinstance(dim, int):
        return f"{where}: expected {want}, got {got}"
    if isinstance(dim, str):
        src, sd = origin[dim]
        return (f"{where} is shape variable {dim}, which is {want} (from param {src!r} "
                f"dimension {sd}); expected {want}, got {got}")
    bound = ", ".join(f"{n} = {env[n]} from param {origin[n][0]!r} dimension {origin[n][1]}"
                      for n in dict.fromkeys(dim_names(dim)))
    return f"{where} is {dim_text(dim)}; expected {want} ({bound}), got {got}"
