"""Fixtures of the scripted topology tests: real Mininet networks of P4 switches, run as root.

Every test builds its network through `topo.session.RunSession` (the code `make run` uses),
in its own log folder, and stops everything it started by PID. Nothing here is optional: a
machine without root or Mininet, or a switch that does not start, fails the tests with a reason.
"""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from support.topology_helpers import REPO, HostTraffic
from topo import agents
from topo.processes import ManagedProcess
from topo.switch_node import port_accepts
from topo.toolchain import compiler_tool, switch_tool


PROBE_GRPC_PORT = 9980
PROBE_THRIFT_PORT = 9990


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/topology/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.topology)


@pytest.fixture(scope="session", autouse=True)
def _needs_root_and_mininet():
    if os.geteuid() != 0:
        pytest.fail("topology tests need root (Mininet); run them as root", pytrace=False)
    if not agents.available("mininet.net"):
        pytest.fail("topology tests need the mininet module (make setup installs it)", pytrace=False)


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory) -> str:
    """p4src/gradlane.p4 compiled with $P4C (real or embedded) into a fresh folder."""
    tool = compiler_tool()
    out = tmp_path_factory.mktemp("build")
    argv = [*tool.argv, "--arch", "v1model", "--p4v", "16", "-I", str(REPO / "p4src"),
            "--p4runtime-files", str(out / "gradlane.p4info.txtpb"), "-o", str(out / "gradlane.json"),
            str(REPO / "p4src" / "gradlane.p4")]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, f"compiling p4src/gradlane.p4 failed:\n{done.stderr[-2000:]}"
    return str(out)


@pytest.fixture(scope="session")
def switch_works(tmp_path_factory) -> None:
    """Fail early when $SWITCH cannot run at all (probe: --no-p4, no ports, gRPC must come up)."""
    tool = switch_tool()
    log = tmp_path_factory.mktemp("probe") / "probe.log"
    loopback = ["--thrift-ip", "127.0.0.1"] if tool.kind == "embedded" else []  # BMv2 has no such flag
    argv = [*tool.argv, "--no-p4", "--thrift-port", str(PROBE_THRIFT_PORT), *loopback, "--log-console",
            "--", "--grpc-server-addr", f"127.0.0.1:{PROBE_GRPC_PORT}"]
    proc = ManagedProcess("switch-probe", "switch", argv, log).start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not proc.alive():
                out = proc.output().strip().splitlines()
                pytest.fail(f"switch ({tool.describe()}) does not run: {out[-1] if out else 'no output'}",
                            pytrace=False)
            if port_accepts(PROBE_GRPC_PORT):
                return
            time.sleep(0.2)
        pytest.fail(f"switch probe: gRPC port never opened; log:\n{proc.output()[-1500:]}")
    finally:
        proc.stop()


@pytest.fixture
def network(build_dir, switch_works, tmp_path):
    """Factory: start a RunSession for a topology (controller included) and stop it afterwards."""
    from topo.session import RunConfig, RunSession
    from topo.topologies import TopoParams

    sessions: list[RunSession] = []

    def start(topo_name: str, policy: str | None = None, pcap: bool = False,
              transport: str = "ltp", **params) -> RunSession:
        cfg = RunConfig(topo_name=topo_name, build_dir=build_dir, log_dir=str(tmp_path / "logs"),
                        params=TopoParams(**params), pcap=pcap, pcap_dir=str(tmp_path / "pcaps"),
                        policy=policy or str(REPO / "controller/policies/default.yaml"),
                        transport=transport)
        session = RunSession(cfg)
        sessions.append(session)
        return session.start()

    old = os.getcwd()
    os.chdir(REPO)
    try:
        yield start
    finally:
        for session in sessions:
            session.stop()
        os.chdir(old)


@pytest.fixture
def traffic(tmp_path):
    """Factory: HostTraffic for a session; every process stopped afterwards."""
    made: list[HostTraffic] = []

    def make(session) -> HostTraffic:
        ht = HostTraffic(session, tmp_path)
        made.append(ht)
        return ht

    yield make
    for ht in made:
        ht.stop()
