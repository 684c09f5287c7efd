"""TVM's ``tvm.contrib.graph_executor``: ``GraphModule(lib["default"](dev))`` runs a model
built by ``relay.build`` (the implementation is ``relay.backend.graph_executor``)."""
from ..relay.backend.graph_executor import BenchmarkResult, GraphModule, create

__all__ = ["GraphModule", "BenchmarkResult", "create"]
