"""Every relay operator through ``relay.build`` and through the interpreter, against
numpy written in this file (random shapes; both layouts where an op has them)."""
import numpy as np
import pytest
from relay_helpers import (
    adaptive_avg_nchw,
    check_both,
    conv2d_nchw,
    conv2d_transpose_nchw,
    erf,
    layer_norm,
    pool2d_nchw,
    rand,
    resize_linear_half_pixel_nchw,
    resize_nearest_asymmetric_nchw,
    softmax,
    to_nhwc,
)

from compiler import relay

RNG = np.random.default_rng(2026)


def v(name, shape, dtype="float32"):
    return relay.var(name, shape=shape, dtype=dtype)


# ------------------------------------------------------------------ convolution
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("cfg", [
    dict(c=3, o=8, k=3, s=1, p=1, d=1, g=1),
    dict(c=4, o=6, k=3, s=2, p=(0, 1), d=1, g=1),
    dict(c=4, o=8, k=3, s=1, p=2, d=2, g=2),
    dict(c=8, o=8, k=3, s=2, p=1, d=1, g=8),      # depthwise
    dict(c=5, o=7, k=1, s=1, p=0, d=1, g=1),
])
def test_conv2d(layout, cfg):
    c, o, k, g = cfg["c"], cfg["o"], cfg["k"], cfg["g"]
    x = rand(RNG, (1, c, 9, 10))
    w = rand(RNG, (o, c // g, k, k))
    pad = cfg["p"] if isinstance(cfg["p"], tuple) else (cfg["p"], cfg["p"])
    ref = conv2d_nchw(x, w, (cfg["s"],) * 2, pad * 2, (cfg["d"],) * 2, g)
    if layout == "NCHW":
        xi, wi, ref_l, kl = x, w, ref, "OIHW"
    else:
        xi, wi, ref_l, kl = to_nhwc(x), np.ascontiguousarray(w.transpose(2, 3, 1, 0)), \
            to_nhwc(ref), "HWIO"
    y = relay.nn.conv2d(v("x", xi.shape), v("w", wi.shape), strides=cfg["s"], padding=pad,
                        dilation=cfg["d"], groups=g, data_layout=layout, kernel_layout=kl)
    check_both(y, {"x": xi, "w": wi}, ref_l, rtol=1e-4, atol=1e-4)


def test_conv2d_transpose():
    x = rand(RNG, (1, 4, 5, 6))
    w = rand(RNG, (4, 3, 3, 3))
    y = relay.nn.conv2d_transpose(v("x", x.shape), v("w", w.shape), strides=(2, 2),
                                  padding=(1, 1), output_padding=(1, 1))
    ref = conv2d_transpose_nchw(x, w, (2, 2), (1, 1, 1, 1), (1, 1))
    check_both(y, {"x": x, "w": w}, ref, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ matmul family
def test_dense_and_bias_add():
    x, w, b = rand(RNG, (3, 17)), rand(RNG, (5, 17)), rand(RNG, (5,))
    y = relay.nn.bias_add(relay.nn.dense(v("x", x.shape), v("w", w.shape)), v("b", b.shape),
                          axis=-1)
    check_both(y, {"x": x, "w": w, "b": b}, x @ w.T + b, rtol=1e-5)


@pytest.mark.parametrize("transpose_b", [True, False])
def test_batch_matmul(transpose_b):
    a = rand(RNG, (2, 4, 6))
    b = rand(RNG, (2, 5, 6)) if transpose_b else rand(RNG, (2, 6, 5))
    y = relay.nn.batch_matmul(v("a", a.shape), v("b", b.shape), transpose_b=transpose_b)
    ref = a @ (b.transpose(0, 2, 1) if transpose_b else b)
    check_both(y, {"a": a, "b": b}, ref)


def test_bias_add_nchw_axis1():
    x, b = rand(RNG, (2, 3, 4, 4)), rand(RNG, (3,))
    check_both(relay.nn.bias_add(v("x", x.shape), v("b", b.shape)), {"x": x, "b": b},
               x + b[None, :, None, None])


# ------------------------------------------------------------------ elementwise
UNARY = {
    "relu": (relay.nn.relu, lambda x: np.maximum(x, 0)),
    "sigmoid": (relay.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "tanh": (relay.tanh, np.tanh),
    "erf": (relay.erf, erf),
    "sqrt": (lambda x: relay.sqrt(relay.abs(x)), lambda x: np.sqrt(np.abs(x))),
    "rsqrt": (lambda x: relay.rsqrt(relay.abs(x) + relay.const(0.5)),
              lambda x: 1 / np.sqrt(np.abs(x) + 0.5)),
    "exp": (relay.exp, np.exp),
    "log": (lambda x: relay.log(relay.abs(x) + relay.const(0.1)),
            lambda x: np.log(np.abs(x) + np.float32(0.1))),
    "abs": (relay.abs, np.abs),
    "negative": (relay.negative, np.negative),
    "leaky_relu": (lambda x: relay.nn.leaky_relu(x, alpha=0.2),
                   lambda x: np.where(x > 0, x, x * np.float32(0.2))),
    "clip": (lambda x: relay.clip(x, -0.3, 0.4), lambda x: np.clip(x, -0.3, 0.4)),
    "dropout": (lambda x: relay.nn.dropout(x, 0.3), lambda x: x),
    "zeros_like": (relay.zeros_like, np.zeros_like),
    "ones_like": (relay.ones_like, np.ones_like),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    make, ref = UNARY[name]
    x = rand(RNG, (3, 7), low=-2, high=2)
    check_both(make(v("x", x.shape)), {"x": x}, ref(x).astype("float32"))


BINARY = {"add": (relay.add, np.add), "subtract": (relay.subtract, np.subtract),
          "multiply": (relay.multiply, np.multiply), "divide": (relay.divide, np.divide),
          "maximum": (relay.maximum, np.maximum), "minimum": (relay.minimum, np.minimum),
          "power": (lambda a, b: relay.power(relay.abs(a), b),
                    lambda a, b: np.power(np.abs(a), b))}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasting(name):
    make, ref = BINARY[name]
    a = rand(RNG, (2, 3, 4), low=0.5, high=2)
    b = rand(RNG, (3, 1), low=0.5, high=2)
    check_both(make(v("a", a.shape), v("b", b.shape)), {"a": a, "b": b}, ref(a, b),
               rtol=1e-5)


def test_cast_and_where():
    x = rand(RNG, (4, 5), low=-3, high=3)
    y = relay.cast(v("x", x.shape), "int32")
    check_both(y, {"x": x}, x.astype("int32"))
    xv = v("x", x.shape)
    check_both(relay.where(relay.greater(xv, relay.const(0.0)), xv, relay.const(-1.0)), {"x": x},
               np.where(x > 0, x, np.float32(-1)))


def test_softmax_and_log_softmax():
    x = rand(RNG, (3, 9), low=-4, high=4)
    check_both(relay.nn.softmax(v("x", x.shape)), {"x": x}, softmax(x))
    check_both(relay.nn.log_softmax(v("x", x.shape), axis=0), {"x": x},
               np.log(softmax(x, axis=0)), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ pooling
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d(layout, kind):
    x = rand(RNG, (1, 3, 9, 8))
    ref = pool2d_nchw(x, (3, 3), (2, 2), (1, 1, 1, 1), kind)
    xi, refl = (x, ref) if layout == "NCHW" else (to_nhwc(x), to_nhwc(ref))
    make = relay.nn.max_pool2d if kind == "max" else relay.nn.avg_pool2d
    y = make(v("x", xi.shape), (3, 3), (2, 2), padding=(1, 1), layout=layout)
    check_both(y, {"x": xi}, refl)


def test_avg_pool_count_include_pad():
    x = rand(RNG, (1, 2, 6, 6))
    y = relay.nn.avg_pool2d(v("x", x.shape), (3, 3), (1, 1), padding=(1, 1),
                            count_include_pad=True)
    check_both(y, {"x": x}, pool2d_nchw(x, (3, 3), (1, 1), (1,) * 4, "avg", True))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_global_and_adaptive_avg_pool(layout):
    x = rand(RNG, (2, 3, 7, 5))
    xi = x if layout == "NCHW" else to_nhwc(x)
    back = (lambda r: r) if layout == "NCHW" else to_nhwc
    check_both(relay.nn.global_avg_pool2d(v("x", xi.shape), layout=layout), {"x": xi},
               back(x.mean(axis=(2, 3), keepdims=True)))
    check_both(relay.nn.adaptive_avg_pool2d(v("x", xi.shape), (3, 2), layout=layout),
               {"x": xi}, back(adaptive_avg_nchw(x, (3, 2))))


# ------------------------------------------------------------------ normalization
def test_batch_norm_all_outputs():
    x = rand(RNG, (2, 4, 3, 3))
    g, b, m = rand(RNG, (4,)), rand(RNG, (4,)), rand(RNG, (4,))
    var = rand(RNG, (4,), low=0.5, high=1.5)
    bn = relay.nn.batch_norm(v("x", x.shape), v("g", (4,)), v("b", (4,)), v("m", (4,)),
                             v("v", (4,)), epsilon=1e-3)
    ref = (x - m[:, None, None]) / np.sqrt(var[:, None, None] + 1e-3) * g[:, None, None] + \
        b[:, None, None]
    check_both(bn.astuple(), {"x": x, "g": g, "b": b, "m": m, "v": var}, [ref, m, var],
               rtol=1e-5)


def test_layer_norm():
    x, g, b = rand(RNG, (3, 10)), rand(RNG, (10,)), rand(RNG, (10,))
    y = relay.nn.layer_norm(v("x", x.shape), v("g", (10,)), v("b", (10,)), epsilon=1e-5)
    check_both(y, {"x": x, "g": g, "b": b}, layer_norm(x, g, b), rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ data movement
def test_pad_and_batch_flatten():
    x = rand(RNG, (2, 3, 4))
    check_both(relay.nn.pad(v("x", x.shape), ((0, 0), (1, 2), (0, 1)), pad_value=0.5),
               {"x": x}, np.pad(x, ((0, 0), (1, 2), (0, 1)), constant_values=0.5))
    check_both(relay.nn.batch_flatten(v("x", x.shape)), {"x": x}, x.reshape(2, 12))


@pytest.mark.parametrize("method", ["linear", "nearest_neighbor"])
def test_resize2d(method):
    x = rand(RNG, (1, 2, 5, 4))
    if method == "linear":
        y = relay.image.resize2d(v("x", x.shape), (7, 9))
        ref = resize_linear_half_pixel_nchw(x, (7, 9))
    else:
        y = relay.image.resize2d(v("x", x.shape), (10, 8), method="nearest_neighbor",
                                 coordinate_transformation_mode="asymmetric",
                                 rounding_method="floor")
        ref = resize_nearest_asymmetric_nchw(x, (10, 8))
    check_both(y, {"x": x}, ref, rtol=1e-5)


def test_reshape_special_values():
    x = rand(RNG, (2, 3, 4))
    check_both(relay.reshape(v("x", x.shape), (0, -1)), {"x": x}, x.reshape(2, 12))
    check_both(relay.reshape(v("x", x.shape), (-1, 4)), {"x": x}, x.reshape(6, 4))


def test_transpose_squeeze_expand_dims():
    x = rand(RNG, (2, 1, 4))
    check_both(relay.transpose(v("x", x.shape), (2, 0, 1)), {"x": x}, x.transpose(2, 0, 1))
    check_both(relay.transpose(v("x", x.shape)), {"x": x}, x.transpose())
    check_both(relay.squeeze(v("x", x.shape), axis=[1]), {"x": x}, x[:, 0])
    check_both(relay.expand_dims(v("x", x.shape), 1, 2), {"x": x}, x[:, None, None])


def test_concatenate_and_split():
    a, b = rand(RNG, (2, 3)), rand(RNG, (2, 5))
    check_both(relay.concatenate([v("a", a.shape), v("b", b.shape)], axis=1),
               {"a": a, "b": b}, np.concatenate([a, b], axis=1))
    x = rand(RNG, (6, 4))
    parts = relay.split(v("x", x.shape), 3, axis=0)
    check_both(parts.astuple(), {"x": x}, list(np.split(x, 3)))
    parts = relay.split(v("x", x.shape), (1, 3), axis=1)
    check_both(relay.Tuple([parts[0], parts[2]]), {"x": x}, [x[:, :1], x[:, 3:]])


def test_strided_slice_and_take():
    x = rand(RNG, (5, 6))
    check_both(relay.strided_slice(v("x", x.shape), (1, 0), (5, 6), (2, 3)), {"x": x},
               x[1:5:2, 0:6:3])
    idx = np.array([[0, 4], [2, 2]], dtype="int32")
    check_both(relay.take(v("x", x.shape), v("i", idx.shape, "int32"), axis=0),
               {"x": x, "i": idx}, x[idx])


# ------------------------------------------------------------------ reductions
@pytest.mark.parametrize("name,npfn", [("sum", np.sum), ("mean", np.mean), ("max", np.max),
                                       ("min", np.min)])
def test_reductions(name, npfn):
    x = rand(RNG, (3, 4, 5))
    make = getattr(relay, name)
    check_both(make(v("x", x.shape), axis=(0, 2)), {"x": x}, npfn(x, axis=(0, 2)), rtol=1e-5)
    check_both(make(v("x", x.shape), axis=1, keepdims=True), {"x": x},
               npfn(x, axis=1, keepdims=True), rtol=1e-5)


def test_argmax():
    x = rand(RNG, (4, 7))
    check_both(relay.argmax(v("x", x.shape), axis=1), {"x": x},
               np.argmax(x, axis=1).astype("int32"))


def test_every_listed_op_is_registered():
    listed = ["nn.conv2d", "nn.conv2d_transpose", "nn.dense", "nn.batch_matmul", "nn.bias_add",
              "nn.relu", "nn.leaky_relu", "sigmoid", "tanh", "erf", "nn.softmax",
              "nn.log_softmax", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
              "nn.adaptive_avg_pool2d", "nn.batch_norm", "nn.layer_norm", "nn.dropout",
              "nn.pad", "nn.batch_flatten", "image.resize2d", "add", "subtract", "multiply",
              "divide", "power", "maximum", "minimum", "sqrt", "rsqrt", "exp", "log", "abs",
              "negative", "clip", "cast", "reshape", "transpose", "squeeze", "expand_dims",
              "concatenate", "split", "strided_slice", "take", "sum", "mean", "max", "min",
              "argmax", "where", "zeros_like", "ones_like"]
    for name in listed:
        op = relay.op.get(name)
        assert op.name == name
        assert op.get_attr("TOpPattern") in ("elemwise", "broadcast", "injective",
                                             "comm_reduce", "out_elemwise_fusable", "opaque")
