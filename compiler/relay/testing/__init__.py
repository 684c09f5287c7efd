"""The model zoo (TVM's ``relay.testing``): ``mlp``, ``resnet``, ``mobilenet`` (v2) and
``bert``, each with ``get_workload(...) -> (mod, params)`` and seeded weights."""
from . import bert, init, layers, mlp, mobilenet, resnet
from .init import create_workload

__all__ = ["bert", "init", "layers", "mlp", "mobilenet", "resnet", "create_workload"]
