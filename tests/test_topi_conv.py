"""Convolutions (NCHW, NHWC, grouped, depthwise, transposed) and pooling vs numpy.

Edge cases: 4-tuple asymmetric padding, stride > 1, dilation, groups, channel
multipliers, odd spatial sizes, ceil_mode, count_include_pad, fused bias + relu.
"""
import numpy as np
import pytest
from topi_helpers import expect_error, rand, verify

import autosched as auto
from autosched import catalog
from autosched.cli import _best_kernel
from compiler import lower, te, topi
from compiler.relay.op import attrs, nn_ref


def conv_ref(x, w, stride, pads, dil, groups=1):
    """NCHW x OIHW reference; pads = (top, left, bottom, right)."""
    t, l, b, r = pads
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), (t, b), (l, r)))
    n, c, h, wd = xp.shape
    oc, icg, kh, kw = w.shape
    oh = (h - (kh - 1) * dil[0] - 1) // stride[0] + 1
    ow = (wd - (kw - 1) * dil[1] - 1) // stride[1] + 1
    out = np.zeros((n, oc, oh, ow))
    ocg = oc // groups
    for g in range(groups):
        for ry in range(kh):
            for rx in range(kw):
                y0, x0 = ry * dil[0], rx * dil[1]
                patch = xp[:, g * icg:(g + 1) * icg, y0:y0 + stride[0] * (oh - 1) + 1:stride[0],
                           x0:x0 + stride[1] * (ow - 1) + 1:stride[1]]
                out[:, g * ocg:(g + 1) * ocg] += np.einsum(
                    "nchw,fc->nfhw", patch, w[g * ocg:(g + 1) * ocg, :, ry, rx])
    return out


def _pad4(p):
    if isinstance(p, int):
        return (p,) * 4
    return (p[0], p[1], p[0], p[1]) if len(p) == 2 else tuple(p)


CONV_CASES = [  # (n, c, h, w), (oc, kh, kw), stride, padding, dilation, groups
    ((1, 4, 10, 10), (8, 3, 3), 1, 1, 1, 1),
    ((2, 3, 9, 11), (5, 3, 2), (2, 1), (1, 0, 2, 1), 1, 1),
    ((1, 6, 12, 12), (4, 3, 3), 2, (1, 1), 2, 1),
    ((1, 8, 7, 9), (12, 1, 1), 1, 0, 1, 4),
    ((1, 4, 16, 16), (4, 3, 3), 1, 1, 1, 4),
    ((1, 3, 11, 13), (4, 3, 3), (1, 2), 1, 1, 1),            # deinterleaved columns
    ((2, 4, 9, 14), (6, 2, 3), 3, (0, 1, 0, 2), (1, 2), 2),
    ((1, 8, 10, 9), (16, 1, 1), 2, 0, 1, 1),                # strided 1x1, no padding
]


@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv2d_nchw(case):
    (n, c, h, w), (oc, kh, kw), st, pad, dil, groups = case
    X = te.placeholder((n, c, h, w), name="X")
    K = te.placeholder((oc, c // groups, kh, kw), name="K")
    x, k = rand((n, c, h, w)), rand((oc, c // groups, kh, kw))
    out = topi.nn.conv2d_nchw(X, K, st, pad, dil, groups=groups)
    st2 = (st, st) if isinstance(st, int) else st
    dil2 = (dil, dil) if isinstance(dil, int) else dil
    ref = conv_ref(x, k, st2, _pad4(pad), dil2, groups)
    verify([X, K], out, [x, k], ref, schedule=topi.x86.schedule_conv2d_nchw, rtol=1e-4,
           atol=1e-4)


def test_conv2d_nchw_bias_relu_fused():
    X = te.placeholder((1, 8, 14, 14), name="X")
    K = te.placeholder((16, 8, 3, 3), name="K")
    B = te.placeholder((16,), name="B")
    out = topi.nn.relu(topi.nn.bias_add(topi.nn.conv2d_nchw(X, K, 1, 1, 1), B, axis=1))
    x, k, b = rand((1, 8, 14, 14)), rand((16, 8, 3, 3)), rand((16,))
    ref = np.maximum(conv_ref(x, k, (1, 1), (1,) * 4, (1, 1)) + b[None, :, None, None], 0)
    verify([X, K, B], out, [x, k, b], ref, schedule=topi.x86.schedule_conv2d_nchw, rtol=1e-4,
           atol=1e-4)
    text = str(lower(topi.x86.schedule_conv2d_nchw(out), [X, K, B, out]))
    assert "T.parallel" in text and "T.Ramp" in text


PACKED_CASES = [  # (n, c, h, w), (oc, k), stride, padding, v, fused bias+relu
    ((1, 8, 7, 7), (16, 3), 1, 1, 8, True),
    ((1, 4, 28, 28), (8, 3), 2, 1, 8, True),             # 14 columns: tile 7
    ((1, 6, 13, 13), (8, 3), 1, 1, 4, False),            # 13 columns: an uneven tile
    ((2, 8, 14, 14), (16, 1), 2, 0, 8, False),           # 1x1, batch 2, conv is the output
    ((1, 8, 16, 16), (32, 3), 1, 1, 8, True),            # 2 channel vectors x 4 columns
    ((1, 8, 20, 20), (16, 3), 2, 1, 8, True),            # 10 x 10 out: 2 x 2 rows x 2 columns
    ((1, 8, 12, 12), (16, 1), 1, 0, 8, False),           # 1x1, 2 x 4 tile, conv is the output
]


@pytest.mark.parametrize("case", PACKED_CASES, ids=str)
def test_conv2d_nchw_packed_filter(case):
    """The "OIHW{v}o" filter (relay's AlterOpLayout) computes the OIHW convolution, with
    the channel-vectorized default schedule and a plain one."""
    (n, c, h, w), (oc, k), st, pad, v, fused = case
    X = te.placeholder((n, c, h, w), name="X")
    K = te.placeholder((oc // v, c, k, k, v), name="K")
    B = te.placeholder((oc,), name="B")
    x, kw, b = rand((n, c, h, w)), rand((oc, c, k, k)), rand((oc,))
    kp = np.ascontiguousarray(kw.reshape(oc // v, v, c, k, k).transpose(0, 2, 3, 4, 1))
    conv = topi.nn.conv2d(X, K, st, pad, 1, "NCHW", f"OIHW{v}o")
    assert conv.op.attrs["kernel_vector"] == v
    ref = conv_ref(x, kw, (st, st), (pad,) * 4, (1, 1))
    if fused:
        out = topi.nn.relu(topi.nn.bias_add(conv, B, axis=1))
        ref = np.maximum(ref + b[None, :, None, None], 0)
        verify([X, K, B], out, [x, kp, b], ref, schedule=topi.x86.schedule_conv2d_nchw,
               rtol=1e-4, atol=1e-4)
    else:
        verify([X, K], conv, [x, kp], ref, schedule=topi.x86.schedule_conv2d_nchw,
               rtol=1e-4, atol=1e-4)
    text = str(lower(topi.x86.schedule_conv2d_nchw(out if fused else conv),
                     [X, K, B, out] if fused else [X, K, conv]))
    # channels vectorized: each filter tap is one contiguous vector load
    assert "K[T.Ramp(" in text and f", 1, {v})]" in text


@pytest.mark.parametrize("oc, oh, ow, tile", [
    (128, 28, 28, (2, 1, 4)), (256, 14, 14, (2, 2, 2)), (512, 7, 7, (1, 1, 7)),
    (8, 28, 28, (1, 1, 7)), (256, 7, 14, (1, 1, 7)), (16, 13, 13, (1, 1, 7))])
def test_packed_register_tile(oc, oh, ow, tile):
    """Two channel vectors when the tile has 8 accumulators without a tail, else one."""
    assert topi.x86.conv2d.packed_register_tile(oc, oh, ow, 8) == tile


@pytest.mark.parametrize("oc, oh, ow, tile", [
    (128, 28, 28, (2, 1, 7)), (256, 14, 14, (2, 1, 7)), (512, 7, 7, (2, 1, 7)),
    (64, 56, 56, (2, 1, 7)), (64, 12, 12, (2, 2, 4)), (64, 9, 12, (2, 1, 4)),
    (16, 7, 7, (1, 1, 7))])
def test_packed_register_tile_on_32_registers(oc, oh, ow, tile):
    """AVX-512 (16 lanes, 32 registers): 14 or 16 accumulators of two channel vectors."""
    assert topi.x86.conv2d.packed_register_tile(oc, oh, ow, 16) == tile


@pytest.mark.parametrize("ow, lanes, tile", [
    (56, 16, 8), (112, 16, 16), (28, 16, 14), (14, 16, 14), (7, 16, 7), (24, 16, 8),
    (56, 8, 8), (28, 8, 7), (14, 8, 7), (7, 8, 7)])
def test_nchw_column_tile(ow, lanes, tile):
    """Half vectors on 16 lanes when they divide the width and whole ones do not; the
    largest divisor up to a vector otherwise (AVX2 unchanged)."""
    assert topi.x86.conv2d.nchw_col_tile(ow, lanes) == tile


@pytest.mark.parametrize("oc, oh, ow, lanes, tile", [
    (64, 56, 56, 16, (4, 4, 8)), (128, 28, 28, 16, (4, 4, 14)), (64, 56, 56, 8, (4, 2, 8)),
    (128, 28, 28, 8, (4, 2, 7)), (256, 14, 14, 16, (4, 2, 14)), (512, 7, 7, 16, (4, 7, 7)),
    (64, 12, 12, 16, (4, 4, 12))])
def test_nchw_register_tile(oc, oh, ow, lanes, tile):
    """4 channels x 4 rows on 32 vector registers (16 lanes) when 4 rows divide the map,
    4 x 2 on 16 registers (AVX2 unchanged), every row of a narrow map."""
    assert topi.x86.conv2d.nchw_register_tile(oc, oh, ow, lanes) == tile


def test_packed_two_channel_vectors_lowered():
    """A 2 x 4 tile: two filter vectors per tap, each broadcast input feeds both."""
    X = te.placeholder((1, 8, 16, 16), name="X")
    K = te.placeholder((4, 8, 3, 3, 8), name="K")
    conv = topi.nn.conv2d(X, K, 1, 1, 1, "NCHW", "OIHW8o")
    text = str(lower(topi.x86.schedule_conv2d_nchw(conv), [X, K, conv]))
    loads = {ln.split("K[T.Ramp(")[1].split(",")[0] for ln in text.splitlines()
             if "K[T.Ramp(" in ln}
    # the second vector is the next filter block: 8 input channels x 3 x 3 taps x 8 later
    assert len(loads) == 2 and any(x.endswith("rx_c * 8 + 576") for x in loads)
    assert text.count("T.Broadcast(pad_temp[") == 8


def test_conv2d_packed_filter_errors():
    X = te.placeholder((1, 8, 7, 7), name="X")
    expect_error(lambda: topi.nn.conv2d(X, te.placeholder((2, 8, 3, 3), name="K"), 1, 1, 1,
                                        "NCHW", "OIHW8o"), "nn.conv2d_nchw_packed", "Filter")
    expect_error(lambda: topi.nn.conv2d(X, te.placeholder((2, 4, 3, 3, 8), name="K"), 1, 1, 1,
                                        "NCHW", "OIHW8o"), "nn.conv2d_nchw_packed", "8 channels")
    expect_error(lambda: topi.nn.conv2d(X, te.placeholder((2, 4, 3, 3, 8), name="K"), 1, 1, 1,
                                        "NCHW", "OIHW8o", groups=2), "nn.conv2d", "OIHW<v>o")


@pytest.mark.parametrize("case", CONV_CASES[:4], ids=str)
def test_conv2d_nhwc(case):
    (n, c, h, w), (oc, kh, kw), st, pad, dil, groups = case
    X = te.placeholder((n, h, w, c), name="X")
    K = te.placeholder((kh, kw, c // groups, oc), name="K")
    x, k = rand((n, h, w, c)), rand((kh, kw, c // groups, oc))
    out = topi.nn.conv2d_nhwc(X, K, st, pad, dil, groups=groups)
    st2 = (st, st) if isinstance(st, int) else st
    dil2 = (dil, dil) if isinstance(dil, int) else dil
    ref = conv_ref(x.transpose(0, 3, 1, 2), k.transpose(3, 2, 0, 1), st2, _pad4(pad), dil2,
                   groups).transpose(0, 2, 3, 1)
    verify([X, K], out, [x, k], ref, schedule=topi.x86.schedule_conv2d_nhwc, rtol=1e-4,
           atol=1e-4)


def test_conv2d_dispatch_and_errors():
    X = te.placeholder((1, 3, 8, 8), name="X")
    K = te.placeholder((4, 3, 3, 3), name="K")
    assert topi.nn.conv2d(X, K, 1, 1, 1).op.tag == "conv2d_nchw"
    expect_error(lambda: topi.nn.conv2d(X, K, 1, 1, 1, "NCWH"), "nn.conv2d", "layout")
    expect_error(lambda: topi.nn.conv2d_nchw(X, K, 1, 1, (1, 0)), "dilation", ">= 1")
    expect_error(lambda: topi.nn.conv2d_nchw(X, K, 1, "FULL", 1), "padding", "SAME")
    same = topi.nn.conv2d_nchw(X, K, 1, "SAME", 1)
    assert tuple(int(d.value) for d in same.shape) == (1, 4, 8, 8)


@pytest.mark.parametrize("shape,mult,k,st,pad,dil", [
    ((1, 8, 12, 12), 1, 3, 1, 1, 1), ((2, 3, 9, 10), 2, 3, 2, (1, 0, 1, 2), 1),
    ((1, 4, 11, 11), 1, 5, 1, 2, 2)], ids=str)
def test_depthwise_conv2d_nchw(shape, mult, k, st, pad, dil):
    n, c, h, w = shape
    X = te.placeholder(shape, name="X")
    K = te.placeholder((c, mult, k, k), name="K")
    x, kk = rand(shape), rand((c, mult, k, k))
    out = topi.nn.depthwise_conv2d_nchw(X, K, st, pad, dil)
    ref = conv_ref(x, kk.reshape(c * mult, 1, k, k), (st, st), _pad4(pad), (dil, dil), c)
    verify([X, K], out, [x, kk], ref, schedule=topi.x86.schedule_depthwise_conv2d_nchw,
           rtol=1e-4, atol=1e-4)
    expect_error(lambda: topi.nn.depthwise_conv2d_nchw(X, te.placeholder((c + 1, 1, 3, 3)),
                                                       1, 1, 1), "depthwise", "Filter")


def conv_transpose_ref(x, w, stride, pads, opad):
    n, c, h, wd = x.shape
    _, oc, kh, kw = w.shape
    t, l, b, r = pads
    full = np.zeros((n, oc, (h - 1) * stride[0] + kh + opad[0],
                     (wd - 1) * stride[1] + kw + opad[1]))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw] += \
                np.einsum("nc,cohw->nohw", x[:, :, i, j], w)
    oh = (h - 1) * stride[0] - t - b + kh + opad[0]
    ow = (wd - 1) * stride[1] - l - r + kw + opad[1]
    return full[:, :, t:t + oh, l:l + ow]


@pytest.mark.parametrize("shape,oc,k,st,pad,opad", [
    ((1, 4, 5, 5), 6, 3, 2, 1, 1), ((2, 3, 4, 6), 2, 4, (2, 1), (1, 0, 2, 1), 0),
    ((1, 2, 6, 6), 3, 3, 1, 0, 0)], ids=str)
def test_conv2d_transpose_nchw(shape, oc, k, st, pad, opad):
    X = te.placeholder(shape, name="X")
    K = te.placeholder((shape[1], oc, k, k), name="K")
    x, kk = rand(shape), rand((shape[1], oc, k, k))
    st2 = (st, st) if isinstance(st, int) else st
    op2 = (opad, opad) if isinstance(opad, int) else opad
    out = topi.nn.conv2d_transpose_nchw(X, K, st2, pad, "float32", op2)
    ref = conv_transpose_ref(x.astype("float64"), kk, st2, _pad4(pad), op2)
    verify([X, K], out, [x, kk], ref, schedule=topi.x86.schedule_conv2d_transpose_nchw,
           rtol=1e-4, atol=1e-4)
    expect_error(lambda: topi.nn.conv2d_transpose_nchw(X, K, 1, k, None, (0, 0)), "padding")


def conv3d_transpose_ref(x, w, st, pads, opad):
    """Every input voxel scatters its weighted kernel; then the padding is cut off."""
    n, c, *size = x.shape
    oc, ks = w.shape[1], w.shape[2:]
    full = np.zeros((n, oc, *((s - 1) * t + k + o for s, t, k, o in zip(size, st, ks, opad))))
    for z, y, xx in np.ndindex(*size):
        contrib = np.einsum("nc,cokji->nokji", x[:, :, z, y, xx], w)
        full[:, :, z * st[0]:z * st[0] + ks[0], y * st[1]:y * st[1] + ks[1],
             xx * st[2]:xx * st[2] + ks[2]] += contrib
    d, h, wd = full.shape[2:]
    return full[:, :, pads[0]:d - pads[3], pads[1]:h - pads[4], pads[2]:wd - pads[5]]


@pytest.mark.parametrize("shape,oc,k,st,pad,opad", [
    ((1, 1, 3, 4, 5), 2, (3, 3, 3), (1, 1, 1), (0,) * 6, (0, 0, 0)),
    ((2, 3, 3, 2, 4), 2, (2, 3, 2), (2, 1, 3), (1, 0, 1, 0, 2, 1), (1, 0, 2))], ids=str)
def test_conv3d_transpose_ncdhw(shape, oc, k, st, pad, opad):
    X = te.placeholder(shape, name="X")
    K = te.placeholder((shape[1], oc, *k), name="K")
    x, kk = rand(shape), rand((shape[1], oc, *k))
    out = topi.nn.conv3d_transpose_ncdhw(X, K, st, pad, "float32", opad)
    ref = conv3d_transpose_ref(x.astype("float64"), kk, st, pad, opad)
    verify([X, K], out, [x, kk], ref, rtol=1e-4, atol=1e-4)
    a = attrs.Conv3DTransposeAttrs(strides=st, padding=pad, output_padding=opad)
    np.testing.assert_allclose(nn_ref.conv3d_transpose(x, kk, a), ref, rtol=1e-5, atol=1e-5)
    expect_error(lambda: topi.nn.conv3d_transpose_ncdhw(X, K, 1, k[0], None), "padding")
    expect_error(lambda: topi.nn.conv3d_transpose_ncdhw(X, K, 2, 0, None, 2), "output_padding")


def pool_ref(x, k, s, d, pads, kind, ceil_mode, cip):
    """NCHW pooling with PyTorch semantics."""
    n, c, h, w = x.shape
    t, l, b, r = pads
    sizes = []
    for size, kk, ss, dd, lo, hi in ((h, k[0], s[0], d[0], t, b), (w, k[1], s[1], d[1], l, r)):
        span = (kk - 1) * dd + 1
        if ceil_mode:
            o = -(-(size + lo + hi - span) // ss) + 1
            if (o - 1) * ss >= size + lo:
                o -= 1
        else:
            o = (size + lo + hi - span) // ss + 1
        sizes.append(o)
    out = np.zeros((n, c, sizes[0], sizes[1]))
    for oy in range(sizes[0]):
        for ox in range(sizes[1]):
            ys = [oy * s[0] - t + i * d[0] for i in range(k[0])]
            xs = [ox * s[1] - l + j * d[1] for j in range(k[1])]
            inside = [(y, xx) for y in ys for xx in xs if 0 <= y < h and 0 <= xx < w]
            vals = np.stack([x[:, :, y, xx] for y, xx in inside], -1)
            if kind == "max":
                out[:, :, oy, ox] = vals.max(-1)
            else:
                cnt = len(inside) if not cip else \
                    sum(1 for y in ys if -t <= y < h + b) * sum(1 for xx in xs if -l <= xx < w + r)
                out[:, :, oy, ox] = vals.sum(-1) / cnt
    return out


POOL_CASES = [((1, 3, 10, 10), 3, 2, 1, 1, False, True), ((2, 2, 9, 7), (2, 3), (2, 1), 1,
                                                          (0, 1, 1, 0), True, True),
              ((1, 4, 11, 11), 3, 2, 1, 1, True, False), ((1, 2, 12, 12), 2, 2, 2, 0, False, True),
              ((1, 16, 16, 16), 3, 1, 1, 1, False, False)]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_pool2d(kind, case):
    shape, k, s, d, pad, ceil_mode, cip = case
    X = te.placeholder(shape, name="X")
    x = rand(shape)
    out = topi.nn.pool2d(X, k, s, d, pad, kind, ceil_mode, "NCHW", cip)
    k2, s2, d2 = [(v, v) if isinstance(v, int) else v for v in (k, s, d)]
    ref = pool_ref(x.astype("float64"), k2, s2, d2, _pad4(pad), kind, ceil_mode, cip)
    verify([X], out, [x], ref, schedule=topi.x86.schedule_pool, rtol=1e-5, atol=1e-6)


def test_pool2d_nhwc_and_fused_relu():
    X = te.placeholder((1, 9, 9, 16), name="X")
    x = rand((1, 9, 9, 16))
    out = topi.nn.relu(topi.nn.pool2d(X, 3, 2, 1, 1, "avg", layout="NHWC"))
    ref = pool_ref(x.transpose(0, 3, 1, 2).astype("float64"), (3, 3), (2, 2), (1, 1),
                   (1,) * 4, "avg", False, True)
    verify([X], out, [x], np.maximum(ref.transpose(0, 2, 3, 1), 0),
           schedule=topi.x86.schedule_pool, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_global_and_adaptive_pool(kind, layout):
    shape = (2, 3, 10, 7) if layout == "NCHW" else (2, 10, 7, 3)
    hw = (2, 3) if layout == "NCHW" else (1, 2)
    X = te.placeholder(shape, name="X")
    x = rand(shape)
    red = np.max if kind == "max" else np.mean
    verify([X], topi.nn.global_pool(X, kind, layout), [x], red(x, axis=hw, keepdims=True),
           schedule=topi.x86.schedule_adaptive_pool, rtol=1e-5, atol=1e-6)
    oh, ow = 4, 3
    ref = np.zeros([oh if a == hw[0] else ow if a == hw[1] else s for a, s in enumerate(shape)])
    h, w = shape[hw[0]], shape[hw[1]]
    for i in range(oh):
        for j in range(ow):
            ys = slice(i * h // oh, -(-(i + 1) * h // oh))
            xs = slice(j * w // ow, -(-(j + 1) * w // ow))
            sl = [slice(None)] * 4
            sl[hw[0]], sl[hw[1]] = ys, xs
            dst = [slice(None)] * 4
            dst[hw[0]], dst[hw[1]] = slice(i, i + 1), slice(j, j + 1)
            ref[tuple(dst)] = red(x[tuple(sl)], axis=hw, keepdims=True)
    verify([X], topi.nn.adaptive_pool(X, (oh, ow), kind, layout), [x], ref,
           schedule=topi.x86.schedule_adaptive_pool, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("args", [(1, 8, 10, 10, 16, 3, 3, 1, 1), (1, 6, 9, 9, 8, 1, 1, 2, 0)])
def test_catalog_conv2d_bias_relu_default_and_tuned_state(args):
    """The built-in fused conv + bias + ReLU: topi's default schedule and a sampled
    auto-scheduler state (weights rewritten as a relay build does) agree with numpy."""
    n, ci, h, w, co, kh, kw, stride, pad = args
    tensors = catalog.conv2d_bias_relu(*args)
    x, f, b = rand((n, ci, h, w)), rand((co, ci, kh, kw)), rand((co, 1, 1))
    ref = np.maximum(conv_ref(x, f, (stride, stride), (pad,) * 4, (1, 1)) + b, 0)
    verify(tensors[:3], [tensors[-1]], [x, f, b], [ref],
           schedule=topi.x86.schedule_conv2d_nchw, plain=False, rtol=1e-4, atol=1e-4)
    task = auto.SearchTask(func="conv2d_bias_relu", args=args, target="llvm")
    state = auto.SketchPolicy(task, seed=0, verbose=0).sample_initial_population(1)[0]
    out = np.zeros(ref.shape, "float32")
    mod, ins = _best_kernel(task, state, [x, f, b, out])
    mod(*ins)
    np.testing.assert_allclose(ins[-1], ref, rtol=1e-4, atol=1e-4)
