"""Signatures of compiled functions, as the runtime needs them to check call arguments.

Role: describe each exported kernel (name, and per parameter: name, static shape, dtype,
whether the kernel may write it, the alignment the code assumes) in plain picklable
values, so a worker process can ship them beside the object code.

Invariants:
- Shapes are tuples of dimensions: non-negative Python ints, or for a kernel built from
  ``te.var`` shapes, shape variable names and ``(op, a, b)`` expressions of them (see
  runtime.symbolic).  ``FuncMeta.shape_vars`` lists the variables as ``(name, dtype)``
  in the order the kernel receives them, after the buffer pointers; static kernels have
  none.  Everything is plain data (ints, strs, tuples) so it can be serialized.
- Dtypes are scalar TIR dtype strings that map to one numpy dtype ("bool" is numpy's
  1-byte bool).
- ``written`` is True when the kernel may store through the pointer.  Meta written by hand
  as ``(name, shape, dtype)`` does not know, so it is conservatively True.
- ``scalar`` params are passed by value (a ``te.var`` argument of the PrimFunc): shape
  ``()``, never written, called with a Python number.
- ``align`` is the byte alignment the generated code assumes for the pointer; the Module
  guarantees it, copying misaligned arrays when needed.  None means "not known yet":
  ``resolve_alignment`` reads the ``align N`` parameter attributes of the IR's ``define``
  line, and without IR it becomes DEFAULT_ALIGN (64), safe for any code.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from ..errors import BuildError
from ..tir import dtype as tdtype
from ..tir.analysis import shape_vars as _shape_vars
from ..tir.expr import IntImm, Var
from ..tir.functor import post_order_visit
from ..tir.stmt import Buffer, BufferStore, PrimFunc
from .symbolic import check_dim, check_shape_vars, encode_dim

DEFAULT_ALIGN = 64


@dataclass(frozen=True)
class ParamMeta:
    name: str
    shape: tuple
    dtype: str
    written: bool = True
    align: int | None = None
    scalar: bool = False

    @property
    def np_dtype(self) -> np.dtype:
        return numpy_dtype(self.dtype)


@dataclass(frozen=True)
class FuncMeta:
    name: str
    params: tuple   # of ParamMeta
    shape_vars: tuple = ()   # of (name, dtype): trailing scalar arguments


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype of a scalar TIR dtype ("bool" -> np.bool_, 1 byte)."""
    try:
        base, lanes = tdtype.parse(dtype)
    except (ValueError, TypeError):
        raise ValueError(f"dtype {dtype!r}: expected a scalar dtype such as 'float32'") from None
    if lanes != 1 or base == "handle":
        raise ValueError(f"dtype {dtype!r}: a kernel parameter needs a scalar element dtype")
    return np.dtype(np.bool_) if base == "bool" else np.dtype(base)


def normalize_funcs_meta(funcs_meta) -> tuple:
    """Validate ``funcs_meta`` and return a tuple of FuncMeta (first one = entry function).

    Accepts FuncMeta objects or ``(func_name, [(param_name, shape, dtype), ...])`` pairs
    (a third item lists the shape variables); a param may also be a ParamMeta or a
    4/5-tuple adding ``written`` and ``align``.
    """
    if isinstance(funcs_meta, (FuncMeta, str)) or not hasattr(funcs_meta, "__iter__"):
        raise TypeError(f"funcs_meta {funcs_meta!r}: expected a list of "
                        "(name, [(param, shape, dtype), ...]) entries")
    out, seen = [], set()
    for entry in funcs_meta:
        fm = entry if isinstance(entry, FuncMeta) else _func_from_tuple(entry)
        if fm.name in seen:
            raise ValueError(f"funcs_meta: function {fm.name!r} is listed twice")
        seen.add(fm.name)
        params = tuple(_param(fm.name, p) for p in fm.params)
        try:
            svars = check_shape_vars(fm.name, params, fm.shape_vars)
        except ValueError as err:
            raise ValueError(str(err)) from None
        out.append(FuncMeta(fm.name, params, svars))
    if not out:
        raise ValueError("funcs_meta is empty: expected at least one function")
    return tuple(out)


def _func_from_tuple(entry) -> FuncMeta:
    if not isinstance(entry, (tuple, list)) or len(entry) not in (2, 3):
        raise TypeError(f"funcs_meta entry {entry!r}: expected (func_name, params)")
    name, params = entry[0], entry[1]
    svars = tuple(tuple(v) if isinstance(v, list) else v for v in entry[2]) \
        if len(entry) == 3 else ()
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"funcs_meta entry {entry!r}: function name must be an identifier")
    if not isinstance(params, (tuple, list)):
        raise TypeError(f"function {name!r}: params {params!r} must be a list of tuples")
    return FuncMeta(name, tuple(params), svars)


def _param(fname: str, p) -> ParamMeta:
    if not isinstance(p, ParamMeta):
        if not isinstance(p, (tuple, list)) or not 3 <= len(p) <= 6:
            raise TypeError(f"function {fname!r}: param {p!r} must be (name, shape, dtype"
                            "[, written[, align[, scalar]]])")
        p = ParamMeta(*p)
    where = f"function {fname!r} param {p.name!r}"
    if not isinstance(p.name, str):
        raise TypeError(f"function {fname!r}: param name {p.name!r} must be a str")
    shape = p.shape
    if not isinstance(shape, (tuple, list)):
        raise ValueError(f"{where}: shape {shape!r} must be a tuple of non-negative ints")
    shape = tuple(check_dim(d, where) for d in shape)
    if not isinstance(p.dtype, str):
        raise TypeError(f"{where}: dtype {p.dtype!r} must be a str such as 'float32'")
    numpy_dtype(p.dtype)
    align = p.align
    if align is not None and (not isinstance(align, int) or align < 1 or align & (align - 1)):
        raise ValueError(f"{where}: align {align!r} must be a positive power of two or None")
    if p.scalar and shape:
        raise ValueError(f"{where}: a scalar param has shape (), got {shape!r}")
    return ParamMeta(p.name, shape, p.dtype, bool(p.written) and not p.scalar, align,
                     bool(p.scalar))


def meta_from_primfunc(func: PrimFunc) -> FuncMeta:
    """FuncMeta of a lowered PrimFunc: shapes, dtypes, which params it writes."""
    if not isinstance(func, PrimFunc):
        raise TypeError(f"meta_from_primfunc({func!r}): expected a tir.PrimFunc")
    written = _written_data_vars(func)
    for b in func.params:
        if not isinstance(b, (Buffer, Var)):
            raise BuildError(f"PrimFunc {func.name!r}: parameter {b!r} is not a Buffer or a "
                             "scalar Var")
    svars = _shape_vars(func)
    explicit = [v for v in svars if any(v is b for b in func.params)]
    if explicit:
        raise BuildError(f"PrimFunc {func.name!r}: shape variable {explicit[0].name!r} is also "
                         "passed as a scalar argument; shape variables are read from the "
                         "arrays' shapes, so leave it out of the argument list")
    names = _unique_names(svars)
    params = []
    for b in func.params:
        if isinstance(b, Var):      # a scalar passed by value
            params.append(ParamMeta(b.name, (), b.dtype, False, None, True))
            continue
        try:
            shape = [encode_dim(d, names) for d in b.shape]
        except ValueError as err:
            raise BuildError(f"PrimFunc {func.name!r} buffer {b.name!r}: {err}") from None
        if b.strides and (not all(isinstance(d, int) for d in shape)
                          or [_const(s) for s in b.strides] != _row_major(shape)):
            raise BuildError(f"PrimFunc {func.name!r} buffer {b.name!r}: strides "
                             f"{b.strides!r} are not row-major; parameters must be compact")
        # align=None: what the code assumes is read from the IR by resolve_alignment.
        params.append(ParamMeta(b.name, tuple(shape), b.dtype, b.data in written))
    for v in svars:
        if v.dtype not in ("int32", "int64"):
            raise BuildError(f"PrimFunc {func.name!r}: shape variable {v.name!r} has dtype "
                             f"{v.dtype}; expected int32 or int64")
    fm = FuncMeta(func.name, tuple(params), tuple((names[v], v.dtype) for v in svars))
    try:
        return _checked(fm)
    except ValueError as err:
        raise BuildError(str(err)) from None


def _unique_names(svars) -> dict:
    """Var -> name; distinct Vars that share a name get ``_1``, ``_2`` suffixes."""
    out, used = {}, set()
    for v in svars:
        n, k = v.name, 0
        while n in used:
            k += 1
            n = f"{v.name}_{k}"
        used.add(n)
        out[v] = n
    return out


def _checked(fm: FuncMeta) -> FuncMeta:
    return normalize_funcs_meta([fm])[0]


def _written_data_vars(func: PrimFunc) -> set:
    """Data Vars the body may write through: stored to, or used as a raw pointer.

    Buffers are compared by their ``data`` Var, not by object, because flattening makes new
    Buffer objects over the same pointer.  A pointer passed around as an expression (to an
    intrinsic, a Let) could be written behind our back, so it counts as written.
    """
    out = set()

    def visit(node):
        if isinstance(node, BufferStore):
            out.add(node.buffer.data)
        elif isinstance(node, Var) and node.dtype == "handle":
            out.add(node)   # (a BufferLoad's buffer is opaque to the walker: reads only)

    post_order_visit(func.body, visit)
    return out


def _const(e):
    return int(e.value) if isinstance(e, IntImm) else e


def _row_major(shape) -> list:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return out[::-1]


_DEFINE = re.compile(r'^define\b[^@\n]*@("[^"]+"|[A-Za-z0-9_.$]+)\s*\(', re.M)
_ALIGN_ATTR = re.compile(r"\balign\s+(\d+)")


def ir_param_alignments(ir_text: str) -> dict:
    """{function name: (claimed byte alignment or None, ...)} from the IR's define lines."""
    out = {}
    for m in _DEFINE.finditer(ir_text):
        depth, i, start = 1, m.end(), m.end()
        params, cur = [], start
        while i < len(ir_text) and depth:
            c = ir_text[i]
            if c in "([{<":
                depth += 1
            elif c in ")]}>":
                depth -= 1
            elif c == "," and depth == 1:
                params.append(ir_text[cur:i])
                cur = i + 1
            i += 1
        params.append(ir_text[cur:i - 1])
        aligns = []
        for p in params:
            a = _ALIGN_ATTR.search(p)
            aligns.append(int(a.group(1)) if a else None)
        out[m.group(1).strip('"')] = tuple(aligns) if any(p.strip() for p in params) else ()
    return out


def resolve_alignment(metas: tuple, ir_text: str | None) -> tuple:
    """Fill every ``align=None`` with what the code assumes (see the module docstring).

    With the IR: the parameter's ``align N`` attribute, at least the element size (LLVM
    assumes natural alignment for plain loads).  Without it: DEFAULT_ALIGN.
    """
    claimed = ir_param_alignments(ir_text) if ir_text else {}
    out = []
    for fm in metas:
        aligns = claimed.get(fm.name)
        nargs = len(fm.params) + len(fm.shape_vars)
        if aligns is not None and len(aligns) != nargs:
            raise BuildError(f"function {fm.name!r}: funcs_meta lists {nargs} "
                             f"params but the IR defines it with {len(aligns)}")
        params = []
        for k, p in enumerate(fm.params):
            if p.align is None:
                a = DEFAULT_ALIGN if aligns is None else max(aligns[k] or 1,
                                                             p.np_dtype.itemsize)
                p = replace(p, align=a)
            params.append(p)
        out.append(replace(fm, params=tuple(params)))
    return tuple(out)
