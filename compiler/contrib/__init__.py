"""Contributed runtimes (TVM's ``tvm.contrib``): the graph executor, cblas (extern matmul)."""
from . import cblas, graph_executor

__all__ = ["cblas", "graph_executor"]
