"""Test helper: random inputs, build-and-run of a schedule, matmul and conv2d definitions
with numpy references."""
import numpy as np

from compiler import build, te, tir

RNG = np.random.default_rng(0)

def rand(shape, dtype="float32"):
    if dtype.startswith("float"):
        return (RNG.random(shape) - 0.5).astype(dtype)
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    info = np.iinfo(dtype)
    return RNG.integers(max(info.min, -100), min(info.max, 100), shape).astype(dtype)

def run(s, args, inputs, out_shapes=None, name="f"):
    mod = build(s, args, name=name)
    outs = [np.zeros([int(d.value) for d in t.shape], t.dtype) for t in args[len(inputs):]]
    mod(*inputs, *outs)
    return outs[0] if len(outs) == 1 else outs

def matmul(n, m, k_, dtype="float32"):
    A = te.placeholder((n, k_), name="A", dtype=dtype)
    B = te.placeholder((k_, m), name="B", dtype=dtype)
    k = te.reduce_axis((0, k_), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C

def conv2d_nchw(n, c, h, w, oc, kh, kw, pad, stride=1):
    X = te.placeholder((n, c, h, w), name="X")
    W = te.placeholder((oc, c, kh, kw), name="W")
    P = te.compute((n, c, h + 2 * pad, w + 2 * pad), lambda b, ci, y, x: te.if_then_else(
        te.all(y >= pad, y < h + pad, x >= pad, x < w + pad),
        X[b, ci, y - pad, x - pad], tir.const(0.0, "float32")), name="P")
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    Y = te.compute((n, oc, oh, ow), lambda b, f, y, x: te.sum(
        P[b, rc, y * stride + ry, x * stride + rx] * W[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="Y")
    return X, W, P, Y

def conv_ref(x, w, pad, stride=1):
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, oc, oh, ow), "float64")
    for ry in range(kh):
        for rx in range(kw):
            patch = xp[:, :, ry:ry + stride * oh:stride, rx:rx + stride * ow:stride]
            out += np.einsum("nchw,fc->nfhw", patch, w[:, :, ry, rx])
    return out


def channel_vectorized_conv(c=16, h=7, vc=8):
    """NCHW conv3x3 (pad 1) + bias + relu reading a packed [OC/vc, IC, 3, 3, vc] weight,
    scheduled with a register tile of vc output channels (vectorized) x h output columns
    (unrolled) per output row: the accumulator's vectorized dim is not its last."""
    from compiler import topi
    X = te.placeholder((1, c, h, h), name="data")
    Wp = te.placeholder((c // vc, c, 3, 3, vc), name="wpack")
    B = te.placeholder((c,), name="bias")
    P = topi.nn.pad(X, [0, 0, 1, 1], [0, 0, 1, 1], name="pad")
    ic = te.reduce_axis((0, c), name="ic")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    conv = te.compute((1, c, h, h), lambda n, f, y, x: te.sum(
        P[n, ic, y + ry, x + rx] * Wp[f // vc, ic, ry, rx, f % vc], axis=[ic, ry, rx]),
        name="conv")
    out = te.compute((1, c, h, h), lambda n, f, y, x: te.max(
        conv[n, f, y, x] + B[f], tir.const(0.0, "float32")), name="out")
    s = te.create_schedule(out.op)
    n, f, y, x = s[out].op.axis
    fo, fi = s[out].split(f, factor=vc)
    s[out].reorder(n, fo, y, fi, x)
    s[out].parallel(fo)
    s[out].vectorize(x)
    s[conv].compute_at(s[out], y)
    cn, cf, cy, cx = s[conv].op.axis
    s[conv].reorder(cn, ic, ry, rx, cy, cx, cf)
    s[conv].unroll(cx)
    s[conv].vectorize(cf)
    s[P].compute_root()
    return s, [X, Wp, B, out]
