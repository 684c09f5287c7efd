"""Workload registry: named functions returning the tensors of a computation.

A workload key is ``json.dumps([func_name, *args])`` (as TVM's auto-scheduler), so a key
alone recreates the computation in any process that imported the registering module.
Arguments must be JSON values (ints, floats, strings, lists); tuples become lists.

Fused groups of a relay model have no function: their key is
``json.dumps([sha256(DAG text)[:16], *shapes])`` (``compiler.relay.backend.dispatch``) and
``register_workload_tensors`` maps it to the group's tensors in this process, as TVM's
``register_workload_tensors`` does; ``workload_key_to_tensors`` looks there first.
"""
from __future__ import annotations

import json

from compiler.te.tensor import Tensor

from .errors import WorkloadError

WORKLOAD_FUNCS: dict = {}
# workload key -> tensors, for DAG-keyed workloads (fused groups of relay models)
WORKLOAD_TENSORS: dict = {}


def register_workload(func_or_name=None, f=None, override: bool = False):
    """Register a workload function; usable as ``@register_workload`` or with a name."""
    if callable(func_or_name):
        return register_workload(func_or_name.__name__, func_or_name, override)
    name = func_or_name

    def register(fn):
        key = name or fn.__name__
        if key in WORKLOAD_FUNCS and WORKLOAD_FUNCS[key] is not fn and not override:
            raise WorkloadError(f"workload {key!r} is already registered "
                                "(pass override=True to replace it)")
        WORKLOAD_FUNCS[key] = fn
        return fn

    return register(f) if f is not None else register


def _jsonable(args) -> list:
    out: list = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out.append(_jsonable(a))
        elif isinstance(a, bool) or a is None or isinstance(a, (int, float, str)):
            out.append(a)
        elif hasattr(a, "__index__"):
            out.append(int(a))
        else:
            raise WorkloadError(f"workload argument {a!r} (type {type(a).__name__}) is not a "
                                "JSON value; use ints, floats, strings or lists")
    return out


def make_workload_key(func, args) -> str:
    name = func if isinstance(func, str) else func.__name__
    if not isinstance(func, str) and WORKLOAD_FUNCS.get(name) is not func:
        # registered under a custom name: find it by identity
        name = next((k for k, f in WORKLOAD_FUNCS.items() if f is func), name)
    if name not in WORKLOAD_FUNCS:
        raise WorkloadError(f"workload function {name!r} is not registered; decorate it with "
                            "@autosched.register_workload")
    return json.dumps([name, *_jsonable(args)])


def decode_workload_key(key: str) -> tuple:
    try:
        obj = json.loads(key)
    except (TypeError, ValueError):
        raise WorkloadError(f"workload key {key!r} is not valid JSON; expected "
                            "'[\"func_name\", arg, ...]'") from None
    if not isinstance(obj, list) or not obj or not isinstance(obj[0], str):
        raise WorkloadError(f"workload key {key!r} must be a JSON list starting with the "
                            "function name")
    return obj[0], obj[1:]


def register_workload_tensors(key: str, tensors) -> str:
    """Remember ``tensors`` as the computation of ``key`` (a DAG-hash key); returns it."""
    tensors = list(tensors)
    if not tensors or not all(isinstance(t, Tensor) for t in tensors):
        raise WorkloadError(f"register_workload_tensors({key!r}): expected a non-empty list of "
                            f"tensors, got {tensors!r:.200}")
    WORKLOAD_TENSORS[key] = tensors
    return key


def workload_key_to_tensors(key: str) -> list:
    """The tensors of ``key``: registered tensors, else the registered function's."""
    if key in WORKLOAD_TENSORS:
        return list(WORKLOAD_TENSORS[key])
    name, args = decode_workload_key(key)
    fn = WORKLOAD_FUNCS.get(name)
    if fn is None:
        known = ", ".join(sorted(WORKLOAD_FUNCS)) or "none"
        raise WorkloadError(f"unknown workload {name!r} in key {key}; registered workloads: "
                            f"{known}")
    tensors = fn(*args)
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    if not tensors or not all(isinstance(t, Tensor) for t in tensors):
        raise WorkloadError(f"workload {name!r} must return a list of tensors, got {tensors!r}")
    return tensors
