"""Relay's backend: the TE compiler (fused groups -> kernels), schedule-provider dispatch,
graph planning, the graph executor and the factory ``relay.build`` returns."""
from . import dispatch, executor_factory, graph_executor, graph_plan, te_compiler

__all__ = ["dispatch", "executor_factory", "graph_executor", "graph_plan", "te_compiler"]
