"""Whole models for the ``tune`` command and the benchmarks: load, build, time.

``load_network(spec)`` gives ``Network(mod, params, inputs, name)`` for a model-zoo name
(``resnet-18``, ``resnet-34``, ``resnet-50``, ``mobilenet-v2``, ``bert``, ``mlp``) or an
``.onnx`` file (input shapes from the model or ``shapes``).  ``build_network`` builds it
with the default schedules or, given a log, under ``ApplyHistoryBest``; ``time_network``
times a built library (``network_timer``: one timing per call, for interleaving two
libraries); ``onnxruntime_latency`` times the same ONNX file with
onnxruntime (2 threads) when it is installed.

Invariants: every random input is drawn from a seeded generator, so two builds of one
network see the same data; optional packages (onnx, onnxruntime) are imported only
when an ONNX file is used, with an error naming the ``[onnx]`` extra.
"""
from __future__ import annotations

import importlib
import os
import time
from dataclasses import dataclass, field

import numpy as np

import compiler
from compiler import relay
from compiler.contrib import graph_executor
from compiler.relay import testing
from compiler.relay.ty import TensorType
from compiler.transform import PassContext

from .dispatch import ApplyHistoryBest
from .errors import AutoSchedError

__all__ = ["Network", "ZOO", "load_network", "build_network", "network_timer", "time_network",
           "onnxruntime_latency", "parse_shapes"]

ZOO = {
    "mlp": lambda batch: testing.mlp.get_workload(batch_size=batch),
    "resnet-18": lambda batch: testing.resnet.get_workload(num_layers=18, batch_size=batch),
    "resnet-34": lambda batch: testing.resnet.get_workload(num_layers=34, batch_size=batch),
    "resnet-50": lambda batch: testing.resnet.get_workload(num_layers=50, batch_size=batch),
    "mobilenet-v2": lambda batch: testing.mobilenet.get_workload(batch_size=batch),
    "bert": lambda batch: testing.bert.get_workload(batch_size=batch, seq_len=128),
}


@dataclass
class Network:
    name: str
    mod: relay.IRModule
    params: dict
    inputs: dict = field(default_factory=dict)    # input name -> numpy array
    onnx_path: str | None = None


def parse_shapes(items) -> dict:
    """``["data:1,3,224,224", ...]`` -> ``{"data": (1, 3, 224, 224)}``."""
    out = {}
    for item in items or ():
        name, sep, dims = str(item).rpartition(":")
        try:
            shape = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            shape = ()
        if not sep or not name or not shape:
            raise AutoSchedError(f"--shape {item!r}: expected NAME:D1,D2,... such as "
                                 "data:1,3,224,224")
        out[name] = shape
    return out


def _onnx():
    try:
        return importlib.import_module("onnx")
    except ImportError:
        raise AutoSchedError("tuning an ONNX file needs the onnx package: install the extra "
                             "with  pip install -e \".[onnx]\"") from None


def load_network(spec: str, batch: int = 1, shapes: dict | None = None,
                 seed: int = 0) -> Network:
    """A zoo network by name, or an ``.onnx`` file (see the module doc)."""
    if spec in ZOO:
        mod, params = ZOO[spec](batch)
        path = None
    elif spec.endswith(".onnx") or os.path.exists(spec):
        if not os.path.exists(spec):
            raise AutoSchedError(f"ONNX file {spec!r} does not exist")
        model = _onnx().load(spec)
        mod, params = relay.frontend.from_onnx(model, shape=shapes or None)
        path = spec
    else:
        raise AutoSchedError(f"unknown network {spec!r}; expected an .onnx file or one of "
                             f"{', '.join(sorted(ZOO))}")
    rng = np.random.default_rng(seed)
    inputs = {}
    for p in mod["main"].params:
        if p.name_hint in params:
            continue
        t = p.type_annotation
        if not isinstance(t, TensorType):
            raise AutoSchedError(f"network {spec}: input {p.name_hint!r} is not a tensor")
        shape = tuple(int(d) for d in t.shape)
        if np.dtype(t.dtype).kind == "f":
            inputs[p.name_hint] = rng.standard_normal(shape).astype(t.dtype)
        else:
            inputs[p.name_hint] = rng.integers(0, 2, shape).astype(t.dtype)
    return Network(spec, mod, params, inputs, path)


def build_network(net: Network, target="llvm", log: str | None = None):
    """The built library: default schedules, or the log's best records where they apply."""
    config = {"relay.backend.use_auto_scheduler": log is not None}
    with PassContext(opt_level=3, config=config):
        if log is None:
            return relay.build(net.mod, target, params=net.params)
        with ApplyHistoryBest(log):
            return relay.build(net.mod, target, params=net.params)


def network_timer(lib, net: Network, min_repeat_ms: float = 200):
    """``(timer, outputs)`` of a built library on the network's inputs: ``timer()`` runs
    it for at least ``min_repeat_ms`` and returns the seconds per run, so two libraries
    can be timed in alternation (``side_by_side.interleaved``)."""
    m = graph_executor.GraphModule(lib["default"](compiler.cpu(0)))
    m.set_input(**net.inputs)
    m.run()
    outs = [m.get_output(i).numpy() for i in range(m.get_num_outputs())]

    def timer() -> float:
        return float(m.benchmark(repeat=1, number=1, min_repeat_ms=min_repeat_ms).results[0])
    return timer, outs


def time_network(lib, net: Network, repeat: int = 5, min_repeat_ms: float = 200):
    """``(median seconds per run, outputs)`` of a built library on the network's inputs."""
    timer, outs = network_timer(lib, net, min_repeat_ms)
    return float(np.median([timer() for _ in range(repeat)])), outs


def onnxruntime_latency(net: Network, repeat: int = 5, threads: int = 2):
    """``(median seconds per run, outputs)`` of onnxruntime on the network's ONNX file,
    or None without a file or without onnxruntime."""
    if net.onnx_path is None:
        return None
    try:
        ort = importlib.import_module("onnxruntime")
    except ImportError:
        return None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(net.onnx_path, opts, providers=["CPUExecutionProvider"])
    feed = dict(net.inputs)
    outs = sess.run(None, feed)
    samples = []
    for _ in range(repeat):
        n, t0 = 0, time.perf_counter()
        while n == 0 or time.perf_counter() - t0 < 0.2:
            sess.run(None, feed)
            n += 1
        samples.append((time.perf_counter() - t0) / n)
    return float(np.median(samples)), [np.asarray(o) for o in outs]
