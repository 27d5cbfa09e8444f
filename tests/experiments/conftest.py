"""Fixtures of the experiment smoke tests: a compiled program in a fresh folder, root checked."""
from __future__ import annotations

import os
import subprocess

import pytest

from support.topology_helpers import REPO
from topo import agents
from topo.toolchain import compiler_tool


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/experiments/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.topology)


@pytest.fixture(scope="session")
def experiment_build(tmp_path_factory) -> str:
    """p4src/gradlane.p4 compiled with $P4C into a fresh folder (root and Mininet checked first)."""
    if os.geteuid() != 0:
        pytest.fail("experiment tests need root (Mininet); run them as root", pytrace=False)
    if not agents.available("mininet.net"):
        pytest.fail("experiment tests need the mininet module (make setup installs it)", pytrace=False)
    tool = compiler_tool()
    out = tmp_path_factory.mktemp("build")
    argv = [*tool.argv, "--arch", "v1model", "--p4v", "16", "-I", str(REPO / "p4src"),
            "--p4runtime-files", str(out / "gradlane.p4info.txtpb"), "-o", str(out / "gradlane.json"),
            str(REPO / "p4src" / "gradlane.p4")]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, f"compiling p4src/gradlane.p4 failed:\n{done.stderr[-2000:]}"
    return str(out)
