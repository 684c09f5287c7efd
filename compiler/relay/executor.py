"""``relay.create_executor``: run a module without handling the build yourself.

"debug" (or "interpreter") evaluates with the numpy references (``interpreter``);
"graph" builds the module with ``relay.build`` under the current PassContext and runs
it on the graph executor.  Both return ``evaluate()`` -> a function taking the inputs
by position or name and returning NDArrays (a tuple of them for a tuple result).
"""
from __future__ import annotations

from ..runtime.ndarray import cpu
from .backend.graph_executor import GraphModule
from .build_module import build
from .errors import RelayError, RelayInputError
from .interpreter import Executor, bind_params
from .module import IRModule
from .transform.infer_type import infer_type
from .ty import TupleType

__all__ = ["create_executor", "GraphExecutor"]


class GraphExecutor:
    """``create_executor("graph", mod=mod, target="llvm").evaluate()(x)``."""

    def __init__(self, mod: IRModule, device=None, target="llvm"):
        self.mod, self.device, self.target = infer_type(mod), device or cpu(), target

    def evaluate(self, expr=None):
        if expr is not None:
            raise RelayError("create_executor('graph').evaluate: only the module's main can "
                             "be evaluated; build another IRModule for other expressions")
        gm = GraphModule(build(self.mod, self.target)["default"](self.device))
        names = [p.name_hint for p in self.mod["main"].params]

        def run(*args, **kwargs):
            if len(args) > len(names):
                raise RelayInputError(f"main takes {len(names)} inputs ({names}), got "
                                      f"{len(args)}")
            given = dict(zip(names, args))
            given.update(kwargs)
            missing = [n for n in names if n not in given]
            if missing:
                raise RelayInputError(f"inputs {missing} were not given")
            gm.run(**given)
            outs = tuple(gm.get_output(i) for i in range(gm.get_num_outputs()))
            return outs if tuple_result else outs[0]
        tuple_result = isinstance(getattr(self.mod["main"].checked_type, "ret_type", None),
                                  TupleType)
        return run


def create_executor(kind: str = "debug", mod=None, device=None, target="llvm", params=None):
    """TVM's ``relay.create_executor`` for kinds "debug"/"interpreter" and "graph"."""
    if mod is None:
        raise RelayError("create_executor: pass mod=IRModule")
    if not isinstance(mod, IRModule):
        raise RelayError(f"create_executor: mod is a {type(mod).__name__}; expected an "
                         "IRModule (IRModule.from_expr(fn))")
    if params:
        mod = bind_params(mod, params)
    if kind in ("debug", "interpreter"):
        return Executor(mod, device, target)
    if kind == "graph":
        return GraphExecutor(mod, device, target)
    raise RelayError(f"create_executor: kind {kind!r}; expected 'debug', 'interpreter' or "
                     "'graph'")
