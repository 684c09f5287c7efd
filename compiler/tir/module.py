"""``IRModule`` of PrimFuncs: what ``lower`` returns and ``build`` accepts (TVM's).

Role: a name -> PrimFunc mapping with TVM's surface: ``mod["main"]``, ``mod[name] = f``,
``name in mod``, ``IRModule({"main": f})``, ``IRModule.from_expr(f)``, ``mod.script()``.
``compiler.relay.IRModule`` extends it with relay functions.

Invariants:
- Keys are function names (str); a key may also be given as anything with a
  ``name_hint`` (TVM's GlobalVar).  Insertion order is kept, so the first function is
  the one a single-function module is "about".
- The text of a module holding exactly one PrimFunc is that function's text from the
  stable TIR printer, byte for byte: ``print(tvm.lower(...))`` shows what golden files
  and tutorials expect.  Several functions print one after another, ``main`` first.
"""
from __future__ import annotations

from .printer import astext
from .stmt import PrimFunc

__all__ = ["IRModule"]


def _key(name) -> str:
    key = getattr(name, "name_hint", name)
    if not isinstance(key, str):
        raise TypeError(f"IRModule: function name {name!r} must be a str (or a GlobalVar)")
    return key


class IRModule:
    """Named functions of a program; this base class holds PrimFuncs."""

    def __init__(self, functions=None):
        self.functions: dict = {}
        for name, fn in dict(functions or {}).items():
            self[name] = fn

    @classmethod
    def from_expr(cls, expr, functions=None) -> IRModule:
        """A module whose ``main`` is ``expr`` (a PrimFunc here)."""
        mod = cls(functions)
        mod["main"] = expr
        return mod

    def _check_function(self, name: str, fn) -> None:
        if not isinstance(fn, PrimFunc):
            raise TypeError(f"IRModule[{name!r}]: {type(fn).__name__} is not a tir.PrimFunc")

    def __setitem__(self, name, fn) -> None:
        key = _key(name)
        self._check_function(key, fn)
        self.functions[key] = fn

    def __getitem__(self, name):
        key = _key(name)
        fn = self.functions.get(key)
        if fn is None:
            raise KeyError(f"IRModule has no function {key!r}; it has {list(self.functions)}")
        return fn

    def __contains__(self, name) -> bool:
        return getattr(name, "name_hint", name) in self.functions

    def __len__(self) -> int:
        return len(self.functions)

    def __iter__(self):
        return iter(self.functions)

    def items(self):
        return self.functions.items()

    def get_global_vars(self) -> list:
        return sorted(self.functions)

    def prim_funcs(self) -> dict:
        """{name: PrimFunc} of the module's TIR functions, in insertion order."""
        return {k: f for k, f in self.functions.items() if isinstance(f, PrimFunc)}

    def script(self) -> str:
        """TVMScript-like text (see the module docstring for the one-function case)."""
        names = sorted(self.functions, key=lambda n: (n != "main", list(self.functions).index(n)))
        return "\n\n".join(astext(self.functions[n]) for n in names)

    def astext(self, show_meta_data: bool = False) -> str:
        return self.script()

    def __str__(self) -> str:
        return self.astext()

    def __repr__(self) -> str:
        return f"IRModule({list(self.functions)})"
