"""Contributed runtimes and tools (TVM's ``tvm.contrib``): the graph executor, cblas
(extern matmul), ``cc`` (create_shared) and ``utils`` (tempdir)."""
from . import cblas, cc, graph_executor, utils

__all__ = ["cblas", "cc", "graph_executor", "utils"]
