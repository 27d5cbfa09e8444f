"""A training job over the network: the parameter server and workers as processes on the
Mininet hosts, their JSON-lines output collected into a `TrainingResult`.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.topology import Topology
from hosts.errors import ConfigError
from hosts.exchange.job_key import create_key_file
from topo import agents
from topo.errors import RunError
from topo.pidfile import RunRecord
from topo.processes import ManagedProcess


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of `text` that is a JSON object, in order (other lines ignored)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict):
                out.append(item)
    return out


@dataclass
class TrainingResult:
    """What a job's agents reported."""

    exit_codes: dict[str, int | None]
    records: dict[str, list[dict[str, Any]]]
    logs: dict[str, str]
    elapsed_s: float
    timed_out: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every agent exited 0 within the time limit."""
        return not self.timed_out and all(code == 0 for code in self.exit_codes.values())

    def all_records(self) -> list[dict[str, Any]]:
        """All JSON records of all agents."""
        return [r for recs in self.records.values() for r in recs]

    def failure_lines(self, stopped: str = "agents were stopped") -> list[str]:
        """A summary's lines for each process that did not exit 0, and for a timeout."""
        lines = [f"  {name}: exit code {code} (log {self.logs[name]})"
                 for name, code in self.exit_codes.items() if code != 0]
        return lines + ([f"  timed out; {stopped}"] if self.timed_out else [])


def host_groups(topo: Topology) -> int:
    """How many jobs can run side by side: one per parameter-server host."""
    return len(topo.hosts_with_role("ps"))


def host_group(topo: Topology, group: int) -> tuple[str, list[str]]:
    """The PS host and worker hosts of host group ``group`` (0-based)."""
    ps = topo.hosts_with_role("ps")
    workers = topo.hosts_with_role("worker")
    if not ps:
        raise RunError(f"topology {topo.name} has no parameter-server host")
    if not 0 <= group < len(ps):
        raise RunError(f"topology {topo.name} has {len(ps)} host group(s), not {group + 1}")
    share = len(workers) // len(ps)
    return ps[group], workers[group * share:(group + 1) * share]


class TrainingJob:
    """Start a PS and workers on a running network, wait for them, collect their output."""

    def __init__(self, net: Any, topo: Topology, topology_path: str, record: RunRecord,
                 log_dir: str | Path, job: agents.JobSpec,
                 host_sysctls: dict[str, str] | None = None) -> None:
        """`host_sysctls` are set in the network namespace of every host of the job before its
        agents start (e.g. net.ipv4.tcp_ecn for the TCP baseline)."""
        self.net = net
        self.host_sysctls = dict(host_sysctls or {})
        self.topo = topo
        self.topology_path = topology_path
        self.record = record
        self.log_dir = Path(log_dir)
        self.job = job
        self.processes: dict[str, ManagedProcess] = {}

    def hosts(self) -> tuple[str, list[str]]:
        """(PS host, worker hosts) used by the job: those of its host group (with G parameter
        servers, group g has the g-th PS and the g-th G-th of the workers); raises RunError if
        the topology lacks them."""
        ps, workers = host_group(self.topo, self.job.group)
        if self.job.workers > len(workers):
            raise RunError(f"job wants {self.job.workers} workers, host group {self.job.group + 1} "
                           f"of topology {self.topo.name} has {len(workers)}")
        return ps, workers[: self.job.workers]

    def start(self) -> None:
        """Start the PS, then the workers (each on its host, logs in `log_dir`)."""
        agents.require(agents.PS_MODULE, "the parameter-server agent")
        agents.require(agents.WORKER_MODULE, "the worker agent")
        ps, workers = self.hosts()
        for name in (ps, *workers):
            self.set_sysctls(name)
        ps_ip = self.topo.hosts[ps].ip
        key_file = self.new_key_file()
        proc = ManagedProcess(f"ps@{ps}", "agent", agents.ps_argv(self.job, key_file),
                              self.log_dir / f"job{self.job.job_id}.ps.log", self.record, self.net.get(ps))
        self.processes[ps] = proc.start()
        # The PS logs its "start" event once its socket is bound; workers may send from then on.
        proc.wait_for_line(r'"event":\s*"start"', 60, "parameter server start event")
        for rank, name in enumerate(workers):
            argv = agents.worker_argv(self.job, rank, ps_ip, key_file)
            proc = ManagedProcess(f"worker{rank}@{name}", "agent", argv,
                                  self.log_dir / f"job{self.job.job_id}.worker{rank}.log", self.record,
                                  self.net.get(name))
            self.processes[name] = proc.start()

    def new_key_file(self) -> str:
        """A fresh secret for this start of the job (0600 in the log folder), its path."""
        path = self.log_dir / f"job{self.job.job_id}.key"
        path.unlink(missing_ok=True)
        try:
            create_key_file(str(path))
        except ConfigError as exc:
            raise RunError(str(exc)) from None
        return str(path)

    def set_sysctls(self, name: str) -> None:
        """Apply `host_sysctls` in host `name`'s namespace; RunError naming the one that failed."""
        node = self.net.get(name)
        for key, value in self.host_sysctls.items():
            node.cmd(f"sysctl -qw {key}={value}")
            got = node.cmd(f"sysctl -n {key}").strip()
            if got != value:
                raise RunError(f"could not set {key}={value} on host {name} (it is {got or 'unreadable'})")

    def wait(self, timeout: float) -> TrainingResult:
        """Wait for every agent to exit (at most `timeout` s), stop stragglers, collect output."""
        started = time.monotonic()
        deadline = started + timeout
        timed_out = False
        for proc in self.processes.values():
            if proc.wait_exit(max(deadline - time.monotonic(), 0.1)) is None:
                timed_out = True
        self.stop()
        return TrainingResult(
            exit_codes={p.name: p.returncode() for p in self.processes.values()},
            records={p.name: json_lines(p.output()) for p in self.processes.values()},
            logs={p.name: str(p.log) for p in self.processes.values()},
            elapsed_s=time.monotonic() - started, timed_out=timed_out)

    def finished(self) -> bool:
        """Every agent of the job has exited."""
        return bool(self.processes) and all(not p.alive() for p in self.processes.values())

    def run(self, timeout: float) -> TrainingResult:
        """start() then wait()."""
        self.start()
        return self.wait(timeout)

    def stop(self) -> None:
        """Stop every agent still running, by PID."""
        for proc in self.processes.values():
            proc.stop()
