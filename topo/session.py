"""One run of a topology: the network, the controller daemon, the run record, and teardown.

`topo.run` and the topology tests both drive a `RunSession`: start() brings everything up in
order (stale cleanup, switches, description file, controller, programmed switches), stop()
ends everything it started by PID, in reverse order.
"""
from __future__ import annotations

import fcntl
import os
import re
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from controller.errors import ControllerError
from controller.topology import Topology
from topo import agents
from topo.errors import ProcessStartError, RunError, TopoError, ToolchainError
from topo.network import GradNetwork, NetworkOptions
from topo.pidfile import RunRecord, delete_interface, is_same_process
from topo.pki import RunPki, create_run_pki
from topo.processes import ManagedProcess, log_tail
from topo.stop import stop_recorded
from topo.supervisor import Supervisor
from topo.topologies import TopoParams, build_topology
from topo.toolchain import switch_tool
from topo.ddp_job import DdpJob
from topo.training import TrainingJob, TrainingResult, host_groups

DEFAULT_POLICY = "controller/policies/default.yaml"
TWO_JOBS_POLICY = "controller/policies/two-jobs.yaml"
PROGRAM = "gradlane"


@dataclass
class RunConfig:
    """Everything a run needs to know."""

    topo_name: str = "incast"
    build_dir: str = "build"
    log_dir: str = "logs"
    params: TopoParams = field(default_factory=TopoParams)
    policy: str | None = DEFAULT_POLICY
    pcap: bool = False
    pcap_dir: str = "pcaps"
    bursts: tuple[str, ...] = ()
    static_arp: bool = False
    controller: bool = True
    controller_timeout: float = 90.0
    switch_timeout: float = 60.0
    rounds: int = 20
    transport: str = "ltp"
    # Pace every sender of a job at its fair share of the bottleneck (0.9 x rate / workers).
    # Off by default: pacing is an oracle no arm gets unless asked, and then every arm gets it.
    pace: bool = False
    # TCP baseline: ECN on/off, set per host namespace (net.ipv4.tcp_ecn) and checked by the agents.
    tcp_ecn: str | None = None
    agent_args: tuple[str, ...] = ()
    # Restart a switch or the controller that exits unexpectedly (topo/supervisor.py).
    supervise: bool = True
    # The fewest workers a job may shrink to when workers die (the PS's --min-workers).
    min_workers: int | None = None
    # P4Runtime without TLS (a testbed without PKI): any local user could then program the
    # switches. Default: a per-run CA, TLS with client certificates (topo/pki.py).
    plaintext: bool = False
    # Jobs run this PyTorch DDP script through gradlane's hook instead of the gradlane agents
    # (topo/ddp_job.py); `ddp_model` its --model.
    ddp_script: str | None = None
    ddp_model: str | None = None
    # What the switches' ports compare their ECN threshold with (the controller's --ecn-depth):
    # "queue", the packet's own priority queue, or "port", the port's occupancy.
    ecn_depth: str = "queue"

    @property
    def bmv2_json(self) -> str:
        """The compiled program."""
        return str(Path(self.build_dir) / f"{PROGRAM}.json")

    @property
    def p4info(self) -> str:
        """The P4Info text proto beside it."""
        return str(Path(self.build_dir) / f"{PROGRAM}.p4info.txtpb")

    @property
    def topology_path(self) -> str:
        """Where the description is written."""
        return str(Path(self.log_dir) / f"{self.topo_name}.topology.json")


class RunSession:
    """A network plus its controller, started and stopped as one."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.topo: Topology = build_topology(config.topo_name, _with_log_dir(config.params, config.log_dir))
        self.record: RunRecord | None = None
        self.network: GradNetwork | None = None
        self.controller: ManagedProcess | None = None
        self._lock: IO[str] | None = None
        self.impairment_lines: list[str] = []
        self.stale: list[str] = []
        self.jobs = 0
        self.running: dict[int, TrainingJob] = {}   # job id -> a job started beside others
        self.background: list[ManagedProcess] = []
        self.supervisor: Supervisor | None = None
        self.pki: RunPki | None = None

    # -- bring-up --------------------------------------------------------------------------
    def start(self) -> "RunSession":
        """Clean stale state, start switches, write the description, start the controller and
        wait until it programmed every switch. On failure, everything started is stopped."""
        cfg = self.config
        for path, what in ((cfg.bmv2_json, "program JSON"), (cfg.p4info, "P4Info")):
            if not Path(path).is_file():
                raise ToolchainError(f"{what} {path} not found: run `make build` first")
        if os.geteuid() != 0:
            raise ToolchainError("Mininet needs root: run as root (sudo make run)")
        if cfg.controller:
            agents.require(agents.CONTROLLER_MODULE, "the controller daemon")
            if cfg.policy and not Path(cfg.policy).is_file():
                raise RunError(f"policy file {cfg.policy} not found")
        self._take_lock()
        try:
            self.stale = stop_recorded(cfg.log_dir).stopped
            self._forget_controller_state()
            self.record = RunRecord.create(cfg.log_dir, self.topo.name)
            self.pki = None if cfg.plaintext else create_run_pki(cfg.log_dir)
            pcap_dir = str(Path(cfg.pcap_dir).absolute()) if cfg.pcap else None
            if pcap_dir:
                Path(pcap_dir).mkdir(parents=True, exist_ok=True)
            self.network = GradNetwork(self.topo, self.record, NetworkOptions(
                json_path=cfg.bmv2_json, pcap_dir=pcap_dir, bursts=cfg.bursts, static_arp=cfg.static_arp,
                start_timeout=cfg.switch_timeout, tls=tuple(self.pki.switch_flags()) if self.pki else ()),
                switch_tool())
            plan = self.network.plan_links()
            self.impairment_lines = plan.summary(self.topo)
            self.topo.save(cfg.topology_path)
            self.network.start()
            if cfg.controller:
                self._start_controller()
            if cfg.supervise:
                self.supervisor = Supervisor(self.network.net.switches, self.controller,
                                             Path(cfg.log_dir) / "supervisor.log").start()
        except BaseException:
            self.stop()
            raise
        return self

    def _forget_controller_state(self) -> None:
        """A new network starts from the policy file: the state file (and its backup) of an
        earlier run only carries a daemon across restarts within one run."""
        state = Path(agents.controller_state_file(self.config.topology_path, self.config.log_dir))
        for path in (state, state.with_name(state.name + ".bak")):
            path.unlink(missing_ok=True)

    def _take_lock(self) -> None:
        Path(self.config.log_dir).mkdir(parents=True, exist_ok=True)
        lock = open(Path(self.config.log_dir) / "run.lock", "a+")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            old = RunRecord.load(self.config.log_dir)
            who = next((f" (pid {p.pid})" for p in old.processes if p.kind == "run"
                        and is_same_process(p.pid, p.start_time)), "") if old else ""
            raise RunError(f"another topology run is active{who}: stop it first (`make stop`)") from None
        self._lock = lock

    def _start_controller(self) -> None:
        cfg = self.config
        assert self.record is not None
        argv = agents.controller_argv(cfg.topology_path, cfg.p4info, cfg.bmv2_json, cfg.policy, cfg.log_dir,
                                      pki=str(self.pki.folder) if self.pki else None,
                                      ecn_depth=cfg.ecn_depth)
        proc = ManagedProcess("controller", "controller", argv, Path(cfg.log_dir) / "controller.log", self.record)
        self.controller = proc.start()
        ready = re.compile(agents.CONTROLLER_READY, re.MULTILINE)
        failed = re.compile(agents.CONTROLLER_FAILED, re.MULTILINE)

        def settled() -> bool:
            text = proc.output()
            bad = failed.search(text)
            if bad:
                raise ProcessStartError(f"controller: {bad.group(0)}; last lines of {proc.log}:\n"
                                        f"{log_tail(proc.log)}")
            return bool(ready.search(text))

        proc.wait_for(settled, cfg.controller_timeout, "'all switches programmed'")

    # -- use -------------------------------------------------------------------------------
    @property
    def net(self) -> Any:
        """The Mininet object."""
        if self.network is None or self.network.net is None:
            raise TopoError("network is not running")
        return self.network.net

    def gradctl(self, *args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run `gradctl ARGS` against the running controller."""
        agents.require(agents.GRADCTL_MODULE, "gradctl")
        argv = agents.gradctl_argv(*args, socket=agents.controller_socket(self.config.log_dir))
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)

    def control(self, cmd: str, args: dict[str, Any] | None = None, timeout: float = 30.0) -> Any:
        """One request to the running controller daemon, sent from this process: its answer is
        what `gradctl --json` prints, without a Python process started (and gRPC imported) per
        call, which experiments make several times per run; ControllerError when it fails."""
        from controller import api  # noqa: PLC0415 (gRPC and protobuf: only once a network runs)

        return api.call(Path(agents.controller_socket(self.config.log_dir)), cmd, args, timeout=timeout)

    def apply_policy(self, path: str | Path) -> None:
        """`gradctl policy apply PATH` from this process: the file is validated here, then
        installed by the daemon; ControllerError (one line, naming the file) when either fails."""
        from controller.policy import load_policy  # noqa: PLC0415

        policy = load_policy(path)
        self.control("policy.apply", {"document": dict(policy.document), "source": str(path)})

    def stats(self) -> dict[str, Any] | None:
        """`gradctl stats --json`'s document; None when unavailable."""
        try:
            data = self.control("stats", {"switch": None})
        except ControllerError:
            return None
        return data if isinstance(data, dict) else {"items": data}

    def policy_jobs(self) -> list[dict[str, Any]]:
        """The jobs of the controller's running policy (`gradctl --json policy show`); [] when
        the controller cannot answer."""
        try:
            shown = self.control("policy.show")
        except ControllerError:
            return []
        jobs = shown.get("jobs") if isinstance(shown, dict) else None
        return [j for j in jobs if isinstance(j, dict)] if isinstance(jobs, list) else []

    def pace_pps(self, workers: int) -> float | None:
        """With `pace`, each sender's fair share of the bottleneck: 0.9 x rate / workers."""
        rate = self.config.params.bottleneck_pps
        if not self.config.pace:
            return None
        if not rate:
            raise RunError("pacing needs a bottleneck rate (--bottleneck-pps)")
        return 0.9 * rate / workers

    def job_spec(self, job_id: int, rounds: int | None = None, workers: int | None = None,
                 extra_ps: tuple[str, ...] = (), extra_worker: tuple[str, ...] = (),
                 group: int = 0, transport: str | None = None) -> agents.JobSpec:
        """The agents' flags of one job: the run's transport (or ``transport``) and agent flags,
        the pacing (of the workers of every transport when asked, never otherwise), then the
        caller's extras."""
        transport = transport or self.config.transport
        n_workers = workers or (len(self.topo.hosts_with_role("worker"))
                                // max(1, host_groups(self.topo)))
        common: tuple[str, ...] = ("--transport", transport, *self.config.agent_args)
        if self.config.tcp_ecn:
            common = (*common, "--tcp-ecn", self.config.tcp_ecn)
        controller = self.policy_socket(job_id, transport, (*common, *extra_ps, *extra_worker))
        share = self.pace_pps(n_workers)
        # The workers are the senders that share the bottleneck; the PS's pull is not paced.
        pace = () if share is None else ("--pace-pps", f"{share:.0f}")
        shrink = () if self.config.min_workers is None else ("--min-workers", str(self.config.min_workers))
        return agents.JobSpec(job_id=job_id, rounds=rounds or self.config.rounds, workers=n_workers,
                              extra_ps=(*common, *shrink, *extra_ps),
                              extra_worker=(*common, *pace, *extra_worker), group=group,
                              controller=controller)

    def policy_socket(self, job_id: int, transport: str, agent_args: tuple[str, ...]) -> str | None:
        """The controller socket a job's agents follow, or None: only for our transport (ltp),
        only when the agents get no bound flags (explicit flags keep today's behaviour), and
        only for a job the running policy names (any other job gets the default class)."""
        if transport != "ltp" or self.controller is None:
            return None
        if any(a.split("=")[0] in agents.BOUND_FLAGS for a in agent_args):
            return None
        if not any(j.get("job") == job_id for j in self.policy_jobs()):
            return None
        return agents.controller_socket(self.config.log_dir)

    def train(self, rounds: int | None = None, workers: int | None = None, timeout: float = 600.0,
              extra_ps: tuple[str, ...] = (), extra_worker: tuple[str, ...] = (),
              ddp_script: str | None = None) -> TrainingResult:
        """Run one training job (PS + workers on the hosts) to the end."""
        job_id = self.start_job(rounds, workers, extra_ps, extra_worker, ddp_script=ddp_script)
        return self.finish_job(job_id, timeout)

    def start_job(self, rounds: int | None = None, workers: int | None = None,
                  extra_ps: tuple[str, ...] = (), extra_worker: tuple[str, ...] = (),
                  transport: str | None = None, ddp_script: str | None = None) -> int:
        """Start a training job on the first free host group, beside any running one; its id.
        Job ids count up from 1 over the run (the policy names jobs by these ids). Its
        transport is the run's unless ``transport`` names another; it runs the gradlane agents,
        or ``ddp_script`` (default: the run's) through the DDP hook."""
        assert self.record is not None
        self.reap_jobs()
        busy = {job.job.group for job in self.running.values()}
        free = [g for g in range(host_groups(self.topo)) if g not in busy]
        if not free:
            raise RunError(f"every host group of topology {self.topo.name} runs a job "
                           f"(jobs {', '.join(map(str, sorted(self.running)))}): wait for one, "
                           f"or start the network with more groups (--jobs)")
        spec = self.job_spec(self.jobs + 1, rounds, workers, extra_ps, extra_worker, group=free[0],
                             transport=transport)
        script = ddp_script or self.config.ddp_script
        if script:
            spec = replace(spec, controller=None, ddp_script=script, ddp_model=self.config.ddp_model)
        kind = DdpJob if script else TrainingJob
        job = kind(self.net, self.topo, self.config.topology_path, self.record,
                   self.config.log_dir, spec, self.host_sysctls())
        self.jobs += 1
        self.running[spec.job_id] = job
        try:
            job.start()
        except BaseException:
            job.stop()
            del self.running[spec.job_id]
            raise
        return spec.job_id

    def finish_job(self, job_id: int, timeout: float = 600.0) -> TrainingResult:
        """Wait for a started job to end (at most ``timeout`` s) and collect its result."""
        job = self.running.get(job_id)
        if job is None:
            raise RunError(f"no running job {job_id} (running: "
                           f"{', '.join(map(str, sorted(self.running))) or 'none'})")
        try:
            return job.wait(timeout)
        finally:
            del self.running[job_id]

    def reap_jobs(self) -> None:
        """Forget started jobs whose agents have all exited (their results stay in the logs)."""
        for job_id, job in list(self.running.items()):
            if job.finished():
                job.stop()
                del self.running[job_id]

    def host_sysctls(self) -> dict[str, str]:
        """Per-namespace settings of a job's hosts: net.ipv4.tcp_ecn when ECN was chosen."""
        if self.config.tcp_ecn is None:
            return {}
        return {"net.ipv4.tcp_ecn": "1" if self.config.tcp_ecn == "on" else "0"}

    def start_background(self, flows: int, duration: float = 3600.0, cc: str = "reno") -> list[str]:
        """Start a TCP sink on the sink host(s) and `flows` ECN-capable TCP flows from every other
        background host to a sink (the nearest one by name order); returns 'src->dst' lines."""
        agents.require(agents.BACKGROUND_MODULE, "the background traffic agent")
        assert self.record is not None
        hosts = self.topo.hosts_with_role("background")
        sinks = [h for h in hosts if h.startswith("bs")] or hosts[-1:]
        senders = [h for h in hosts if h not in sinks]
        if not sinks or not senders or flows < 1:
            raise RunError(f"topology {self.topo.name} has no background sender/sink pair")
        log_dir = Path(self.config.log_dir)
        for sink in sinks:
            proc = ManagedProcess(f"sink@{sink}", "agent", agents.background_sink_argv(),
                                  log_dir / f"background.{sink}.log", self.record, self.net.get(sink))
            self.background.append(proc.start())
            node = self.net.get(sink)
            proc.wait_for(lambda n=node: f":{agents.BACKGROUND_PORT} " in n.cmd("ss -ltnH"), 15,
                          "background sink listening")
        lines = []
        for sender in senders:
            dst = sinks[0]
            argv = agents.background_flows_argv(self.topo.hosts[dst].ip, flows, duration, cc)
            proc = ManagedProcess(f"flows@{sender}", "agent", argv, log_dir / f"background.{sender}.log",
                                  self.record, self.net.get(sender))
            self.background.append(proc.start())
            lines.append(f"{sender} -> {dst}: {flows} TCP flow(s), {cc} + ECN")
        return lines

    def stop_background(self) -> None:
        """Stop every background traffic process."""
        for proc in self.background:
            proc.stop()
        self.background = []

    # -- teardown --------------------------------------------------------------------------
    def stop(self) -> bool:
        """Stop the controller, the network, remove the record, release the lock. Idempotent;
        True if there was anything to stop."""
        had = self.record is not None
        if self.supervisor is not None:
            self.supervisor.stop()   # first: what is stopped now must stay stopped (its faults stay)
        for job in self.running.values():
            job.stop()
        self.running = {}
        self.stop_background()
        if self.controller is not None:
            self.controller.stop()
            self.controller = None
        if self.network is not None:
            self.network.stop()
            self.network = None
        if self.record is not None:
            leftovers = [p for p in self.record.processes if p.kind != "run"]
            if leftovers:
                # Something we recorded is still listed (e.g. an agent the caller started): end it.
                stop_recorded(self.config.log_dir, include_run=False)
            else:
                for name in self.record.interfaces:
                    delete_interface(name)
                self.record.remove()
            self.record = None
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        return had

    def __enter__(self) -> "RunSession":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _with_log_dir(params: TopoParams, log_dir: str) -> TopoParams:
    return replace(params, log_dir=log_dir)
