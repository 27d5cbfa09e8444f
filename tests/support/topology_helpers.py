"""Helpers of the topology tests: host traffic, policies, gradctl output."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


from topo.processes import ManagedProcess

REPO = Path(__file__).resolve().parents[2]
TRAFFIC = str(Path(__file__).with_name("traffic.py"))


class HostTraffic:
    """Runs tests/support/traffic.py in hosts and collects its JSON reports."""

    def __init__(self, session, log_dir: Path) -> None:
        self.session = session
        self.log_dir = log_dir
        self.procs: list[ManagedProcess] = []

    def start(self, host: str, *args: str) -> ManagedProcess:
        argv = [sys.executable, "-u", TRAFFIC, *args]
        name = f"traffic{len(self.procs)}@{host}"
        proc = ManagedProcess(name, "agent", argv, self.log_dir / f"{name}.log", self.session.record,
                              self.session.net.get(host), env={**os.environ, "PYTHONPATH": str(REPO)})
        self.procs.append(proc.start())
        return proc

    def receiver(self, host: str, *args: str) -> ManagedProcess:
        """Start a receiver and wait until it listens."""
        proc = self.start(host, "recv", *args)
        proc.wait_for_line(r'"listening"', 20, "receiver listening")
        return proc

    def result(self, proc: ManagedProcess, timeout: float = 120) -> dict:
        """The last JSON line of a finished traffic process."""
        code = proc.wait_exit(timeout)
        assert code == 0, f"{proc.name} ended with {code}:\n{proc.output()[-1500:]}"
        lines = [line for line in proc.output().splitlines() if line.startswith("{")]
        return json.loads(lines[-1])

    def command(self, host: str, *argv: str) -> ManagedProcess:
        """Start any command in a host (iperf3, ...)."""
        name = f"{Path(argv[0]).name}{len(self.procs)}@{host}"
        proc = ManagedProcess(name, "agent", list(argv), self.log_dir / f"{name}.log", self.session.record,
                              self.session.net.get(host))
        self.procs.append(proc.start())
        return proc

    def tcp_server(self, host: str, port: int) -> ManagedProcess:
        """A one-off iperf3 server in `host`, started and listening."""
        proc = self.command(host, "iperf3", "-s", "-1", "-p", str(port))
        node = self.session.net.get(host)
        proc.wait_for(lambda: f":{port} " in node.cmd("ss -ltnH"), 10, f"iperf3 listening on {port}")
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            proc.stop()


def gradctl_json(session, *args: str) -> object:
    """`gradctl ARGS --json` against the session's controller, parsed."""
    done = session.gradctl("--json", *args)
    assert done.returncode == 0, f"gradctl {' '.join(args)} failed: {done.stderr}"
    return json.loads(done.stdout)


def budget_policy(path: Path, bound: float, threshold: int = 4) -> str:
    """Job 1: layers 0-3 drop-eligible with push bound `bound` above queue depth `threshold`,
    layers >= 4 never eligible; all in queue 4 so both see the same queue."""
    path.write_text(f"""version: 1
defaults:
  drop_threshold: {threshold}
  mag_classes: [0, 7]
jobs:
  - job: 1
    name: budget-test
    layers:
      - range: [0, 3]
        loss_bound: {bound}
        pull_bound: {bound}
        priority: 4
        drop_eligible: true
      - range: [4, 65535]
        loss_bound: 0.0
        priority: 4
        drop_eligible: false
""")
    return str(path)


def classes(stats: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (switch, class) row of `gradctl --json stats`, each with its switch name added."""
    return [{**c, "switch": sw} for sw, st in stats.items() if st.get("reachable") for c in st["classes"]]


def selective_drops(stats: dict[str, Any]) -> int:
    """Selective drops over every switch and class (`classes[].dropped` of `gradctl --json stats`);
    checked against the per-queue counters, which count the same drops by egress queue."""
    by_class = sum(c["dropped"] for c in classes(stats))
    by_queue = sum(q["dropped"] for st in stats.values() if st.get("reachable") for q in st["queues"])
    assert by_class == by_queue, f"class drops {by_class} != queue drops {by_queue}"
    return by_class


def pcn_policy(path: Path, ddl_flows: str = "") -> str:
    """Job 1: every layer in queue 0 (the queue background TCP uses), never dropped selectively,
    so the burst's telemetry shows the depth of the queue the background flows build;
    `ddl_flows`: the job's `ddl_flows:` block, if any (YAML, indented as a job field)."""
    path.write_text("""version: 1
defaults:
  mag_classes: [0, 7]
jobs:
  - job: 1
    name: pcn-test
    layers:
      - range: [0, 65535]
        loss_bound: 0.0
        priority: 0
        drop_eligible: false
""" + ddl_flows)
    return str(path)


def pcap_counts(pcap_dir: Path, interface: str, direction: str = "out") -> dict[str, Any]:
    """Frames in the pcap of `interface` (BMv2 names `IFACE_out.pcap`): {'gradient': n, 'tcp': n,
    'tcp_flows': {(src, sport, dst, dport): n}}."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.utils import rdpcap

    files = sorted(pcap_dir.glob(f"{interface}_{direction}.pcap")) or \
        sorted(pcap_dir.glob(f"*{interface}*{direction}*.pcap"))
    assert files, f"no {direction} pcap for {interface} in {pcap_dir}: {sorted(p.name for p in pcap_dir.iterdir())}"
    counts: dict[str, Any] = {"gradient": 0, "tcp": 0, "tcp_flows": {}}
    for pkt in rdpcap(str(files[0])):
        if UDP in pkt and pkt[UDP].dport == 19527:
            counts["gradient"] += 1
        elif TCP in pkt:
            counts["tcp"] += 1
            key = (pkt[IP].src, pkt[TCP].sport, pkt[IP].dst, pkt[TCP].dport)
            counts["tcp_flows"][key] = counts["tcp_flows"].get(key, 0) + 1
    return counts
