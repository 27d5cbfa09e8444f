"""The layering of docs/contracts.md holds: `p4target` imports no gradlane package; `controller`
and `hosts` import neither each other nor `topo`; `hosts` imports no `sim` (which drives its
transport core). Every import counts, at module level or inside
a function, absolute or relative."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("p4target", "controller", "hosts", "topo")
FORBIDDEN = {
    "p4target": {"controller", "hosts", "topo"},
    "controller": {"hosts", "topo"},
    "hosts": {"controller", "topo", "sim"},   # the simulator drives hosts' transport, never back
}


def imported_modules(path: Path, package_dir: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import anywhere in the file at `path`, a module of
    the package in `package_dir`; sorted by line."""
    # a relative import starts from the module's package (a package's __init__ is in it too)
    package_parts = [package_dir.name, *path.relative_to(package_dir).parent.parts]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[:len(package_parts) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.append((node.lineno, name))
    return sorted(out)


def violations(package: str, forbidden: set[str]) -> list[str]:
    """`file:line imports X` for every import of a forbidden top-level package in `package`."""
    found = []
    for path in sorted((REPO / package).rglob("*.py")):
        for line, name in imported_modules(path, REPO / package):
            if name.split(".")[0] in forbidden:
                found.append(f"{path.relative_to(REPO)}:{line} imports {name}")
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_keeps_its_layer(package):
    assert violations(package, FORBIDDEN[package]) == []


def test_walk_sees_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "hosts"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "sub" / "mod.py").write_text(
        "import json\n"
        "def f():\n    from controller.client import SwitchConnection\n"
        "def g():\n    import topo.run\n"
        "from .. import wire\nfrom .sibling import x\n")
    names = [name for _, name in imported_modules(pkg / "sub" / "mod.py", pkg)]
    assert names == ["json", "controller.client", "topo.run", "hosts", "hosts.sub.sibling"]


def test_every_package_is_checked():
    assert set(FORBIDDEN) | {"topo"} == set(PACKAGES)
    assert all((REPO / package / "__init__.py").is_file() for package in PACKAGES)
