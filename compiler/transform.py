"""``PassContext``: the optimization settings a build runs under (TVM's tvm.transform).

Role: one stack of contexts per thread; ``PassContext.current()`` is the innermost
active one (a default context when none is entered).  Lowering and building read their
options from it, so a TVM-style ``with PassContext(opt_level=3, config={...}):`` block
changes how everything inside it is built.

Invariants: a context is immutable once made (``config`` is a read-only mapping);
config keys must be registered with ``register_config`` and values are checked against
the registered type, so a misspelt option is an error, never silently ignored.
"""
from __future__ import annotations

import threading
from types import MappingProxyType

from .errors import CompilerError

_CONFIG_TYPES: dict = {}


def register_config(key: str, value_type: type) -> None:
    """Declare a config option (``"<namespace>.<name>"``) and the type of its value."""
    if not isinstance(key, str) or "." not in key:
        raise ValueError(f"register_config: key {key!r} must look like 'namespace.name'")
    _CONFIG_TYPES[key] = value_type


def list_configs() -> dict:
    """Registered option names and their value types."""
    return dict(_CONFIG_TYPES)


for _key, _ty in (("tir.instrument_bound_checkers", bool), ("tir.disable_vectorize", bool),
                  ("relay.backend.use_auto_scheduler", bool),
                  ("relay.FuseOps.max_depth", int)):
    register_config(_key, _ty)


class PassContext:
    """``with PassContext(opt_level=3, config={"tir.instrument_bound_checkers": True}):``"""

    _local = threading.local()

    def __init__(self, opt_level: int = 2, required_pass=None, disabled_pass=None,
                 config=None):
        if not isinstance(opt_level, int) or isinstance(opt_level, bool) or \
                not 0 <= opt_level <= 4:
            raise CompilerError(f"PassContext: opt_level {opt_level!r} must be an int in "
                                "[0, 4]")
        self.opt_level = opt_level
        self.required_pass = tuple(required_pass or ())
        self.disabled_pass = tuple(disabled_pass or ())
        self.config = MappingProxyType(_checked_config(config or {}))

    @classmethod
    def current(cls) -> PassContext:
        stack = getattr(cls._local, "stack", None)
        return stack[-1] if stack else _DEFAULT

    def __enter__(self) -> PassContext:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        self._local.stack.pop()

    def __repr__(self) -> str:
        return f"PassContext(opt_level={self.opt_level}, config={dict(self.config)})"


def _checked_config(config) -> dict:
    if not isinstance(config, dict):
        raise CompilerError(f"PassContext: config must be a dict, got {type(config).__name__}")
    out = {}
    for k, v in config.items():
        ty = _CONFIG_TYPES.get(k)
        if ty is None:
            raise CompilerError(f"PassContext: unknown config option {k!r}; registered "
                                f"options are {sorted(_CONFIG_TYPES)}")
        if ty is bool and isinstance(v, int):
            v = bool(v)
        if not isinstance(v, ty) or (ty is int and isinstance(v, bool)):
            raise CompilerError(f"PassContext: config {k!r} = {v!r}; expected a "
                                f"{ty.__name__}")
        out[k] = v
    return out


_DEFAULT = PassContext()

class Pass:
    """A named transformation ``IRModule -> IRModule`` (TVM's ``tvm.transform.Pass``).

    ``opt_level`` is the lowest PassContext opt_level at which a ``Sequential`` runs it;
    calling a pass directly always runs it.
    """

    def __init__(self, fn, name: str, opt_level: int = 0, required=()):
        self.fn, self.name, self.opt_level, self.required = fn, name, opt_level, tuple(required)

    def __call__(self, mod):
        return self.fn(mod)

    def __repr__(self) -> str:
        return f"Pass({self.name}, opt_level={self.opt_level})"


def module_pass(fn=None, opt_level: int = 0, name: str | None = None, required=()):
    """Decorator turning ``fn(mod) -> mod`` into a Pass (TVM's ``tvm.transform.module_pass``)."""
    def wrap(f):
        return Pass(f, name or f.__name__, opt_level, required)
    return wrap(fn) if fn is not None else wrap


class Sequential(Pass):
    """Run passes in order, skipping those above the current opt_level or disabled."""

    def __init__(self, passes=(), opt_level: int = 0, name: str = "sequential", required=()):
        self.passes = list(passes)
        super().__init__(self._run, name, opt_level, required)

    def _run(self, mod):
        ctx = PassContext.current()
        for p in self.passes:
            if p.name in ctx.disabled_pass:
                continue
            if p.opt_level > ctx.opt_level and p.name not in ctx.required_pass:
                continue
            mod = p(mod)
        return mod


__all__ = ["PassContext", "register_config", "list_configs", "Pass", "module_pass",
           "Sequential"]
