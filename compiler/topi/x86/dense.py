"""Default CPU schedules of dense, matmul and batch_matmul (with fused epilogues).

Two register-blocked kernels, chosen by which operand has the reduction axis innermost
(the op's ``transpose_a``/``transpose_b`` attrs):
- "panel" (B is (K, N), j contiguous): C is accumulated in a local MR x NR tile
  (cache_write, or the anchor itself when an elementwise epilogue is the output); NR
  columns (two SIMD vectors when they divide N) are vectorized, the MR rows and k (by 4)
  unrolled: one broadcast of A and NR/lanes vector FMAs per row and k.  B is packed into
  a contiguous (K, NR) panel by a cache_read at the column-panel loop, so every row tile
  walking that panel reads it from cache.  Panels are the parallel loop when there are
  enough of them, else row blocks are.
- "dot" (A and B both have k contiguous, as dense's weight (N, K)): the reduction is
  split by the SIMD width and rfactor'ed into lane-wise partial sums kept in an MR x NR
  tile of vector registers (6x2 / 4x3 / 4x2 ...: at most 12 accumulators), the lanes
  are summed once per output.  Blocks of 16 column tiles (32-48 weight rows) stay in L2
  while all row tiles stream by; the blocks are the parallel loop.
- "packed" (dense_pack: the weight is (N/nr, K, nr), relay's AlterOpLayout packs constant
  weights): the panel kernel with NR = nr and no packing stage: an MR x nr tile of vector
  accumulators, one broadcast of A and nr/lanes contiguous weight loads per row and k
  (measured 220-230 GFLOPS on AVX-512 against 150-190 for "dot" on BERT's shapes).
- "layout-free" (``layout_free=True``, the default the auto-scheduler starts from when it
  rewrites layouts): a dense whose (N, K) weight is a layout-free placeholder gets the
  packed kernel with the accumulation splitting j by nr itself, so the layout rewrite
  stores the weight as (N/nr, K, nr).  Without the rewrite that kernel would read the
  weight column-wise: a plain build never asks for it.
Elementwise/broadcast consumers of the same shape (bias add, relu, ...) are the tiled
output stage and the accumulation is computed at their tile loop (no extra pass).
Invariant: vector tiles divide the extent they split whenever a divisor exists.
"""
from __future__ import annotations

import functools

from ...te.tensor import ComputeOp, PlaceholderOp
from .. import tag as _tag
from ..utils import const_tuple
from .fused import schedule_anchored
from .utils import epilogue_of, num_cores, pick_factor, vector_factor, vector_lanes

_GEMM_TAGS = (_tag.DENSE, _tag.MATMUL, _tag.BATCH_MATMUL)


def _is_gemm(op) -> bool:
    return op.tag.split(",")[0] in _GEMM_TAGS and bool(op.reduce_axis)


def _operands(anchor):
    """(a, b) input tensors of the product, from its Reduce source."""
    ins = anchor.input_tensors
    return (ins[0], ins[0]) if len(ins) == 1 else (ins[0], ins[1])


def schedule_gemm_from_existing(s, anchor, outs, layout_free: bool = False):
    """Schedule the dense/matmul/batch_matmul ``anchor`` op in ``s``.

    ``layout_free``: the weights the op names in ``layout_free_placeholders`` will be
    stored in the order the kernel reads them (the auto-scheduler's layout rewrite), so
    a dense reads its (N, K) weight as the packed panels of ``dense_pack``."""
    ta = bool(anchor.attrs.get("transpose_a", False))
    tb = bool(anchor.attrs.get("transpose_b", anchor.tag == _tag.DENSE))
    k = anchor.reduce_axis[0].dom.extent.value
    lanes = vector_lanes(anchor.output_dtype(0))
    epi = epilogue_of(s, anchor, outs)
    nr = int(anchor.attrs.get("weight_vector", 0))
    shape = const_tuple(anchor.output_shape(0))
    if nr:
        # the weight is already (N/nr, K, nr): the panel kernel with its tile, no packing
        _panel(s, anchor, epi, lanes, pack=False, tile=(packed_tile(shape[-2], nr, lanes), nr))
        return s
    nr = packed_width(shape[-1], lanes)
    if layout_free and not ta and tb and len(shape) == 2 and nr and _weight_is_layout_free(anchor):
        # the same kernel, its weight packed by the layout rewrite: the accumulation
        # splits j by nr itself, so the rewritten order is (N/nr, K, nr)
        _panel(s, anchor, epi, lanes, pack=False,
               tile=(packed_tile(shape[-2], nr, lanes), nr), split_acc_j=True)
        return s
    kl = next((f for f in (lanes, lanes // 2) if f > 1 and k % f == 0), None)
    if not ta and tb and kl is not None and k >= 2 * kl:
        _dot(s, anchor, epi, kl)
    else:
        _panel(s, anchor, epi, lanes, pack=not tb)
    return s


def _par_loop(st, bax, batch: int, first, ext_first: int):
    """Mark one loop parallel: the batch axis when it has work for every core, else
    ``first`` (a fork-join per batch element is cheap next to a whole GEMM).

    One plain loop: fusing would put div/mod on every index of the tile loops.
    """
    if bax and batch >= 2 * num_cores():
        st.parallel(bax[0] if len(bax) == 1 else st.fuse(*bax))
    elif ext_first > 1:
        st.parallel(first)


def _weight_is_layout_free(anchor) -> bool:
    """The weight (the second operand) is a placeholder the op names layout-free."""
    _a, w = _operands(anchor)
    names = anchor.attrs.get("layout_free_placeholders", ()) or ()
    return isinstance(w.op, PlaceholderOp) and any(t is w or getattr(t, "op", None) is w.op
                                                   for t in names)


def _panel(s, anchor, epi, lanes, pack: bool, tile=None, split_acc_j: bool = False):
    """``tile`` (MR, NR) when the operand's layout fixes it (dense_pack), else chosen;
    ``split_acc_j``: the accumulation splits its own j by NR (for the layout rewrite)."""
    c = anchor.output(0)
    shape = const_tuple(c.shape)
    batch, m, n = (shape if len(shape) == 3 else (1,) + shape)
    if tile is not None:
        mr, nr = tile
    else:
        # a column tile dividing N: a predicated tail would make every vector loop scalar
        nr = vector_factor(n, lanes)
        mr = pick_factor(m, (4, 6, 3, 2, 5, 1)) if nr > lanes else \
            pick_factor(m, (8, 6, 4, 3, 2))
    if epi is None:
        acc, out = s.cache_write(c, "local"), c
    else:
        acc, out = c, epi.output(0)
    a_t, b_t = _operands(s[acc].op)
    st = s[out]
    axes = list(st.op.axis)
    bax = axes[:-2]
    io, ii = st.split(axes[-2], factor=mr)
    jo, ji = st.split(axes[-1], factor=nr)
    m_tiles, n_tiles = io.dom.extent.value, jo.dom.extent.value
    if n_tiles >= 2 * num_cores() or m_tiles < 2:
        # column panels in parallel; each panel packed once, reused by every row tile
        st.reorder(*bax, jo, io, ii, ji)
        _par_loop(st, bax, batch, jo, n_tiles)
        pack_at, acc_at = jo, io
    else:
        # few panels: row blocks in parallel, each packs the panels it walks
        io_o, io_i = st.split(io, nparts=min(m_tiles, 2 * num_cores()))
        st.reorder(*bax, io_o, jo, io_i, ii, ji)
        _par_loop(st, bax, batch, io_o, io_o.dom.extent.value)
        pack_at, acc_at = jo, io_i
    st.vectorize(ji)
    s[acc].compute_at(st, acc_at)
    ast = s[acc]
    aax = list(ast.op.axis)
    (kk,) = ast.op.reduce_axis
    ko, ki = ast.split(kk, factor=pick_factor(kk.dom.extent.value, (4, 2, 1)))
    if split_acc_j:
        jo_acc, ji_acc = ast.split(aax[-1], factor=nr)
        ast.reorder(*aax[:-2], jo_acc, ko, ki, aax[-2], ji_acc)
        vec = ji_acc
    else:
        ast.reorder(*aax[:-2], ko, ki, aax[-2], aax[-1])
        vec = aax[-1]
    ast.unroll(ki)
    ast.unroll(aax[-2])
    ast.vectorize(vec)
    if pack and n > nr and b_t is not a_t:
        if isinstance(b_t.op, ComputeOp):
            s[b_t].compute_root()   # a computed B is materialized before packing
        bb = s.cache_read(b_t, "global", [acc])
        s[bb].compute_at(st, pack_at)
        s[bb].vectorize(s[bb].op.axis[-1])


def packed_width(units: int, lanes: int) -> int:
    """Output units NR of a packed weight block (0: none divides ``units``).

    Three vectors with AVX2's 8 float32 lanes: a 4 x 24 tile of 12 accumulators ran
    161 GFLOPS on BERT's 128 x 768 x 3072 dense on Zen 3 against 144 for 4 x 16.  Two
    with AVX-512 (an 8 x 32 tile of 16 of its 32 registers, as measured there)."""
    widths = (3 * lanes, 2 * lanes, lanes) if lanes <= 8 else (2 * lanes, lanes)
    return next((nr for nr in widths if units % nr == 0), 0)


def packed_tile(m: int, nr: int, lanes: int) -> int:
    """Rows MR of the packed kernel's MR x nr accumulator tile: up to half the vector
    registers (16 of AVX-512's 32, 12 of AVX2's 16) hold accumulators, the rest the
    weight vectors and the broadcast."""
    cap = max(1, (16 if lanes >= 16 else 12) // max(1, nr // lanes))
    # the most rows that divide M (a row tail would guard every unrolled row)
    return max(d for d in range(1, min(m, cap) + 1) if m % d == 0)


def _dot(s, anchor, epi, lanes):
    c = anchor.output(0)
    shape = const_tuple(c.shape)
    batch, m, n = (shape if len(shape) == 3 else (1,) + shape)
    st_c = s[c]
    (kk,) = st_c.op.reduce_axis
    ko, ki = st_c.split(kk, factor=lanes)
    cf = s.rfactor(c, ki, factor_axis=len(shape))
    out = c if epi is None else epi.output(0)
    mr, nr = _dot_tile(m, n)
    st = s[out]
    axes = list(st.op.axis)
    bax = axes[:-2]
    io, jo, ii, ji = st.tile(axes[-2], axes[-1], mr, nr)
    m_tiles, n_tiles = io.dom.extent.value, jo.dom.extent.value
    jb = next((b for b in (16, 8) if n_tiles % b == 0 and n_tiles >= 2 * b), None)
    if jb is not None and m_tiles > 1:
        # blocks of jb*nr weight rows stay in L2 while every row tile of A streams by;
        # the blocks are the parallel loop (each core owns its block)
        jo_o, jo_i = st.split(jo, factor=jb)
        st.reorder(*bax, jo_o, io, jo_i, ii, ji)
        first, ext = (jo_o, n_tiles // jb) if n_tiles // jb >= 2 * num_cores() else \
            (io, m_tiles)
        _par_loop(st, bax, batch, first, ext)
        at = jo_i
    elif m_tiles >= 2 * num_cores() or m_tiles >= n_tiles:
        _par_loop(st, bax, batch, io, m_tiles)
        at = jo
    else:
        st.reorder(*bax, jo, io, ii, ji)
        _par_loop(st, bax, batch, jo, n_tiles)
        at = io
    s[cf].compute_at(st, at)
    if epi is not None:
        s[c].compute_at(st, at)
    fst = s[cf]
    fax = list(fst.op.axis)
    (r,) = fst.op.reduce_axis
    fst.reorder(*fax[:-3], r, fax[-3], fax[-2], fax[-1])
    fst.unroll(fax[-3])
    fst.unroll(fax[-2])
    fst.vectorize(fax[-1])


def _dot_tile(m: int, n: int) -> tuple:
    """An MR x NR tile of vector accumulators (<= 12 of the 16 registers)."""
    if m == 1:
        return 1, pick_factor(n, (8, 6, 4, 5, 3, 2))
    for mr, nr in ((6, 2), (4, 3), (3, 4), (4, 2), (2, 6), (2, 4), (3, 3), (2, 3), (3, 2),
                   (2, 2)):
        if m % mr == 0 and n % nr == 0:
            return mr, nr
    return min(4, m), min(3, n)


def _schedule(outs, layout_free: bool = False):
    gemm = functools.partial(schedule_gemm_from_existing, layout_free=layout_free)
    return schedule_anchored(outs, {k: gemm for k in _GEMM_TAGS})


def schedule_dense(outs, layout_free: bool = False):
    """Schedule ``nn.dense`` (and its elementwise consumers); ``layout_free``: see
    ``schedule_gemm_from_existing``."""
    return _schedule(outs, layout_free)


def schedule_matmul(outs):
    """Schedule ``nn.matmul`` (and its elementwise consumers)."""
    return _schedule(outs)


def schedule_batch_matmul(outs):
    """Schedule ``nn.batch_matmul`` (and its elementwise consumers)."""
    return _schedule(outs)

