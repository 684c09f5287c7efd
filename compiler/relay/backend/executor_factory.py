"""What ``relay.build`` returns (TVM's ``GraphExecutorFactoryModule``), and its export.

``lib["default"](dev)`` creates a graph executor module; ``get_graph_json``, ``get_lib``,
``get_params`` give the parts; ``export_library(path)`` writes the kernel and driver
objects, the graph JSON, the memory layout and the params (``.npz``) into one file that
``compiler.runtime.load_module(path)`` links back without compiling anything.
"""
from __future__ import annotations

import io
import json

import numpy as np

from ...errors import BuildError
from ...runtime.export import register_loader, save_library
from ...runtime.jit import check_runnable
from ...runtime.ndarray import array
from ...target import parse_target
from .graph_executor import GraphLib, GraphModule, Layout

__all__ = ["GraphExecutorFactoryModule", "KIND"]

KIND = "graph_executor_factory"


class GraphExecutorFactoryModule:
    def __init__(self, graph_json: str, lib: GraphLib, params: dict, layout: Layout,
                 target, stats: dict | None = None):
        self.graph_json, self.lib, self.layout = graph_json, lib, layout
        self.params = {k: np.asarray(v) for k, v in params.items()}
        self.target = target
        self.stats = dict(stats or {})     # build statistics (kernels, tuned/fallback groups)
        # kernel name -> lowered PrimFunc, for review and tests (not exported: a loaded
        # library has only object code)
        self.lowered_funcs: dict = {}
        # kernel name -> (workload key, scheduled by a provider), as the build chose
        self.kernel_keys: dict = {}

    def __getitem__(self, key):
        if key != "default":
            raise KeyError(f"factory module has only 'default', not {key!r}")
        return lambda dev=None: GraphModule(self, dev)

    def get_graph_json(self) -> str:
        return self.graph_json

    def get_lib(self) -> GraphLib:
        return self.lib

    def get_params(self) -> dict:
        return {k: array(v) for k, v in self.params.items()}

    def export_library(self, path) -> None:
        buf = io.BytesIO()
        np.savez(buf, **self.params)  # type: ignore[arg-type]  # names -> arrays
        files = {"graph.json": self.graph_json.encode(),
                 "layout.json": json.dumps(self.layout.to_json()).encode(),
                 "params.npz": buf.getvalue()}
        objects = []
        for k, (name, obj) in enumerate(self.lib.objects.items()):
            files[f"objects/{k}.o"] = obj
            objects.append([name, f"objects/{k}.o"])
        save_library(path, KIND, {"target": str(self.target), "driver": self.lib.driver,
                                  "kernels": self.lib.kernel_names, "objects": objects,
                                  "uses_gomp": self.lib.uses_gomp, "stats": self.stats}, files)

    def __repr__(self) -> str:
        return (f"GraphExecutorFactoryModule({len(self.lib.kernel_names)} kernels, "
                f"{len(self.params)} params)")


def _load(manifest: dict, files: dict) -> GraphExecutorFactoryModule:
    target = parse_target(manifest["target"])
    try:
        check_runnable(target)
    except BuildError as e:
        raise BuildError(f"load_module: this library was built for {target} and cannot run "
                         f"here: {e}") from None
    objects = {name: files[path] for name, path in manifest["objects"]}
    lib = GraphLib(objects, manifest["kernels"], manifest["driver"],
                   bool(manifest.get("uses_gomp", True)))
    with np.load(io.BytesIO(files["params.npz"]), allow_pickle=False) as z:
        params = {k: z[k] for k in z.files}
    layout = Layout.from_json(json.loads(files["layout.json"]))
    return GraphExecutorFactoryModule(files["graph.json"].decode(), lib, params, layout, target,
                                      manifest.get("stats"))


register_loader(KIND, _load)

