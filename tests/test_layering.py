"""Layering rules, checked by parsing every module's imports.

- records/ imports only the standard library;
- compiler/ never imports autosched or records;
- no project import is hidden inside a function (imports live at module level).
"""
import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("compiler", "autosched", "records")


def _modules(pkg):
    return sorted((ROOT / pkg).rglob("*.py"))


def _imports(path, root=ROOT):
    """(module name, lineno, inside_function) for every import in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    rel = path.relative_to(root).with_suffix("").parts
    out = []

    def resolve(node):
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = list(rel[:-1]) if rel[-1] != "__init__" else list(rel[:-1])
        if node.level:
            base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        return [mod]

    def walk(node, in_func):
        for child in ast.iter_child_nodes(node):
            f = in_func or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for m in resolve(child):
                    out.append((m, child.lineno, in_func))
            walk(child, f)

    walk(tree, False)
    return out


def _top(mod):
    return mod.split(".")[0]


def test_records_uses_stdlib_only():
    stdlib = set(sys.stdlib_module_names)
    bad = []
    for p in _modules("records"):
        for m, line, _ in _imports(p):
            if _top(m) not in stdlib and _top(m) != "records":
                bad.append(f"{p.relative_to(ROOT)}:{line} imports {m}")
    assert not bad, bad


def test_compiler_never_imports_tuner_or_records():
    bad = []
    for p in _modules("compiler"):
        for m, line, _ in _imports(p):
            if _top(m) in ("autosched", "records"):
                bad.append(f"{p.relative_to(ROOT)}:{line} imports {m}")
    assert not bad, bad


def test_no_project_imports_inside_functions():
    bad = []
    for pkg in PACKAGES:
        for p in _modules(pkg):
            for m, line, in_func in _imports(p):
                if in_func and _top(m) in PACKAGES:
                    bad.append(f"{p.relative_to(ROOT)}:{line} imports {m} inside a function")
    assert not bad, bad


def test_checker_sees_violations(tmp_path):
    """The checker must flag nested and relative upward imports (it must be able to fail)."""
    pkg = tmp_path / "compiler" / "sub"
    pkg.mkdir(parents=True)
    f = pkg / "mod.py"
    f.write_text("import os\nfrom .. import tir\ndef f():\n    from ..te import x\n")
    found = _imports(f, root=tmp_path)
    assert found == [("os", 1, False), ("compiler", 2, False), ("compiler.te", 4, True)]
