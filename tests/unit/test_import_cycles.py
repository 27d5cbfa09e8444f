"""No import circle in the project: every module of p4target, controller, hosts and topo is read
(not imported) and each `import` of a project module, at module level or inside a function,
is an edge; any cycle fails the test. Imports under `if TYPE_CHECKING:` are annotations only
(never executed) and are not edges."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("p4target", "controller", "hosts", "topo")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            out[_module_name(path)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(tree: ast.Module, module: str, is_package: bool, known: dict[str, Path]) -> set[str]:
    """Project modules `tree` imports. `from pkg import name` is an edge to `pkg.name` when that
    is a module, else to `pkg` (whose attribute it reads); importing `a.b.c` also runs the
    packages `a` and `a.b`, except those `module` itself lives in (already running)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in known else target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    edges = set()
    for name in found:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            step = ".".join(parts[:i])
            enclosing = module == step or module.startswith(step + ".")
            if step in known and (i == len(parts) or not enclosing):
                edges.add(step)
    edges.discard(module)
    return edges


def import_graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imported(ast.parse(path.read_text(), str(path)), name, path.name == "__init__.py", known)
            for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(_one_cycle(graph, set(component)))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return out


def _one_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return sorted(component)


@pytest.mark.slow
def test_no_module_of_the_project_imports_itself_in_a_circle() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles (one per group of modules that reach each other):\n" + \
        "\n".join(" -> ".join(c) for c in found)


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, [["a", "b", "c", "a"]]),
    ({"a": {"b"}, "b": set(), "c": {"a"}}, []),
])
def test_the_cycle_finder_finds_cycles(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(graph) == expected


def test_function_level_imports_are_edges_and_type_checking_ones_are_not() -> None:
    known = {"pkg": ROOT, "pkg.a": ROOT, "pkg.b": ROOT, "pkg.c": ROOT, "other": ROOT, "other.d": ROOT}
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\n"
                     "from pkg import a\ndef f():\n    from pkg.b import x\n    from other.d import y\n")
    # pkg itself is already running when pkg.a is imported; other is not
    assert _imported(tree, "pkg.a", False, known) == {"pkg.b", "other", "other.d"}


def test_reading_an_attribute_of_ones_own_package_is_an_edge() -> None:
    known = {"pkg": ROOT, "pkg.a": ROOT}
    assert _imported(ast.parse("from pkg import helper\n"), "pkg.a", False, known) == {"pkg"}
    assert _imported(ast.parse("from . import helper\n"), "pkg.a", False, known) == {"pkg"}


def _function_level_project_imports(path: Path) -> list[int]:
    """Lines of `import`s of project modules inside functions or methods."""
    lines: list[int] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if in_function and isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if node_is_project(names, getattr(node, "level", 0)):
                lines.append(node.lineno)
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    def node_is_project(names: list[str], level: int) -> bool:
        return bool(level) or any(n.split(".")[0] in PACKAGES for n in names)

    visit(ast.parse(path.read_text(), str(path)), False)
    return lines


def test_the_compiler_imports_inside_functions_only_with_a_comment_saying_why() -> None:
    unexplained = []
    for path in sorted((ROOT / "p4target" / "compiler").rglob("*.py")):
        text = path.read_text().splitlines()
        for line in _function_level_project_imports(path):
            if "#" not in text[line - 1] and not text[line - 2].strip().startswith("#"):
                unexplained.append(f"{path.relative_to(ROOT)}:{line}: {text[line - 1].strip()}")
    assert not unexplained, "\n".join(unexplained)
