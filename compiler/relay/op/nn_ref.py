"""Numpy references of the nn operators, run by the debug interpreter.

They are written from the operators' definitions (float64 accumulation, then cast back),
never from the compiled code, so the interpreter is an oracle for the whole stack.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...topi.sparse.utils import BSRMatrix

__all__ = ["conv2d", "conv2d_transpose", "conv3d_transpose", "pool2d", "adaptive_pool2d",
           "batch_norm", "layer_norm", "resize2d", "softmax", "log_softmax"]


def _to_nchw(x, layout):
    return x if layout == "NCHW" else x.transpose(0, 3, 1, 2)


def _from_nchw(x, layout):
    return x if layout == "NCHW" else x.transpose(0, 2, 3, 1)


def conv2d(x, w, attrs):
    """Grouped, strided, dilated 2-D convolution; NCHW/OIHW (or packed OIHW{v}o) or
    NHWC/HWIO."""
    xd = _to_nchw(x, attrs.data_layout).astype(np.float64)
    wd = w.astype(np.float64) if attrs.data_layout == "NCHW" else \
        w.transpose(3, 2, 0, 1).astype(np.float64)          # HWIO -> OIHW
    if wd.ndim == 5:                                        # (O/v, I, KH, KW, v) -> OIHW
        wd = wd.transpose(0, 4, 1, 2, 3).reshape(-1, *wd.shape[1:4])
    n, ci, h, wi = xd.shape
    co, cig, kh, kw = wd.shape
    pt, pl, pb, pr = attrs.padding
    sh, sw = attrs.strides
    dh, dw = attrs.dilation
    g = attrs.groups
    xp = np.pad(xd, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wi + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, co, oh, ow))
    cog = co // g
    for gi in range(g):
        xs = xp[:, gi * cig:(gi + 1) * cig]
        ws = wd[gi * cog:(gi + 1) * cog]
        for ky in range(kh):
            for kx in range(kw):
                patch = xs[:, :, ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                           kx * dw:kx * dw + sw * (ow - 1) + 1:sw]
                out[:, gi * cog:(gi + 1) * cog] += np.einsum("ncyx,oc->noyx", patch,
                                                             ws[:, :, ky, kx])
    odt = attrs.out_dtype or x.dtype
    return _from_nchw(out, attrs.data_layout).astype(odt)


def conv2d_transpose(x, w, attrs):
    """Transposed convolution, NCHW data and IOHW weight (groups 1, dilation 1)."""
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    n, ci, h, wi = xd.shape
    _, co, kh, kw = wd.shape
    sh, sw = attrs.strides
    pt, pl, pb, pr = attrs.padding
    oph, opw = attrs.output_padding
    full_h, full_w = (h - 1) * sh + kh, (wi - 1) * sw + kw
    full = np.zeros((n, co, full_h + oph, full_w + opw))
    for ky in range(kh):
        for kx in range(kw):
            contrib = np.einsum("nchw,co->nohw", xd, wd[:, :, ky, kx])
            full[:, :, ky:ky + sh * (h - 1) + 1:sh, kx:kx + sw * (wi - 1) + 1:sw] += contrib
    oh = full_h - pt - pb + oph
    ow = full_w - pl - pr + opw
    return full[:, :, pt:pt + oh, pl:pl + ow].astype(attrs.out_dtype or x.dtype)


def conv3d_transpose(x, w, attrs):
    """Transposed convolution, NCDHW data and IODHW weight (groups 1, dilation 1): every
    input voxel scatters its weighted kernel into the (padded) output."""
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    n, _, *size = xd.shape
    co, ks = wd.shape[1], wd.shape[2:]
    st, pads, opad = attrs.strides, attrs.padding, attrs.output_padding
    full = [(s - 1) * t + k + o for s, t, k, o in zip(size, st, ks, opad)]
    out = np.zeros((n, co, *full))
    for kz in range(ks[0]):
        for ky in range(ks[1]):
            for kx in range(ks[2]):
                contrib = np.einsum("ncdhw,co->nodhw", xd, wd[:, :, kz, ky, kx])
                out[:, :, kz:kz + st[0] * (size[0] - 1) + 1:st[0],
                    ky:ky + st[1] * (size[1] - 1) + 1:st[1],
                    kx:kx + st[2] * (size[2] - 1) + 1:st[2]] += contrib
    keep = tuple(slice(p, f - e) for p, e, f in zip(pads[:3], pads[3:], full))
    return out[(slice(None), slice(None)) + keep].astype(attrs.out_dtype or x.dtype)


def pool2d(x, attrs, kind: str):
    xd = _to_nchw(x, attrs.layout).astype(np.float64)
    kh, kw = attrs.pool_size
    sh, sw = attrs.strides
    dh, dw = attrs.dilation
    pt, pl, pb, pr = attrs.padding
    n, c, h, w = xd.shape

    def out_size(size, k, s, d, lo, hi):
        eff = d * (k - 1) + 1
        if attrs.ceil_mode:
            o = -(-(size + lo + hi - eff) // s) + 1
            if (o - 1) * s >= size + lo:
                o -= 1
            return o
        return (size + lo + hi - eff) // s + 1

    oh, ow = out_size(h, kh, sh, dh, pt, pb), out_size(w, kw, sw, dw, pl, pr)
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            ys = [i * sh - pt + a * dh for a in range(kh)]
            xs = [j * sw - pl + b * dw for b in range(kw)]
            vy = [y for y in ys if 0 <= y < h]
            vx = [v for v in xs if 0 <= v < w]
            win = xd[:, :, vy][:, :, :, vx] if vy and vx else np.zeros((n, c, 0, 0))
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3)) if win.size else -np.inf
            else:
                if getattr(attrs, "count_include_pad", False):
                    cnt = sum(1 for y in ys if y < h + pb) * sum(1 for v in xs if v < w + pr)
                else:
                    cnt = len(vy) * len(vx)
                out[:, :, i, j] = win.sum(axis=(2, 3)) / max(cnt, 1)
    return _from_nchw(out, attrs.layout).astype(x.dtype)


def adaptive_pool2d(x, out_size, layout, kind: str):
    xd = _to_nchw(x, layout).astype(np.float64)
    n, c, h, w = xd.shape
    oh, ow = out_size
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        y0, y1 = (i * h) // oh, -(-((i + 1) * h) // oh)
        for j in range(ow):
            x0, x1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            win = xd[:, :, y0:y1, x0:x1]
            out[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
    return _from_nchw(out, layout).astype(x.dtype)


def batch_norm(x, gamma, beta, mean, var, attrs):
    shape = [1] * x.ndim
    shape[attrs.axis] = x.shape[attrs.axis]
    xd = x.astype(np.float64)
    out = (xd - mean.reshape(shape)) / np.sqrt(var.reshape(shape).astype(np.float64)
                                               + attrs.epsilon)
    if attrs.scale:
        out = out * gamma.reshape(shape)
    if attrs.center:
        out = out + beta.reshape(shape)
    return out.astype(x.dtype), mean.copy(), var.copy()


def layer_norm(x, gamma, beta, attrs):
    xd = x.astype(np.float64)
    ax = attrs.axis % x.ndim
    mu = xd.mean(axis=ax, keepdims=True)
    out = (xd - mu) / np.sqrt(xd.var(axis=ax, keepdims=True) + attrs.epsilon)
    shape = [1] * x.ndim
    shape[ax] = x.shape[ax]
    if attrs.scale:
        out = out * gamma.reshape(shape)
    if attrs.center:
        out = out + beta.reshape(shape)
    return out.astype(x.dtype)


def softmax(x, axis):
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def log_softmax(x, axis):
    xd = x.astype(np.float64)
    m = xd.max(axis=axis, keepdims=True)
    return (xd - m - np.log(np.exp(xd - m).sum(axis=axis, keepdims=True))).astype(x.dtype)


def _src_coord(o, in_size, out_size, mode):
    if mode == "align_corners":
        return o * (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if mode == "asymmetric":
        return o * in_size / out_size
    if mode == "tf_half_pixel_for_nn":
        return (o + 0.5) * in_size / out_size
    if mode == "pytorch_half_pixel" and out_size == 1:
        return 0.0
    return (o + 0.5) * in_size / out_size - 0.5               # half_pixel


def resize2d(x, attrs):
    xd = _to_nchw(x, attrs.layout).astype(np.float64)
    n, c, h, w = xd.shape
    oh, ow = attrs.size
    mode = attrs.coordinate_transformation_mode
    out = np.zeros((n, c, oh, ow))
    rounding = attrs.rounding_method or ("round" if mode == "align_corners" else "floor")
    for i in range(oh):
        sy = _src_coord(i, h, oh, mode)
        for j in range(ow):
            sx = _src_coord(j, w, ow, mode)
            if attrs.method in ("nearest_neighbor", "nearest"):
                yy = _round(sy, rounding)
                xx = _round(sx, rounding)
                out[:, :, i, j] = xd[:, :, min(max(yy, 0), h - 1), min(max(xx, 0), w - 1)]
            else:
                y0, x0 = math.floor(sy), math.floor(sx)
                fy, fx = sy - y0, sx - x0

                def px(y, v):
                    return xd[:, :, min(max(y, 0), h - 1), min(max(v, 0), w - 1)]
                out[:, :, i, j] = (px(y0, x0) * (1 - fy) * (1 - fx) + px(y0, x0 + 1) * (1 - fy) * fx
                                   + px(y0 + 1, x0) * fy * (1 - fx) + px(y0 + 1, x0 + 1) * fy * fx)
    return _from_nchw(out, attrs.layout).astype(attrs.out_dtype or x.dtype)


def _round(v, method):
    if method == "floor":
        return int(math.floor(v))
    if method == "ceil":
        return int(math.ceil(v))
    if method == "round_prefer_floor":
        return int(math.ceil(v - 0.5))
    return int(math.floor(v + 0.5))          # round (half up), round_prefer_ceil


def _bsr_dense(data, indices, indptr, cols: int) -> np.ndarray:
    """The dense matrix (float64) of BSR parts (2-D data: one-column blocks)."""
    data = data.reshape(*data.shape, 1) if data.ndim == 2 else data
    rows = (len(indptr) - 1) * data.shape[1]
    return BSRMatrix(data.astype(np.float64), indices, indptr, (rows, cols)).todense()


def sparse_conv2d(x, data, indices, indptr, attrs):
    """A 1x1 convolution of ``x`` (NHWC or NCHW) with the BSR weight ``N x K``; with
    ``kernel_size`` 3, a 3x3 one (stride 1, padding 1) with the ``N x 9K`` weight, whose
    columns are the HWIO (NHWC) or OIHW (NCHW) kernel's."""
    nhwc = attrs.layout == "NHWC"
    k = x.shape[3] if nhwc else x.shape[1]
    if tuple(attrs.kernel_size)[0] == 3:
        w = _bsr_dense(data, indices, indptr, 9 * k)
        kernel = w.T.reshape(3, 3, k, -1) if nhwc else w.reshape(-1, k, 3, 3)
        return conv2d(x, kernel, _Conv3x3(data_layout=attrs.layout))
    w = _bsr_dense(data, indices, indptr, k)
    xd = x.astype(np.float64)
    out = np.einsum("mhwk,nk->mhwn", xd, w) if nhwc else np.einsum("mkhw,nk->mnhw", xd, w)
    return out.astype(x.dtype)


@dataclass(frozen=True)
class _Conv3x3:
    """The attributes ``conv2d`` reads, for a sparse 3x3 convolution's reference."""
    data_layout: str
    padding: tuple = (1, 1, 1, 1)
    strides: tuple = (1, 1)
    dilation: tuple = (1, 1)
    groups: int = 1
    out_dtype: str = ""


def sparse_dense(x, data, indices, indptr, attrs):
    """``x @ W.T`` (``W @ x.T`` with ``sparse_lhs``) for ``W`` in CSR (1-D data) or BSR."""
    blocks = data.reshape(-1, 1, 1) if data.ndim == 1 else data      # CSR: 1x1 blocks
    w = _bsr_dense(blocks, indices, indptr, x.shape[-1 if not attrs.sparse_lhs else 1])
    out = w @ x.astype(np.float64).T if attrs.sparse_lhs else x.astype(np.float64) @ w.T
    return out.astype(x.dtype)
