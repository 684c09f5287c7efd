"""``compiler.auto_scheduler`` as another name of this package, submodules included.

Why: after ``import compiler as tvm``, TVM scripts import submodules by their full name
(``from tvm.auto_scheduler.loop_state import State``).  With only the package aliased,
Python would load such a submodule a second time under the other name, with its own
copies of everything it imports: a second workload registry, exception classes that
``except autosched.WorkloadError`` does not catch.

Invariants: ``install()`` registers the package as ``compiler.auto_scheduler`` and puts
one finder first on ``sys.meta_path``; the finder answers only for
``compiler.auto_scheduler.<name>`` with an existing ``autosched.<name>`` and gives that
very module object (imported if needed), so both names always mean one module; any
other name is left to the normal import system.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

ALIAS = "compiler.auto_scheduler"
REAL = "autosched"


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``compiler.auto_scheduler.X`` as the module ``autosched.X``."""

    def find_spec(self, name, path=None, target=None):
        if not name.startswith(ALIAS + "."):
            return None
        real = REAL + name[len(ALIAS):]
        if real not in sys.modules and importlib.util.find_spec(real) is None:
            return None           # no such submodule: the usual ModuleNotFoundError
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        # the module object itself; the import system only fills attributes it lacks
        return importlib.import_module(REAL + spec.name[len(ALIAS):])

    def exec_module(self, module) -> None:
        """Nothing to run: the module was executed under its own name."""


def install(package) -> None:
    """Make ``package`` (this one) reachable as ``compiler.auto_scheduler``."""
    compiler = sys.modules["compiler"]
    compiler.auto_scheduler = package  # type: ignore[attr-defined]
    sys.modules.setdefault(ALIAS, package)
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
