"""Default CPU schedules of 2-D convolutions (NCHW, NHWC, grouped, depthwise, transposed).

Direct convolution with a register tile of output values kept in a local accumulator
(cache_write, or the conv itself when an elementwise epilogue is the tiled output):
- NCHW (and grouped/transposed NCHW): tile = 4 output channels x 2 output rows x one
  SIMD vector of output columns (8 accumulators, measured best on AVX2), x 4 rows on
  AVX-512 (16 of its 32 registers; ``nchw_register_tile``): the columns are loaded
  straight from the padded input rows, the filter taps are scalar broadcasts, the tile
  and the kernel width are unrolled.
- NHWC: tile = OW_T columns x OC_T channels with the channels vectorized (the HWIO
  filter row is contiguous), the input value broadcast: the GEMM micro-kernel shape.
- depthwise NCHW: tile = OH_T rows x OW_T columns of one channel.
- NCHW with a packed filter (O/v, I, KH, KW, v) (relay's AlterOpLayout packs constant
  weights of convs whose output width does not fill SIMD vectors): tile = v output
  channels (one or two vectors) x a few output pixels; channels are vectorized (the
  accumulator is stored channel-innermost by the ``permute_local_layout`` pass).
Loop order walks output rows outermost (input rows stay in cache for every channel
block); the parallel loop is rows (channels for depthwise, the batch when it is large),
and the padding stage is computed per parallel iteration (scalar: see ``attach_pad``).

Invariants: the parallel loop is one plain (unfused) loop, so the tile loops carry no
div/mod index arithmetic; accumulator tiles use at most 8-12 vector registers on AVX2
and 16 of AVX-512's 32 (28 for a map of at most 7 rows, all rows at once); vector tiles
divide the extent they split (a predicated vector loop would run scalar).
"""
from __future__ import annotations

from ...te.tensor import ComputeOp
from .. import tag as _tag
from ..utils import const_tuple
from .fused import schedule_anchored
from .injective import schedule_injective_from_existing
from .utils import attach_pad, epilogue_of, num_cores, pick_factor, vector_lanes

_NCHW_TAGS = (_tag.CONV2D_NCHW, _tag.GROUP_CONV2D_NCHW, _tag.CONV2D_TRANSPOSE_NCHW)
_NHWC_TAGS = (_tag.CONV2D_NHWC, _tag.GROUP_CONV2D_NHWC)


def _kind(op) -> str:
    return op.tag.split(",")[0] if isinstance(op, ComputeOp) else ""


def _inputs_to_place(s, anchor):
    """Pad/dilate and kernel-transform producers of ``anchor`` (not inlined by prepare)."""
    pads: list = []
    others: list = []
    for t in anchor.input_tensors:
        if isinstance(t.op, ComputeOp):
            (pads if t.op.tag.startswith(_tag.INJECTIVE + ",") else others).append(t)
    return pads, others


def _acc_and_out(s, anchor, outs):
    epi = epilogue_of(s, anchor, outs)
    c = anchor.output(0)
    if epi is None:
        return s.cache_write(c, "local"), c
    return c, epi.output(0)


def _col_tile(ow: int, lanes: int) -> int:
    """Vector length along the output width: the largest divisor of the width up to one
    SIMD vector (a predicated tail would make the whole vector loop scalar, and 14-lane
    vectors measured 2x slower than 7 lanes x 2 rows); a short prime width is one vector.
    """
    best = next(f for f in range(min(lanes, ow), 0, -1) if ow % f == 0)
    return ow if best < lanes // 2 and ow <= 2 * lanes else best


def nchw_col_tile(ow: int, lanes: int) -> int:
    """The NCHW conv's vector length along the output width: ``_col_tile``, except that
    on 16-lane vectors a width that half vectors divide but whole ones do not gets half
    vectors, a native AVX2-width operation, rather than a wider odd one.  Measured on
    AVX-512 (2 threads, same run), 56-wide 3x3 convs: 8 lanes 206 GFLOPS, 14 lanes 163;
    where half vectors do not divide (28, 14, 7) the rule stays ``_col_tile``'s (7 lanes
    was +4..6% on the stride-1 28- and 14-wide maps but -5% on the stride-2 28-wide)."""
    half = lanes // 2
    if lanes >= 16 and ow % lanes and ow % half == 0:
        return half
    return _col_tile(ow, lanes)


def _root_pad(s, pads):
    for p in pads:
        s[p].compute_root()
        schedule_injective_from_existing(s, p)


def _attach_acc(s, acc, st, xo) -> tuple:
    """The accumulator computed at the output tile loop ``xo``: (its stage, its spatial
    axes, its reduction axes)."""
    s[acc].compute_at(st, xo)
    a = s[acc]
    return a, a.op.axis, a.op.reduce_axis


def packed_col_tile(ow: int) -> int:
    """Output columns per register tile of the packed-filter schedule: the largest divisor
    of the width up to ``PACKED_MAX_COLS`` (0 when it would be below 4: too few
    accumulators to hide the FMA latency, so the filter is not worth packing)."""
    best = next(f for f in range(min(PACKED_MAX_COLS, ow), 0, -1) if ow % f == 0)
    return best if best >= 4 else 0


# 7 accumulator vectors + the filter vector + broadcasts fit AVX2's 16 registers (8 and
# more spilled: 16 channels x 7 columns ran at half the speed of 8 x 7)
PACKED_MAX_COLS = 7


def packed_register_tile(oc: int, oh: int, ow: int, v: int) -> tuple:
    """(channel vectors, rows, columns) of the packed schedule's accumulator tile.

    Two channel vectors x 4 columns (or x 2 rows x 2 columns) make 8 accumulators, and
    each broadcast input value then feeds two FMAs; measured against one vector x 7
    columns on 3x3 and 1x1 ResNet convolutions (one core, same run): stride 2 +7..25%,
    1x1 +15..30%, stride 1 +4..7%.  A width without such a divisor (7) keeps one vector
    x ``packed_col_tile`` columns: a tail tile measured slower there.

    AVX-512 (16 lanes) has 32 vector registers: two channel vectors x 7 columns (14
    accumulators) or x 2 rows x 4 columns (16) then fit, and measured on ResNet-18's
    layers (2 threads, same run) +9% on 512 channels x 7 x 7, +5% on its stride-2 conv,
    +2..4% on the 14-, 28- and 56-wide ones."""
    if oc % (2 * v) == 0 and v >= 16:
        if ow % 7 == 0:
            return 2, 1, 7
        if ow % 4 == 0 and oh % 2 == 0:
            return 2, 2, 4
    if oc % (2 * v) == 0:
        if ow % 4 == 0:
            return 2, 1, 4
        if ow % 2 == 0 and oh % 2 == 0:
            return 2, 2, 2
    return 1, 1, packed_col_tile(ow) or min(ow, PACKED_MAX_COLS)


def _schedule_packed(s, anchor, outs):
    """Filter packed "OIHW{v}o" (``topi.nn.conv2d_nchw_packed``): a register tile of one
    or two channel vectors x a few output pixels (``packed_register_tile``), every
    reduction loop outside it; each input value is a broadcast, each filter tap one
    contiguous vector load.  The accumulator is stored channel-innermost by
    ``permute_local_layout``."""
    pads, others = _inputs_to_place(s, anchor)
    for t in others:
        s[t].compute_inline()
    n, oc, oh, ow = const_tuple(anchor.output_shape(0))
    v = int(anchor.attrs["kernel_vector"])
    nv, rows, cols = packed_register_tile(oc, oh, ow, v)
    acc, out = _acc_and_out(s, anchor, outs)
    st = s[out]
    b, f, y, x = st.op.axis
    fo, fi = st.split(f, factor=v * nv)
    if rows > 1:
        yo, yi = st.split(y, factor=rows)
    xo, xi = st.split(x, factor=cols)
    st.reorder(b, fo, *((yo, xo, yi) if rows > 1 else (y, xo)), fi, xi)
    st.parallel(b if n >= 2 * num_cores() else fo)
    st.vectorize(xi)
    a, (ab, af, ay, ax), (rc, ry, rx) = _attach_acc(s, acc, st, xo)
    if nv > 1:
        afo, afi = a.split(af, factor=v)
        a.reorder(ab, rc, ry, rx, ay, ax, afo, afi)
        a.unroll(afo)
    else:
        afi = af
        a.reorder(ab, rc, ry, rx, ay, ax, afi)
    if rows > 1:
        a.unroll(ay)
    a.unroll(ax)
    a.vectorize(afi)
    _root_pad(s, pads)
    return s


def nchw_register_tile(oc: int, oh: int, ow: int, lanes: int) -> tuple:
    """(channels, rows, columns) of the direct NCHW conv's accumulator tile on
    ``lanes``-wide vectors (16 lanes: AVX-512, 32 vector registers)."""
    ow_t = nchw_col_tile(ow, lanes)
    vecs = -(-ow_t // lanes)
    # 8 accumulator vectors: 4 channels x 2 rows x 1 vector measured best on 16 vector
    # registers (each broadcast filter tap feeds 2 rows, each input vector 4 channels);
    # AVX-512's 32 registers hold 4 channels x 4 rows: measured on Zen 4 (2 threads,
    # same run), 56x56 3x3 205 -> 224 GFLOPS, 28x28 3x3 161 -> 192, 1x1 +9..13%
    oh_t = 2 if vecs == 1 and oh % 2 == 0 else 1
    budget = 8
    if vecs == 1 and lanes >= 16 and oh % 4 == 0:
        oh_t, budget = 4, 16
    if vecs == 1 and 2 * ow_t <= lanes and oh <= 7 and lanes >= 16:
        # a narrow map on 32 vector registers: every row of it at once, so each
        # broadcast filter tap feeds oh FMAs (28 accumulators for 4 channels x 7 rows)
        oh_t, budget = oh, 28
    prefer = (8, 4, 2, 6, 3, 1) if oh_t == 1 and vecs == 1 else (4, 8, 2, 6, 3, 1)
    oc_t = pick_factor(oc, [f for f in prefer if f * oh_t * vecs <= budget])
    return oc_t, oh_t, ow_t


def schedule_conv2d_nchw_from_existing(s, anchor, outs):
    """Direct NCHW convolution schedule for ``anchor`` (conv2d/group/transpose NCHW)."""
    if anchor.attrs.get("kernel_vector"):
        return _schedule_packed(s, anchor, outs)
    lanes = vector_lanes(anchor.output_dtype(0))
    pads, others = _inputs_to_place(s, anchor)
    for t in others:
        s[t].compute_inline()      # kernel_transform: pure index remapping of the filter
    n, oc, oh, ow = const_tuple(anchor.output_shape(0))
    acc, out = _acc_and_out(s, anchor, outs)
    oc_t, oh_t, ow_t = nchw_register_tile(oc, oh, ow, lanes)
    st = s[out]
    b, f, y, x = st.op.axis
    fo, fi = st.split(f, factor=oc_t)
    yo, yi = st.split(y, factor=oh_t)
    xo, xi = st.split(x, factor=ow_t)
    rows = yo.dom.extent.value
    # few row tiles split unevenly over the cores (7 rows on 2 cores idle one an eighth
    # of the time): then the channel blocks are the parallel loop
    by_channel = n < 2 * num_cores() and rows < 8 * num_cores() and \
        fo.dom.extent.value >= 4 * rows
    st.reorder(b, fo, yo, xo, fi, yi, xi) if by_channel else \
        st.reorder(b, yo, fo, xo, fi, yi, xi)
    if n >= 2 * num_cores():
        st.parallel(b)
    elif by_channel:
        st.parallel(fo)
    elif rows > 1:
        st.parallel(yo)
    st.vectorize(xi)
    a, (ab, af, ay, ax), (rc, ry, rx) = _attach_acc(s, acc, st, xo)
    a.reorder(ab, rc, ry, rx, af, ay, ax)
    a.unroll(rx)
    a.unroll(af)
    a.unroll(ay)
    a.vectorize(ax)
    if pads and n == 1 and rows > 1 and not by_channel:
        attach_pad(s, pads[0], st, yo)     # the input rows of one row tile, per thread
    else:
        _root_pad(s, pads)
    return s


def schedule_conv2d_nhwc_from_existing(s, anchor, outs):
    """Direct NHWC convolution schedule (channels vectorized) for ``anchor``."""
    lanes = vector_lanes(anchor.output_dtype(0))
    pads, _ = _inputs_to_place(s, anchor)
    n, oh, ow, oc = const_tuple(anchor.output_shape(0))
    acc, out = _acc_and_out(s, anchor, outs)
    oc_t = pick_factor(oc, (2 * lanes, lanes, 12, 8, 6, 4, 3, 2))
    vecs = -(-oc_t // lanes)
    ow_t = pick_factor(ow, [w for w in (6, 4, 7, 5, 3, 2, 1) if w * vecs <= 12])
    st = s[out]
    b, y, x, f = st.op.axis
    xo, xi = st.split(x, factor=ow_t)
    fo, fi = st.split(f, factor=oc_t)
    st.reorder(b, y, xo, fo, xi, fi)
    if n >= 2 * num_cores():
        st.parallel(b)
    elif oh > 1:
        st.parallel(y)
    st.vectorize(fi)
    s[acc].compute_at(st, fo)
    a = s[acc]
    ab, ay, ax, af = a.op.axis
    ry, rx, rc = a.op.reduce_axis
    a.reorder(ab, ay, ry, rx, rc, ax, af)
    a.unroll(ax)
    a.vectorize(af)
    if pads and n == 1 and oh > 1:
        attach_pad(s, pads[0], st, y)
    else:
        _root_pad(s, pads)
    return s


def schedule_depthwise_conv2d_nchw_from_existing(s, anchor, outs):
    """Depthwise NCHW schedule: per channel, OH_T x OW_T tiles of vector accumulators."""
    lanes = vector_lanes(anchor.output_dtype(0))
    pads, _ = _inputs_to_place(s, anchor)
    n, c, oh, ow = const_tuple(anchor.output_shape(0))
    acc, out = _acc_and_out(s, anchor, outs)
    ow_t = _col_tile(ow, lanes)
    vecs = -(-ow_t // lanes)
    oh_t = pick_factor(oh, [h for h in (4, 3, 2, 1) if h * vecs <= 8])
    st = s[out]
    b, f, y, x = st.op.axis
    yo, yi = st.split(y, factor=oh_t)
    xo, xi = st.split(x, factor=ow_t)
    st.reorder(b, f, yo, xo, yi, xi)
    if n >= 2 * num_cores():
        st.parallel(b)
    elif c > 1:
        st.parallel(f)
    st.vectorize(xi)
    s[acc].compute_at(st, xo)
    a = s[acc]
    ab, af, ay, ax = a.op.axis
    ry, rx = a.op.reduce_axis
    a.reorder(ab, af, ry, rx, ay, ax)
    a.unroll(ry)
    a.unroll(rx)
    a.unroll(ay)
    a.vectorize(ax)
    mult = c // const_tuple(pads[0].shape)[1] if pads else 1
    if pads and n == 1 and mult == 1:
        attach_pad(s, pads[0], st, f)      # one padded channel plane per iteration
    else:
        _root_pad(s, pads)
    return s


def _schedule(outs, kinds, fn):
    return schedule_anchored(outs, {k: fn for k in kinds})


def schedule_conv2d_nchw(outs):
    """Schedule ``nn.conv2d_nchw`` / group conv NCHW and their elementwise consumers."""
    return _schedule(outs, _NCHW_TAGS, schedule_conv2d_nchw_from_existing)


def schedule_conv2d_nhwc(outs):
    """Schedule ``nn.conv2d_nhwc`` / group conv NHWC and their elementwise consumers."""
    return _schedule(outs, _NHWC_TAGS, schedule_conv2d_nhwc_from_existing)


def schedule_depthwise_conv2d_nchw(outs):
    """Schedule ``nn.depthwise_conv2d_nchw`` and its elementwise consumers."""
    return _schedule(outs, (_tag.DEPTHWISE_CONV2D_NCHW,),
                     schedule_depthwise_conv2d_nchw_from_existing)


def schedule_conv2d_transpose_nchw(outs):
    """Schedule ``nn.conv2d_transpose_nchw`` and its elementwise consumers."""
    return _schedule(outs, (_tag.CONV2D_TRANSPOSE_NCHW,), schedule_conv2d_nchw_from_existing)


schedule_group_conv2d_nchw = schedule_conv2d_nchw
