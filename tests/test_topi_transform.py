"""topi injective ops (reshape, transpose, concatenate, split, strided_slice, take, ...),
layout_transform, pad/dilate and image.resize2d vs numpy."""
import numpy as np
import pytest
from topi_helpers import expect_error, rand, verify

from compiler import te, topi


@pytest.mark.parametrize("src,dst", [((2, 3, 4), (6, 4)), ((24,), (2, -1, 3)),
                                     ((4, 6), (4, 6)), ((5, 1, 7), (35,))], ids=str)
def test_reshape(src, dst):
    A = te.placeholder(src, name="A")
    a = rand(src)
    verify([A], topi.reshape(A, dst), [a], a.reshape(dst))
    expect_error(lambda: topi.reshape(A, (-1, -1)), "topi.reshape", "at most one -1")


@pytest.mark.parametrize("shape,axes", [((3, 5), None), ((2, 3, 4), (1, 0, 2)),
                                        ((2, 3, 4, 5), (0, 2, 3, 1)), ((4, 6, 9), (-1, 0, 1))],
                         ids=str)
def test_transpose(shape, axes):
    A = te.placeholder(shape, name="A")
    a = rand(shape)
    verify([A], topi.transpose(A, axes), [a], np.transpose(a, axes))


def test_expand_dims_squeeze_flatten():
    A = te.placeholder((3, 1, 5, 1), name="A")
    a = rand((3, 1, 5, 1))
    verify([A], topi.expand_dims(A, -1, 2), [a], a.reshape(3, 1, 5, 1, 1, 1))
    verify([A], topi.expand_dims(A, 0), [a], a[None])
    verify([A], topi.squeeze(A), [a], a.squeeze())
    verify([A], topi.squeeze(A, axis=-1), [a], a.squeeze(-1))
    verify([A], topi.nn.flatten(A), [a], a.reshape(3, 5))
    expect_error(lambda: topi.squeeze(A, axis=0), "topi.squeeze", "extent 1")
    expect_error(lambda: topi.expand_dims(A, 6), "topi.expand_dims", "axis")


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_and_stack(axis):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes = [tuple(s if d != axis % 3 else s + k for d, s in enumerate(sh))
              for k, sh in enumerate(shapes)]
    ts = [te.placeholder(sh, name=f"A{k}") for k, sh in enumerate(shapes)]
    arrs = [rand(sh) for sh in shapes]
    verify(ts, topi.concatenate(ts, axis), arrs, np.concatenate(arrs, axis))
    same = [te.placeholder((3, 5), name=f"S{k}") for k in range(3)]
    sarr = [rand((3, 5)) for _ in range(3)]
    verify(same, topi.stack(same, axis), sarr, np.stack(sarr, axis))


def test_concatenate_errors():
    A = te.placeholder((2, 3), name="A")
    B = te.placeholder((3, 3), name="B")
    expect_error(lambda: topi.concatenate([A, B], 1), "topi.concatenate", "tensors[1]")
    expect_error(lambda: topi.concatenate([], 0), "topi.concatenate", "non-empty")


@pytest.mark.parametrize("spec,axis", [(3, 0), ([2, 5], 1), ([0, 3, 3], -1), (1, 1)], ids=str)
def test_split(spec, axis):
    A = te.placeholder((6, 7, 9), name="A")
    a = rand((6, 7, 9))
    outs = topi.split(A, spec, axis)
    refs = np.split(a, spec, axis)
    assert len(outs) == len(refs)
    verify([A], outs, [a], refs)


SLICES = [([1], [4], None, None), ([0, 1], [3, 7], [1, 2], None), ([-1], [-10], [-2], [2]),
          ([5, -3], [100, 1000], None, [1, 2]), ([-100, 2, 1], [3, -1, 9], [1, 3, -1], None),
          ([0, 0, 0], [6, 7, 9], [2, 2, 2], None)]


@pytest.mark.parametrize("begin,end,strides,axes", SLICES, ids=str)
def test_strided_slice(begin, end, strides, axes):
    A = te.placeholder((6, 7, 9), name="A")
    a = rand((6, 7, 9))
    sl = [slice(None)] * 3
    for k, (b, e) in enumerate(zip(begin, end)):
        ax = axes[k] if axes else k
        sl[ax] = slice(b, e, strides[k] if strides else 1)
    verify([A], topi.strided_slice(A, begin, end, strides, axes), [a], a[tuple(sl)])


def test_strided_slice_size_mode_and_errors():
    A = te.placeholder((6, 7), name="A")
    a = rand((6, 7))
    verify([A], topi.strided_slice(A, [1, 2], [3, -1], slice_mode="size"), [a], a[1:4, 2:])
    expect_error(lambda: topi.strided_slice(A, [0], [3], [0]), "strides", "non-zero")
    expect_error(lambda: topi.strided_slice(A, [0, 0, 0], [1, 1, 1]), "begin", "at most 2")


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take(mode, axis):
    A = te.placeholder((5, 6, 4), name="A")
    I = te.placeholder((3, 2), "int32", "I")
    a = rand((5, 6, 4))
    idx = rand((3, 2), "int32", -8, 130 if axis is None else 9)
    verify([A, I], topi.take(A, I, axis, mode=mode), [a, idx], np.take(a, idx, axis, mode=mode))
    verify([A], topi.take(A, 2, axis=axis), [a], np.take(a, 2, axis=axis))


def test_broadcast_to():
    A = te.placeholder((3, 1, 5), name="A")
    a = rand((3, 1, 5))
    verify([A], topi.broadcast_to(A, (2, 3, 4, 5)), [a], np.broadcast_to(a, (2, 3, 4, 5)))
    expect_error(lambda: topi.broadcast_to(A, (3, 4, 4)), "topi.broadcast_to", "broadcast")


@pytest.mark.parametrize("src,dst,shape", [("NCHW", "NCHW8c", (1, 16, 3, 5)),
                                           ("NCHW8c", "NCHW", (2, 2, 3, 5, 8)),
                                           ("NCHW", "NHWC", (2, 3, 4, 5)),
                                           ("NHWC", "NCHW", (2, 4, 5, 3)),
                                           ("NCHW4c", "NCHW8c", (1, 4, 2, 3, 4)),
                                           ("NCHW8c", "NHWC", (1, 2, 3, 3, 8))], ids=str)
def test_layout_transform(src, dst, shape):
    A = te.placeholder(shape, name="A")
    a = rand(shape)
    ref = _to_nchw(a, src)
    n, c, h, w = ref.shape
    if dst == "NHWC":
        ref = ref.transpose(0, 2, 3, 1)
    elif dst != "NCHW":
        f = int(dst[4:-1])
        ref = ref.reshape(n, c // f, f, h, w).transpose(0, 1, 3, 4, 2)
    verify([A], topi.layout_transform(A, src, dst), [a], ref)


def _to_nchw(a, layout):
    if layout == "NCHW":
        return a
    if layout == "NHWC":
        return a.transpose(0, 3, 1, 2)
    n, co, h, w, ci = a.shape
    return a.transpose(0, 1, 4, 2, 3).reshape(n, co * ci, h, w)


def test_layout_transform_errors():
    A = te.placeholder((1, 4, 2, 2), name="A")
    expect_error(lambda: topi.layout_transform(A, "NCHW", "NCHWx"), "layout")
    expect_error(lambda: topi.layout_transform(A, "NCHW", "NCDW"), "primal axes")
    expect_error(lambda: topi.layout_transform(A, "NCH", "NHC"), "src_layout")


def test_pad_and_dilate():
    A = te.placeholder((3, 4, 5), name="A")
    a = rand((3, 4, 5))
    verify([A], topi.nn.pad(A, [0, 1, 2], [1, 0, 3], pad_value=-2.0), [a],
           np.pad(a, ((0, 1), (1, 0), (2, 3)), constant_values=-2.0))
    verify([A], topi.nn.pad(A, [1, 1, 1]), [a], np.pad(a, 1))
    d = np.zeros((3, 7, 13), "float32")
    d[:, ::2, ::3] = a
    verify([A], topi.nn.dilate(A, [1, 2, 3]), [a], d)
    expect_error(lambda: topi.nn.pad(A, [1, 1]), "nn.pad", "pad_before", "3")
    expect_error(lambda: topi.nn.pad(A, [1, -1, 0]), "nn.pad", "non-negative")


def _src_coord(x, in_size, out_size, mode):
    scale = in_size / out_size
    if mode == "align_corners":
        return x * ((in_size - 1) / (out_size - 1) if out_size > 1 else 0.0)
    if mode == "asymmetric":
        return x * scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) * scale
    if mode == "pytorch_half_pixel" and out_size == 1:
        return 0.0
    return (x + 0.5) * scale - 0.5


def _resize_ref(a, size, method, mode):
    """NCHW reference: clamp-to-edge sampling as TVM/ONNX."""
    n, c, h, w = a.shape
    oh, ow = size
    ys = np.array([_src_coord(y, h, oh, mode) for y in range(oh)], "float32")
    xs = np.array([_src_coord(x, w, ow, mode) for x in range(ow)], "float32")
    if method == "nearest_neighbor":
        rnd = (lambda v: np.floor(v + 0.5)) if mode == "align_corners" else np.floor
        yi = np.clip(rnd(ys).astype(int), 0, h - 1)
        xi = np.clip(rnd(xs).astype(int), 0, w - 1)
        return a[:, :, yi][:, :, :, xi]
    y0, x0 = np.floor(ys), np.floor(xs)
    dy, dx = (ys - y0)[:, None], (xs - x0)[None, :]
    y0, x0 = y0.astype(int), x0.astype(int)
    yc = [np.clip(y0 + k, 0, h - 1) for k in (0, 1)]
    xc = [np.clip(x0 + k, 0, w - 1) for k in (0, 1)]
    p = [[a[:, :, yc[i]][:, :, :, xc[j]] for j in (0, 1)] for i in (0, 1)]
    top = p[0][0] * (1 - dx) + p[0][1] * dx
    bot = p[1][0] * (1 - dx) + p[1][1] * dx
    return top * (1 - dy) + bot * dy


@pytest.mark.parametrize("method", ["nearest_neighbor", "linear"])
@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric",
                                  "pytorch_half_pixel", "tf_half_pixel_for_nn"])
@pytest.mark.parametrize("size", [(8, 12), (3, 1)], ids=str)
def test_resize2d(method, mode, size):
    A = te.placeholder((1, 2, 5, 6), name="A")
    a = rand((1, 2, 5, 6))
    out = topi.image.resize2d(A, None, size, method=method,
                              coordinate_transformation_mode=mode)
    verify([A], out, [a], _resize_ref(a, size, method, mode), rtol=1e-5, atol=1e-5)


def test_resize2d_nhwc_and_bilinear_alias():
    A = te.placeholder((1, 5, 6, 3), name="A")
    a = rand((1, 5, 6, 3))
    out = topi.image.resize2d(A, None, (10, 4), layout="NHWC", method="bilinear")
    ref = _resize_ref(a.transpose(0, 3, 1, 2), (10, 4), "linear", "half_pixel")
    verify([A], out, [a], ref.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)
    expect_error(lambda: topi.image.resize2d(A, None, (0, 4), layout="NHWC"), "size")


@pytest.mark.parametrize("rounding", ["floor", "ceil", "round", "round_prefer_floor",
                                      "round_prefer_ceil"])
def test_resize2d_nearest_rounding(rounding):
    A = te.placeholder((1, 1, 4, 6), name="A")
    a = rand((1, 1, 4, 6))
    rnd = {"floor": np.floor, "ceil": np.ceil, "round": lambda v: np.floor(v + 0.5),
           "round_prefer_floor": lambda v: np.ceil(v - 0.5),
           "round_prefer_ceil": lambda v: np.floor(v + 0.5)}[rounding]
    ys = np.clip(rnd(np.arange(6, dtype="float32") * np.float32(4 / 6)).astype(int), 0, 3)
    xs = np.clip(rnd(np.arange(9, dtype="float32") * np.float32(6 / 9)).astype(int), 0, 5)
    out = topi.image.resize2d(A, None, (6, 9), method="nearest_neighbor",
                              coordinate_transformation_mode="asymmetric",
                              rounding_method=rounding)
    verify([A], out, [a], a[:, :, ys][:, :, :, xs])
