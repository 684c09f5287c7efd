"""``te.extern``: a stage whose body is a TIR statement (usually a packed call) over
buffers, opaque to the scheduler (TVM's ExternOp).

Invariants: an ExternOp is immutable; ``input_placeholders[k]`` / ``output_placeholders[k]``
are the Buffers ``fcompute`` saw for ``inputs[k]`` / output ``k``.  Lowering binds them to
the real buffers of those tensors (whole tensors, no offsets), so an extern stage always
runs at the root, and its inputs must live in memory (never inlined).
"""
from __future__ import annotations

from ..errors import TEError
from ..tir import dtype as dt
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.op import const
from .tensor import Operation, Tensor

__all__ = ["ExternOp", "extern"]


class ExternOp(Operation):
    __slots__ = ("name", "tag", "attrs", "inputs", "input_placeholders",
                 "output_placeholders", "body")

    def __init__(self, name, tag, attrs, inputs, input_placeholders, output_placeholders,
                 body):
        self.name, self.tag, self.attrs = name, tag, dict(attrs or {})
        self.inputs = tuple(inputs)
        self.input_placeholders = tuple(input_placeholders)
        self.output_placeholders = tuple(output_placeholders)
        self.body = body

    @property
    def num_outputs(self) -> int:
        return len(self.output_placeholders)

    def output_shape(self, i):
        return self.output_placeholders[i].shape

    def output_dtype(self, i):
        return self.output_placeholders[i].dtype

    @property
    def input_tensors(self) -> list:
        return list(self.inputs)


def _shape(shape, name: str) -> tuple:
    out = []
    for s in shape:
        v = s.value if isinstance(s, E.IntImm) else s
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise TEError(f"extern {name}: shape {tuple(shape)} has extent {s!r}; expected "
                          "non-negative ints (static shapes)")
        out.append(const(v, "int32"))
    return tuple(out)


def _is_single(shape) -> bool:
    return len(shape) == 0 or isinstance(shape[0], (int, E.PrimExpr))


def _check_buffers(bufs, shapes, dtypes, what: str, name: str) -> tuple:
    if len(bufs) != len(shapes):
        raise TEError(f"extern {name}: {len(bufs)} {what} for {len(shapes)} tensors")
    for b, shp, d in zip(bufs, shapes, dtypes):
        if not isinstance(b, S.Buffer):
            raise TEError(f"extern {name}: {what} entry {b!r} is not a tir.Buffer")
        if b.dtype != d or [int(x.value) for x in b.shape] != [int(x.value) for x in shp]:
            raise TEError(f"extern {name}: buffer {b.name} is {b.dtype}{list(b.shape)}, "
                          f"expected {d}{list(shp)}")
    return tuple(bufs)


def extern(shape, inputs, fcompute, name: str = "extern", dtype=None, in_buffers=None,
           out_buffers=None, tag: str = "", attrs=None):
    """Tensor(s) computed by the statement ``fcompute(ins, outs)`` (TVM's te.extern).

    ``shape`` is one shape or a list of shapes (one per output); ``dtype`` one dtype or
    a list (default: the first input's, else float32).  ``fcompute`` gets Buffers and
    returns a Stmt or an expression (a ``tir.call_packed``, evaluated for its effect).
    """
    shapes = [shape] if _is_single(shape) else list(shape)
    shapes = [_shape(s, name) for s in shapes]
    inputs = list(inputs)
    for t in inputs:
        if not isinstance(t, Tensor):
            raise TEError(f"extern {name}: input {t!r} is not a te Tensor")
    if dtype is None:
        dtype = inputs[0].dtype if inputs else "float32"
    dtypes = list(dtype) if isinstance(dtype, (list, tuple)) else [dtype] * len(shapes)
    if len(dtypes) != len(shapes):
        raise TEError(f"extern {name}: {len(dtypes)} dtypes for {len(shapes)} outputs")
    for d in dtypes:
        try:
            dt.parse(d)
        except ValueError as err:
            raise TEError(f"extern {name}: {err}") from None
    ins = _check_buffers(in_buffers, [t.shape for t in inputs], [t.dtype for t in inputs],
                         "in_buffers", name) if in_buffers is not None else tuple(
        S.decl_buffer(t.shape, t.dtype, t.op.name) for t in inputs)
    outs = _check_buffers(out_buffers, shapes, dtypes, "out_buffers", name) \
        if out_buffers is not None else tuple(
            S.decl_buffer(s, d, name if len(shapes) == 1 else f"{name}_{k}")
            for k, (s, d) in enumerate(zip(shapes, dtypes)))
    body = fcompute(list(ins), list(outs))
    if isinstance(body, E.PrimExpr):
        body = S.Evaluate(body)
    if not isinstance(body, S.Stmt):
        raise TEError(f"extern {name}: fcompute returned {body!r}; expected a tir statement "
                      "(e.g. ib.get()) or a call expression (tir.call_packed(...))")
    op = ExternOp(name, tag, attrs, inputs, ins, outs, body)
    res = [op.output(k) for k in range(op.num_outputs)]
    return res[0] if len(res) == 1 else res
