"""Contributed runtimes and tools (TVM's ``tvm.contrib``): the graph executor, ``cc``
(create_shared) and ``utils`` (tempdir)."""
from . import cc, graph_executor, utils

__all__ = ["cc", "graph_executor", "utils"]
