"""Seeded random-weight ONNX models built with ``onnx.helper`` (no downloads): the
end-to-end workloads of ``from_onnx``, for tests, ``scripts/onnx_models.py`` and
``scripts/bench_e2e.py``.

``MODELS`` maps a name to a builder returning ``(onnx.ModelProto, {input: shape})``:
resnet18 and resnet50 (1x3x224x224), mobilenet_v2, bert_layer (a BERT-base encoder layer
on a 1x128x768 sequence, as PyTorch exports it at opset 17: MatMul + Add projections,
Reshape/Transpose heads, Softmax, LayerNormalization, erf GELU) and mlp.

Invariants: the same seed gives the same bytes; every model passes ``onnx.checker``; the
``onnx`` package (the extra ``[onnx]``) is imported only when a model is built, so
``relay.testing`` imports without it.
"""
from __future__ import annotations

import math

import numpy as np

from ..frontend.common import import_onnx

__all__ = ["MODELS", "resnet", "mobilenet_v2", "bert_layer", "mlp"]

OPSET = 17


class Builder:
    """Nodes, initializers and unique names for one graph."""

    def __init__(self, seed: int):
        self.onnx = import_onnx()
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def const(self, value, base: str = "c") -> str:
        n = self.name(base)
        self.inits.append(self.onnx.numpy_helper.from_array(np.asarray(value), n))
        return n

    def weight(self, shape, base: str, fan_in=None) -> str:
        fan_in = fan_in or int(np.prod(shape[1:]))
        limit = math.sqrt(6.0 / (fan_in + shape[0]))
        return self.const(self.rng.uniform(-limit, limit, shape).astype(np.float32), base)

    def op(self, op_type: str, inputs, n_out: int = 1, **attrs):
        outs = [self.name(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), outs, name=outs[0],
                                                     **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, inputs: dict, output: str, out_shape, name: str):
        helper, f32 = self.onnx.helper, self.onnx.TensorProto.FLOAT
        g = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(k, f32, list(v)) for k, v in inputs.items()],
            [helper.make_tensor_value_info(output, f32, list(out_shape))], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="tensor-autosched onnx_models")
        self.onnx.checker.check_model(m)
        return m, inputs


# ------------------------------------------------------------------ CNN pieces
def conv_bn(b: Builder, x: str, cin: int, cout: int, k: int, stride: int = 1,
            group: int = 1, relu=True):
    w = b.weight((cout, cin // group, k, k), "w")
    y = b.op("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride],
             pads=[k // 2] * 4, group=group)
    gamma = b.const(b.rng.uniform(0.8, 1.2, cout).astype(np.float32), "gamma")
    beta = b.const(b.rng.uniform(-0.1, 0.1, cout).astype(np.float32), "beta")
    mean = b.const(b.rng.uniform(-0.1, 0.1, cout).astype(np.float32), "mean")
    var = b.const(b.rng.uniform(0.5, 1.5, cout).astype(np.float32), "var")
    y = b.op("BatchNormalization", [y, gamma, beta, mean, var], epsilon=1e-5)
    if relu == "relu6":
        return b.op("Clip", [y, b.const(np.float32(0)), b.const(np.float32(6))])
    return b.op("Relu", [y]) if relu else y


def classifier(b: Builder, x: str, cin: int, classes: int) -> str:
    y = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    w = b.weight((classes, cin), "fc_w")
    return b.op("Gemm", [y, w, b.const(np.zeros(classes, np.float32), "fc_b")], transB=1)


def resnet(depth: int = 18, seed: int = 0, batch: int = 1, classes: int = 1000):
    units, bottleneck = {18: ([2, 2, 2, 2], False), 50: ([3, 4, 6, 3], True)}[depth]
    b = Builder(seed)
    y = conv_bn(b, "data", 3, 64, 7, 2)
    y = b.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    widths = [256, 512, 1024, 2048] if bottleneck else [64, 128, 256, 512]
    for s, (n, cout) in enumerate(zip(units, widths)):
        for k in range(n):
            stride = 2 if s > 0 and k == 0 else 1
            if bottleneck:
                mid = cout // 4
                z = conv_bn(b, y, cin, mid, 1)
                z = conv_bn(b, z, mid, mid, 3, stride)
                z = conv_bn(b, z, mid, cout, 1, relu=False)
            else:
                z = conv_bn(b, y, cin, cout, 3, stride)
                z = conv_bn(b, z, cout, cout, 3, relu=False)
            short = y if stride == 1 and cin == cout else \
                conv_bn(b, y, cin, cout, 1, stride, relu=False)
            y = b.op("Relu", [b.op("Add", [z, short])])
            cin = cout
    out = classifier(b, y, cin, classes)
    return b.model({"data": (batch, 3, 224, 224)}, out, (batch, classes), f"resnet{depth}")


def mobilenet_v2(seed: int = 0, batch: int = 1, classes: int = 1000):
    b = Builder(seed)
    y = conv_bn(b, "data", 3, 32, 3, 2, relu="relu6")
    cin = 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for k in range(n):
            stride = s if k == 0 else 1
            hidden = cin * t
            z = y if t == 1 else conv_bn(b, y, cin, hidden, 1, relu="relu6")
            z = conv_bn(b, z, hidden, hidden, 3, stride, group=hidden, relu="relu6")
            z = conv_bn(b, z, hidden, c, 1, relu=False)
            y = b.op("Add", [z, y]) if stride == 1 and cin == c else z
            cin = c
    y = conv_bn(b, y, cin, 1280, 1, relu="relu6")
    out = classifier(b, y, 1280, classes)
    return b.model({"data": (batch, 3, 224, 224)}, out, (batch, classes), "mobilenet_v2")


# ------------------------------------------------------------------ BERT layer and MLP
def _linear(b: Builder, x: str, n_in: int, n_out: int) -> str:
    w = b.weight((n_in, n_out), "w", fan_in=n_in)
    bias = b.const(b.rng.uniform(-0.1, 0.1, n_out).astype(np.float32), "bias")
    return b.op("Add", [b.op("MatMul", [x, w]), bias])


def _layer_norm(b: Builder, x: str, hidden: int) -> str:
    g = b.const(b.rng.uniform(0.8, 1.2, hidden).astype(np.float32), "ln_g")
    beta = b.const(b.rng.uniform(-0.1, 0.1, hidden).astype(np.float32), "ln_b")
    return b.op("LayerNormalization", [x, g, beta], axis=-1, epsilon=1e-12)


def bert_layer(seed: int = 0, batch: int = 1, seq: int = 128, hidden: int = 768,
               heads: int = 12, inter: int = 3072):
    b = Builder(seed)
    d = hidden // heads
    split = b.const(np.array([batch, seq, heads, d], np.int64), "shape")

    def heads_of(x):
        return b.op("Transpose", [b.op("Reshape", [x, split])], perm=[0, 2, 1, 3])

    q = heads_of(_linear(b, "data", hidden, hidden))
    k = heads_of(_linear(b, "data", hidden, hidden))
    v = heads_of(_linear(b, "data", hidden, hidden))
    scores = b.op("Div", [b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])]),
                          b.const(np.float32(math.sqrt(d)))])
    ctx = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    ctx = b.op("Reshape", [b.op("Transpose", [ctx], perm=[0, 2, 1, 3]),
                           b.const(np.array([batch, seq, hidden], np.int64), "shape")])
    x = _layer_norm(b, b.op("Add", [_linear(b, ctx, hidden, hidden), "data"]), hidden)
    h = _linear(b, x, hidden, inter)
    gelu = b.op("Mul", [b.op("Mul", [h, b.op("Add", [b.op("Erf", [b.op(
        "Div", [h, b.const(np.float32(math.sqrt(2)))])]), b.const(np.float32(1))])]),
        b.const(np.float32(0.5))])
    out = _layer_norm(b, b.op("Add", [_linear(b, gelu, inter, hidden), x]), hidden)
    return b.model({"data": (batch, seq, hidden)}, out, (batch, seq, hidden), "bert_layer")


def mlp(seed: int = 0, batch: int = 1, classes: int = 10):
    b = Builder(seed)
    y = b.op("Flatten", ["data"], axis=1)
    for n_in, n_out in ((784, 128), (128, 64)):
        y = b.op("Relu", [_linear(b, y, n_in, n_out)])
    out = b.op("Softmax", [_linear(b, y, 64, classes)], axis=-1)
    return b.model({"data": (batch, 1, 28, 28)}, out, (batch, classes), "mlp")


MODELS = {"resnet18": lambda seed=0: resnet(18, seed), "resnet50": lambda seed=0: resnet(50, seed),
          "mobilenet_v2": mobilenet_v2, "bert_layer": bert_layer, "mlp": mlp}
