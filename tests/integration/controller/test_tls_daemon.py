"""`make run`'s control plane without Mininet: switch processes started with the argv `topo` builds
(`switch_command`, TLS flags of a fresh run CA) and the controller daemon with the command line
`topo` gives it (`controller_argv`, `--pki`), which programs every switch over TLS; the same
daemon with `--plaintext` reaches none of them."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from controller.topology import Topology
from support.controller_topologies import diamond
from support.switch_process import free_tcp_port
from topo import agents
from topo.pki import create_run_pki
from topo.switch_node import log_tail, port_accepts, switch_command
from topo.toolchain import Tool

EMBEDDED = Tool((sys.executable, "-m", "p4target", "switch"), "embedded")


@pytest.fixture
def network(tmp_path):
    """The diamond's four switches as embedded processes over TLS, with no data ports."""
    pki = create_run_pki(tmp_path)
    doc = diamond({f"s{i}": f"127.0.0.1:{free_tcp_port()}" for i in range(1, 5)})
    for sw in doc["switches"].values():
        sw["thrift_port"] = free_tcp_port()
    (tmp_path / "diamond.topology.json").write_text(json.dumps(doc))
    topo = Topology.load(str(tmp_path / "diamond.topology.json"))
    procs = []
    try:
        for name, desc in topo.switches.items():
            desc.log = str(tmp_path / f"{name}.log")
            argv = switch_command(EMBEDDED, desc, {}, None, tls=tuple(pki.switch_flags()))
            procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 90
        for desc in topo.switches.values():
            while not port_accepts(desc.grpc_port):
                assert time.monotonic() < deadline, f"switch {desc.name} did not start:\n{log_tail(desc.log)}"
                time.sleep(0.1)
        yield tmp_path, pki
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    done = subprocess.run([sys.executable, "-m", "p4target", "compile", "--arch", "v1model", "-I", "p4src",
                           "--p4runtime-files", str(out / "gradlane.p4info.txtpb"), "-o", str(out / "gradlane.json"),
                           "p4src/gradlane.p4"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out


def _daemon_once(folder, build, pki_folder: str | None) -> subprocess.CompletedProcess[str]:
    argv = agents.controller_argv(str(folder / "diamond.topology.json"), str(build / "gradlane.p4info.txtpb"),
                                  str(build / "gradlane.json"), "controller/policies/default.yaml", str(folder),
                                  pki=pki_folder)
    return subprocess.run([*argv, "--once", "--timeout", "5"], capture_output=True, text=True, timeout=300)


def test_the_daemon_programs_tls_switches_with_the_run_certificate(network, build):
    folder, pki = network
    done = _daemon_once(folder, build, str(pki.folder))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "all switches programmed" in done.stderr


def test_the_daemon_in_plaintext_reaches_no_tls_switch(network, build):
    folder, _ = network
    done = _daemon_once(folder, build, None)   # controller_argv gives --plaintext
    assert done.returncode == 1, done.stderr[-3000:]
    assert "switches not programmed: s1, s2, s3, s4" in done.stderr
    assert "tried in plaintext" in done.stderr
