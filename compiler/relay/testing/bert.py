"""BERT encoder layers (Devlin et al. 2019): multi-head self-attention (batch_matmul,
scaled softmax), residual + layer norm, a GELU feed-forward network, residual + layer
norm.  The input ``data`` is the embedded sequence ``(batch, seq_len, hidden)``;
``encoder_layer`` builds one layer, for tests.
"""
from __future__ import annotations

import math

from .. import expr as X
from ..op import nn as nn_ops
from ..op import nn_more
from ..op import tensor as ops
from ..op import transform as tops
from .init import create_workload
from .layers import dense, function_of

__all__ = ["gelu", "encoder_layer", "get_net", "get_workload"]


def gelu(x, dtype="float32"):
    """x * 0.5 * (1 + erf(x / sqrt(2))), the exact GELU."""
    c = X.const
    return ops.multiply(ops.multiply(x, c(0.5, dtype)),
                        ops.add(c(1.0, dtype), ops.erf(ops.multiply(x, c(1 / math.sqrt(2),
                                                                          dtype)))))


def _layer_norm(x, name, hidden, dtype):
    g = X.var(f"{name}_gamma", shape=(hidden,), dtype=dtype)
    b = X.var(f"{name}_beta", shape=(hidden,), dtype=dtype)
    return nn_more.layer_norm(x, g, b, axis=-1, epsilon=1e-12)


def _heads(x, batch, seq, heads, d):
    """(batch*seq, hidden) -> (batch*heads, seq, d)."""
    x = tops.reshape(x, (batch, seq, heads, d))
    return tops.reshape(tops.transpose(x, (0, 2, 1, 3)), (batch * heads, seq, d))


def encoder_layer(x, name: str, batch: int, seq: int, hidden: int, heads: int,
                  intermediate: int, dtype="float32"):
    """One layer on ``x`` of shape (batch * seq, hidden); returns the same shape."""
    d = hidden // heads
    q = _heads(dense(x, f"{name}_query", hidden, hidden, dtype=dtype), batch, seq, heads, d)
    k = _heads(dense(x, f"{name}_key", hidden, hidden, dtype=dtype), batch, seq, heads, d)
    v = _heads(dense(x, f"{name}_value", hidden, hidden, dtype=dtype), batch, seq, heads, d)
    scores = ops.multiply(nn_ops.batch_matmul(q, k), X.const(1 / math.sqrt(d), dtype))
    probs = nn_ops.softmax(scores, axis=-1)
    ctx = nn_ops.batch_matmul(probs, v, transpose_b=False)          # (b*h, seq, d)
    ctx = tops.transpose(tops.reshape(ctx, (batch, heads, seq, d)), (0, 2, 1, 3))
    ctx = tops.reshape(ctx, (batch * seq, hidden))
    att = dense(ctx, f"{name}_attn_out", hidden, hidden, dtype=dtype)
    x = _layer_norm(ops.add(att, x), f"{name}_ln1", hidden, dtype)
    h = gelu(dense(x, f"{name}_ffn1", hidden, intermediate, dtype=dtype), dtype)
    h = dense(h, f"{name}_ffn2", intermediate, hidden, dtype=dtype)
    return _layer_norm(ops.add(h, x), f"{name}_ln2", hidden, dtype)


def get_net(batch_size=1, seq_len=128, hidden_size=768, num_heads=12, intermediate_size=3072,
            num_layers=1, dtype="float32") -> X.Function:
    if hidden_size % num_heads:
        raise ValueError(f"bert: hidden_size {hidden_size} is not a multiple of num_heads "
                         f"{num_heads}")
    data = X.var("data", shape=(batch_size, seq_len, hidden_size), dtype=dtype)
    x = tops.reshape(data, (batch_size * seq_len, hidden_size))
    for k in range(num_layers):
        x = encoder_layer(x, f"layer{k}", batch_size, seq_len, hidden_size, num_heads,
                          intermediate_size, dtype)
    return function_of(tops.reshape(x, (batch_size, seq_len, hidden_size)))


def get_workload(batch_size=1, seq_len=128, hidden_size=768, num_heads=12,
                 intermediate_size=3072, num_layers=1, dtype="float32", seed=0):
    """``(mod, params)`` of ``num_layers`` BERT encoder layers (BERT-base sizes by default)."""
    return create_workload(get_net(batch_size, seq_len, hidden_size, num_heads,
                                   intermediate_size, num_layers, dtype), seed)
