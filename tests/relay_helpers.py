"""Helpers of the relay tests: build-and-run, the interpreter, golden files, and numpy
references written here from the operators' definitions (independent of the library's
own ``Op.ref`` functions, which the interpreter runs)."""
from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest

import compiler
from compiler import relay
from compiler.contrib import graph_executor

GOLDEN = pathlib.Path(__file__).parent / "golden"


def check_golden(request, name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if request.config.getoption("--update-golden"):
        path.write_text(text)
    if not path.exists():
        pytest.fail(f"missing golden file {path}; run with --update-golden and review it")
    assert text == path.read_text()


def module_of(out) -> relay.IRModule:
    return relay.IRModule.from_expr(relay.Function(relay.analysis.free_vars(out), out))


def run_built(mod, inputs: dict, params=None, opt_level: int = 3) -> list:
    with relay.transform.PassContext(opt_level=opt_level):
        lib = relay.build(mod, "llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](compiler.cpu(0)))
    for k, v in inputs.items():
        m.set_input(k, v)
    m.run()
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())]


def run_interp(mod, inputs: dict, params=None) -> list:
    out = relay.create_executor("debug", mod=mod, params=params).evaluate()(**inputs)
    return [o.numpy() for o in out] if isinstance(out, tuple) else [out.numpy()]


def check_both(out_expr, inputs: dict, expected, rtol=1e-5, atol=1e-5) -> None:
    """Build and interpret the module computing ``out_expr``; compare with numpy."""
    mod = module_of(out_expr)
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    for how, got in (("build", run_built(mod, inputs)), ("interpreter", run_interp(mod, inputs))):
        assert len(got) == len(expected), how
        for g, e in zip(got, expected):
            e = np.asarray(e)
            assert g.shape == e.shape, (how, g.shape, e.shape)
            assert str(g.dtype) == str(e.dtype), (how, g.dtype, e.dtype)
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=how)


def rand(rng, shape, dtype="float32", low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(dtype)


# ------------------------------------------------------------------ numpy references
def conv2d_nchw(x, w, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilation
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0], padding[2]), (padding[1], padding[3])))
    oh = (xp.shape[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[3] - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                           j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    return out.astype(x.dtype)


def conv2d_transpose_nchw(x, w, strides, padding, output_padding=(0, 0)):
    """``w`` is IOHW; groups 1: scatter every input pixel times the kernel."""
    n, c, h, wd = x.shape
    _, o, kh, kw = w.shape
    sh, sw = strides
    full = np.zeros((n, o, (h - 1) * sh + kh, (wd - 1) * sw + kw), np.float64)
    for i in range(h):
        for j in range(wd):
            full[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw] += np.einsum(
                "nc,cokl->nokl", x[:, :, i, j], w)
    oh = (h - 1) * sh - padding[0] - padding[2] + kh + output_padding[0]
    ow = (wd - 1) * sw - padding[1] - padding[3] + kw + output_padding[1]
    full = np.pad(full, ((0, 0), (0, 0), (0, output_padding[0]), (0, output_padding[1])))
    return full[:, :, padding[0]:padding[0] + oh, padding[1]:padding[1] + ow].astype(x.dtype)


def pool2d_nchw(x, size, strides, padding, kind, count_include_pad=False):
    n, c, h, w = x.shape
    kh, kw = size
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding[0], padding[2]),
                                       (padding[1], padding[3])), constant_values=fill)
    ones = np.pad(np.ones((h, w)), ((padding[0], padding[2]), (padding[1], padding[3])))
    oh = (xp.shape[2] - kh) // strides[0] + 1
    ow = (xp.shape[3] - kw) // strides[1] + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                cnt = kh * kw if count_include_pad else ones[
                    i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw].sum()
                out[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return out.astype(x.dtype)


def adaptive_avg_nchw(x, out_size):
    n, c, h, w = x.shape
    oh, ow = out_size
    out = np.zeros((n, c, oh, ow), np.float64)
    for i in range(oh):
        h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
        for j in range(ow):
            w0, w1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out.astype(x.dtype)


def resize_linear_half_pixel_nchw(x, size):
    n, c, h, w = x.shape
    oh, ow = size

    def coords(o, insz, outsz):
        s = (o + 0.5) * insz / outsz - 0.5
        s = np.clip(s, 0, insz - 1)
        lo = np.floor(s).astype(int)
        hi = np.minimum(lo + 1, insz - 1)
        return lo, hi, s - lo

    y0, y1, fy = coords(np.arange(oh), h, oh)
    x0, x1, fx = coords(np.arange(ow), w, ow)
    xf = x.astype(np.float64)
    top = xf[:, :, y0][:, :, :, x0] * (1 - fx) + xf[:, :, y0][:, :, :, x1] * fx
    bot = xf[:, :, y1][:, :, :, x0] * (1 - fx) + xf[:, :, y1][:, :, :, x1] * fx
    return (top * (1 - fy)[:, None] + bot * fy[:, None]).astype(x.dtype)


def resize_nearest_asymmetric_nchw(x, size):
    n, c, h, w = x.shape
    oh, ow = size
    ys = np.minimum(np.floor(np.arange(oh) * h / oh).astype(int), h - 1)
    xs = np.minimum(np.floor(np.arange(ow) * w / ow).astype(int), w - 1)
    return x[:, :, ys][:, :, :, xs]


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def layer_norm(x, g, b, axis=-1, eps=1e-5):
    m = x.mean(axis=axis, keepdims=True)
    v = x.var(axis=axis, keepdims=True)
    return ((x - m) / np.sqrt(v + eps) * g + b).astype(x.dtype)


def erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64)).astype(x.dtype)


def to_nhwc(x):
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def to_nchw(x):
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))
