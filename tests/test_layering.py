"""Layering rules, checked by parsing every module's imports.

- records/ imports only the standard library;
- compiler/ never imports autosched or records;
- no project import is hidden inside a function (imports live at module level);
- no import cycle between modules, and no module-level import after the first statement
  (a late import is how a cycle hides);
- inside compiler/, subpackages form floors and no module imports a higher floor:
  tir (with errors, target, transform) < te, passes, runtime < schedule, codegen < topi
  < build < relay, contrib.  A package's ``__init__`` is a facade that may re-export
  from any floor (``te.create_schedule`` comes from schedule), so it is exempt from the
  floor rule, and imports that name a package resolve to its modules, not its facade.
"""
import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("compiler", "autosched", "records")

FLOORS = {"errors": 0, "transform": 0, "target": 0, "tir": 0,
          "te": 1, "passes": 1, "runtime": 1, "nd": 2,
          "schedule": 2, "codegen": 2, "rpc": 2,
          "topi": 3,
          "build": 4,
          "relay": 5, "contrib": 5, "testing": 5, "exec": 5}


def _modules(pkg, root=ROOT):
    return sorted((root / pkg).rglob("*.py"))


def _module_name(path, root=ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path, root=ROOT):
    """(module name, lineno, inside_function) for every import in ``path``; a
    ``from pkg import name`` yields ``pkg.name`` (a module or an attribute of pkg)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    rel = path.relative_to(root).with_suffix("").parts
    out = []

    def resolve(node):
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = list(rel[:-1])
        if node.level:
            base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        # "from pkg import x": x may be a module of pkg; callers walk up to a real module
        return [f"{mod}.{a.name}" if mod else a.name for a in node.names]

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
        for m, line, in_func in _imports(p):
            if _top(m) in stdlib or _top(m) == "records":
                continue
            # an optional extra (e.g. matplotlib for plots) is imported only where used
            if in_func and _top(m) in OPTIONAL_EXTRAS:
                continue
            bad.append(f"{p.relative_to(ROOT)}:{line} imports {m}")
    assert not bad, bad


# Third-party packages of the optional extras ([onnx], [plot], [dask]): they may only be
# imported inside the function that needs them.
OPTIONAL_EXTRAS = ("onnx", "onnxruntime", "matplotlib", "distributed", "dask")


def test_optional_extras_are_imported_only_where_used():
    bad = []
    for pkg in PACKAGES:
        for p in _modules(pkg):
            for m, line, in_func in _imports(p):
                if _top(m) in OPTIONAL_EXTRAS and not in_func:
                    bad.append(f"{p.relative_to(ROOT)}:{line} imports {m} at module level")
    assert not bad, bad


def test_importing_the_packages_loads_no_optional_extra():
    """The static check above, confirmed by a fresh interpreter: importing every package
    (the ONNX frontend included) leaves the extras unloaded."""
    code = ("import sys, compiler, compiler.relay.frontend, autosched, records; "
            f"print(sorted(m for m in {OPTIONAL_EXTRAS!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


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


# ------------------------------------------------------------------ cycles and late imports
def import_graph(root=ROOT) -> dict:
    """Module -> set of project modules it imports (package facades excluded as targets)."""
    files = {_module_name(p, root): p for pkg in PACKAGES if (root / pkg).exists()
             for p in _modules(pkg, root)}
    graph = {m: set() for m in files}
    for mod, path in files.items():
        for target, _, _ in _imports(path, root):
            t = target
            while t and t not in files:
                t = t.rpartition(".")[0]
            if t and t != mod and files[t].name != "__init__.py":
                graph[mod].add(t)
    return graph


def cycles(graph) -> list:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def late_imports(root=ROOT) -> list:
    """``path:line`` of module-level imports that follow other statements."""
    bad = []
    for pkg in PACKAGES:
        for p in _modules(pkg, root):
            seen_code = False
            for stmt in ast.parse(p.read_text()).body:
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    if seen_code and not (isinstance(stmt, ast.ImportFrom)
                                          and stmt.module == "__future__"):
                        bad.append(f"{p.relative_to(root)}:{stmt.lineno}")
                elif not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)) \
                        and not isinstance(stmt, (ast.If, ast.Try)):
                    seen_code = True
    return bad


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_no_late_imports():
    assert late_imports() == []


def floor_violations(root=ROOT) -> list:
    bad = []
    for p in _modules("compiler", root):
        rel = p.relative_to(root).with_suffix("").parts
        if rel[-1] == "__init__" or len(rel) < 2:
            continue
        own = rel[1]
        if own not in FLOORS:
            bad.append(f"{p.relative_to(root)}: subpackage {own!r} has no floor in FLOORS")
            continue
        for m, line, _ in _imports(p, root):
            parts = m.split(".")
            if parts[0] != "compiler" or len(parts) < 2 or parts[1] == own:
                continue
            if FLOORS.get(parts[1], 99) > FLOORS[own]:
                bad.append(f"{p.relative_to(root)}:{line} ({own}, floor {FLOORS[own]}) imports "
                           f"{m} (floor {FLOORS.get(parts[1], '?')})")
    return bad


def test_compiler_subpackages_only_import_lower_floors():
    assert floor_violations() == []


# ------------------------------------------------------------------ the checks can fail
def test_checker_sees_violations(tmp_path):
    """The checker must flag nested and relative upward imports (it must be able to fail)."""
    pkg = tmp_path / "compiler" / "sub"
    pkg.mkdir(parents=True)
    f = pkg / "mod.py"
    f.write_text("import os\nfrom .. import tir\ndef f():\n    from ..te import x\n")
    found = _imports(f, root=tmp_path)
    assert found == [("os", 1, False), ("compiler.tir", 2, False), ("compiler.te.x", 4, True)]


def test_cycle_late_import_and_floor_checks_can_fail(tmp_path):
    comp = tmp_path / "compiler"
    (comp / "tir").mkdir(parents=True)
    (comp / "te").mkdir()
    (comp / "__init__.py").write_text("")
    (comp / "tir" / "__init__.py").write_text("")
    (comp / "te" / "__init__.py").write_text("")
    (comp / "tir" / "a.py").write_text("from ..te import b\n")            # upward, cycle
    (comp / "te" / "b.py").write_text("x = 1\nfrom ..tir import a\n")      # late, cycle
    assert cycles(import_graph(tmp_path)) == [["compiler.te.b", "compiler.tir.a"]]
    assert late_imports(tmp_path) == ["compiler/te/b.py:2"]
    assert floor_violations(tmp_path) == [
        "compiler/tir/a.py:1 (tir, floor 0) imports compiler.te.b (floor 1)"]
