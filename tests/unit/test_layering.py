"""The layering of docs/contracts.md holds: `p4target` imports no gradlane package; `controller`
and `hosts` import neither each other nor `topo`; `hosts` imports no `sim` (which drives its
transport core); `sim` is a library under the experiments, importing neither `experiments` nor
`topo` (Mininet's side); `experiments`' ns-3 backend imports no `topo` module that loads Mininet,
and `--backend ns3` loads no Mininet at all. Every import counts, at module level or inside a
function, absolute or relative."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("p4target", "controller", "hosts", "sim", "topo", "experiments")
FORBIDDEN = {
    "p4target": {"controller", "hosts", "topo", "sim", "experiments"},
    "controller": {"hosts", "topo", "sim", "experiments"},
    "hosts": {"controller", "topo", "sim", "experiments"},   # the simulator drives hosts' transport, never back
    "sim": {"topo", "experiments"},          # a library: the experiments drive it, never back
    "topo": {"experiments"},
}
TOP = {"topo", "experiments"} - set(FORBIDDEN)   # may import any package below them


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


def test_the_ns3_backend_imports_no_topo():
    # its topologies come from controller.topologies, the builder Mininet's networks use too
    found = violations("experiments", {"topo"})
    assert [v for v in found if v.startswith("experiments/backends/ns3/")] == []
    assert any(v.startswith("experiments/backends/emulation.py") for v in found)   # the walk sees them


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
    assert set(FORBIDDEN) | TOP == set(PACKAGES)
    assert all((REPO / package / "__init__.py").is_file() for package in PACKAGES)


# what `python -m experiments NAME --backend ns3` does before its first simulated run: load the
# config, set it up for the simulator, read the report's module; an import of Mininet, or of
# the topo modules that start networks, fails it
NS3_PATH = """
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'mininet' or name in ('topo.network', 'topo.session', 'topo.switch_node'):
            raise ImportError('--backend ns3 imported ' + name)
sys.meta_path.insert(0, Refuse())
from experiments import cli, config
from experiments.backends.ns3 import harness
for name in harness.simulated_names():
    args = cli._parser().parse_args([name, '--quick', '--backend', 'ns3'])
    cfg = cli._load_config(name, args)
    harness.SimulatedReport(cli.experiments.get(name), harness.simulation(name))
print('ok', sorted(m for m in sys.modules if m.startswith('topo')))
"""


@pytest.mark.slow
def test_the_ns3_backend_loads_no_mininet():
    proc = subprocess.run([sys.executable, "-c", NS3_PATH], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("ok")


def test_a_unit_test_cannot_build_ns3(refusals):
    from sim import engine, network  # noqa: PLC0415
    with pytest.raises(AssertionError, match="tests/sim"):
        network.SimNetwork(None, None)      # tests/unit/conftest.py refuses ns-3
    with pytest.raises(AssertionError, match="tests/sim"):
        engine.cpp()
    assert len(refusals) == 2
    refusals.clear()                        # refused on purpose: the test passes
