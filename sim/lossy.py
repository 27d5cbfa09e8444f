"""gradlane's loss-tolerant transport (arms `ltp` and `mlt`) in ns-3: the ns-3 driver of the
sans-IO core in `hosts/transport` (docs/mechanisms.md, "One transport, two drivers").

The protocol is not written again here: the sessions (`SendSession`, `RecvSession`), their
router and their ports are the ones the Mininet agents run, built from the same agent flags
(`hosts.exchange.config`), and so are the rounds: the PS's and the workers' round machines
(`hosts.rounds`), which `hosts/exchange/udp_server.py` and `udp_worker.py` drive with blocking
calls. This module replaces what the socket driver does: ns-3 UDP sockets
(`sim/cpp/bridge.h : UdpBridge`) instead of Linux ones, ns-3's clock instead of the host's, and
a step of each machine whenever its agent got a packet or its timer came. With `--phase-aware`
the PS runs DBLP's phase schedule (`hosts.transport.phase`) on the norms of the gradients it aggregated, as
hosts/ps.py does, and opens the next push at the phase's bounds. What the simulator leaves out:
the join handshake (addresses are known), training (gradients are sized, random values drawn
alike every round, so their norm stays put), a controller (the flags decide, as in
`ltp_incast`'s arms) and PCN. `run_lossy_jobs` runs several jobs at once (each its own PS,
workers, bridge and `--job` id) under one driver loop, as `dlcp_ablation`'s fabric does.

Every datagram is handled in Python by the agents' own code, so the driver spends as little as it
can around it (docs/ns3.md, "Speed"): datagrams cross to and from ns-3 in one batch per pause
each way, and at each pause only the routers and state machines that can act are called (an
agent that got a packet, whose set of sessions changed, or one of whose timers came), not every
agent at every arrival. What goes on the wire is the same either way (tests/unit/sim/test_lossy_wire.py).
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import ipaddress
import struct
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from hosts import wire
from hosts.errors import ConfigError, PeerTimeout
from hosts.exchange import job_key
from hosts.training.aggregate import PushAggregator
from hosts.exchange.config import (TransportConfig, add_transport_arguments, config_from_args,
                                   with_chunk_plan)
from hosts.exchange.results import Gathered
from hosts.rounds.server import PullClosed as ServerPullClosed, PushClosed as ServerPushClosed, ServerRounds
from hosts.rounds.worker import PullClosed as WorkerPullClosed, PushClosed as WorkerPushClosed, WorkerRounds
from hosts.transport.bounds import violated_layers
from hosts.transport.chunking import ChunkPlan
from hosts.transport.phase import PhaseSchedule
from hosts.transport.port import Port
from hosts.transport.receiver import RecvSession
from hosts.transport.router import Router
from hosts.transport.sender import SendGroup, SendSession
from sim import engine
from sim.errors import SimError
from sim.network import SimNetwork

UDP_PORT = 19527                 # the agents' default
INFINITY = float("inf")
# a datagram's head in sim/cpp/bridge.h's batches: host, IPv4 address, port, TOS, length
_RECORD = struct.Struct("=IIHBH")
_ALARM_SLACK = 1e-6       # s: a tick a little early costs nothing, one too late changes the run


@lru_cache(maxsize=None)
def _bridge_class() -> Any:
    import cppyy  # noqa: PLC0415 (loaded with ns-3, seconds)

    engine.ns3()
    path = engine.CPP_DIR / "bridge.h"
    if not cppyy.include(str(path)):
        raise SimError(f"cppyy could not compile {path}")
    return cppyy.gbl.gradlane_sim.UdpBridge


def transport_config(transport: str, agent_args: list[str], num_layers: int,
                     chunk_elems: int | None, seed: int) -> TransportConfig:
    """The agents' transport configuration from their flags (`--transport`, `--chunk-elems`
    unless None: the agents' default, and the arm's `agent_args`), as
    hosts/exchange/config.py builds it for the Mininet agents."""
    parser = argparse.ArgumentParser(prog="sim.lossy", add_help=False, exit_on_error=False)
    add_transport_arguments(parser)
    chunk = [] if chunk_elems is None else ["--chunk-elems", str(chunk_elems)]
    try:
        args, unknown = parser.parse_known_args(["--transport", transport, *chunk, *agent_args])
        if unknown:
            raise SimError(f"agent flags {' '.join(agent_args)!r}: {' '.join(unknown)} are not the "
                           f"agents' transport flags")
        config = config_from_args(args, num_layers, seed)
    except (argparse.ArgumentError, ConfigError) as exc:
        raise SimError(f"agent flags {' '.join(agent_args)!r}: {exc}") from None
    # The job key signs the control packets (--packet-mac): derived from the seed, so that a
    # simulated run puts the same bytes on the wire every time.
    key = hashlib.sha256(b"gradlane-sim-job-key" + seed.to_bytes(8, "big", signed=True)).digest()
    return dataclasses.replace(config, job_key=key[:job_key.KEY_BYTES])


class _SimRouter(Router):
    """The agents' router, telling the driver when its set of sessions changed (a session added,
    with any packets it had waiting, or sessions pruned): the driver then ticks it in full."""

    def __init__(self, endpoint: Port) -> None:
        super().__init__(endpoint)
        self.changed = True

    def add(self, session: Any) -> None:
        self.changed = True
        super().add(session)

    def prune(self, below_round: int) -> None:
        self.changed = True
        super().prune(below_round)


@dataclass
class Agent:
    """One host's port and router, and where its datagrams go in ns-3. `wake` is what its
    router's last tick returned, `alarm` the earliest time one of its sessions may give up on
    a silent peer (PeerTimeout), as of that tick."""

    name: str
    index: int                 # the bridge's socket
    addr: tuple[str, int]
    port: Port
    router: _SimRouter
    wake: float = -INFINITY
    alarm: float = -INFINITY


@dataclass
class LossyRound:
    """One round as the simulation saw it (times in simulated seconds)."""

    start: float
    end: float | None = None
    push_closed_by: dict[int, str | None] = field(default_factory=dict)
    delivered: list[float] = field(default_factory=list)        # per layer, mean over workers
    delivered_tensor_min: float = 1.0
    violations: int = 0
    retransmissions: int = 0
    data_packets: int = 0
    queue_depth: int | None = None
    deadline_ms: float | None = None
    phase: str | None = None            # the PS's phase schedule after this round (--phase-aware)
    push_bound: float | None = None     # the largest push bound this round's push was closed at
    # the workers' own split of their round, means over workers (the agents' `round` record):
    # compute_s, push_s, wait_s (push's end to the pull's first packet), pull_s, control_s
    worker_breakdown: dict[str, float] = field(default_factory=dict)
    push_times: list[float] = field(default_factory=list)   # each worker's push_s (DLCP's gradient FCT)
    # what set off each stage's resends, summed over its senders: `resent` chunks in all,
    # `fast` on the ACKs' evidence (RACK, before any probe), the rest on a PROBE's BITMAP or a
    # PULL_REQ (a timer); `probes` sent. `pull_sessions`: per worker [pull seconds at the PS
    # (None while its STOP is on the way), chunks resent, of them fast], so a slow pull can be
    # told apart by what repaired it.
    repairs: dict[str, dict[str, int]] = field(default_factory=dict)   # per stage: resends, probes, window cuts
    pull_sessions: list[list[float]] = field(default_factory=list)


@dataclass
class LossyOutcome:
    """The rounds of one simulated job, its counters and what it cost."""

    rounds: list[LossyRound]
    planned: int
    wall_s: float
    packets: int                           # datagrams the agents handled (sent + received)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    switches: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def complete(self) -> bool:
        return self.error is None and sum(r.end is not None for r in self.rounds) == self.planned


class _Worker:
    """One worker: the agents' round machine (`hosts.rounds.worker.WorkerRounds`), started
    at the round's time, with this job's gradients and its records."""

    def __init__(self, job: "_Job", agent: Agent, rank: int) -> None:
        self.job, self.agent, self.rank = job, agent, rank
        self.machine = WorkerRounds(agent.router, job.config, job.plan, rank, job.ps.addr,
                                    pace_pps=job.worker_pace_pps)
        self.round = -1
        self.start_at = INFINITY
        self.sender: SendSession | None = None
        self.push_end: float | None = None

    def start(self, round_: int, at: float) -> None:
        self.round, self.start_at = round_, at

    def _breakdown(self, first_pull: float | None, end: float) -> dict[str, float]:
        """This round's split as udp_worker.py's caller logs it: the push until STOP, then
        waiting for the pull's first packet, then the pull (no training, no controller)."""
        assert self.sender is not None
        pushed = self.push_end if self.push_end is not None else end
        first = first_pull if first_pull is not None else end
        wait = max(min(first, end) - pushed, 0.0)
        return {"compute_s": 0.0, "push_s": pushed - self.sender.stats.started, "wait_s": wait,
                "pull_s": max(end - pushed - wait, 0.0), "control_s": 0.0}

    def step(self, now: float) -> float:
        job, machine = self.job, self.machine
        if machine.sender is None and machine.pull is None and now >= self.start_at:
            self.start_at = INFINITY
            job.round_started(self.round, now)
            machine.begin(self.round, job.gradient(self.rank, self.round))
            self.sender = machine.sender
        step = machine.step(now)
        for event in step.events:
            if isinstance(event, WorkerPushClosed):
                job.pushed(event.sender)
                self.push_end = event.sender.stats.finished
            elif isinstance(event, WorkerPullClosed):
                job.pulled(self, event.round, now, self._breakdown(event.state.first_data, now))
                self.sender, self.push_end = None, None
        return min(self.start_at, step.wake)


class _Server:
    """The PS: the agents' round machine (`hosts.rounds.server.ServerRounds`) with every
    worker bound at its known address, the next round started as soon as a pull ends, and
    DBLP's phase schedule with --phase-aware."""

    def __init__(self, job: "_Job", agent: Agent) -> None:
        self.job, self.agent = job, agent
        self.machine = ServerRounds(agent.router, job.config, job.plan, len(job.workers))
        for w in job.workers:
            self.machine.bind(w.rank, w.agent.addr)
        self.round = 0
        self.push: RecvSession | None = None
        self.group: SendGroup | None = None
        cfg = job.config
        self.push_bounds = cfg.bounds.push
        self.phase = (PhaseSchedule(len(job.plan.layer_sizes), cfg.phase_high_delta,
                                    check_every=cfg.phase_check_rounds, per_layer=cfg.phase_per_layer)
                      if cfg.phase_aware else None)
        self.aggregator = PushAggregator(cfg.hole_fill)

    def _required(self) -> tuple[float, ...]:
        return tuple(1.0 - b for b in self.push_bounds)

    def step(self, now: float) -> float:
        job, machine = self.job, self.machine
        if self.push is None and self.group is None and self.round < job.planned:
            machine.begin_push(self.round, self._required())
            self.push = machine.push
        step = machine.step(now)
        events = list(step.events)
        while events:
            event = events.pop(0)
            if isinstance(event, ServerPushClosed):
                job.gathered(self.round, event.gathered)
                self._observe_phase(event.gathered)
                last = self.round == job.planned - 1
                machine.begin_pull(self.round, job.parameters, last, None if last else self._required())
                step = machine.step(now)     # every worker is there: the pull starts at once
                events += step.events
                self.group, self.push = machine.pull, None
            elif isinstance(event, ServerPullClosed):
                job.scattered(event.group)
                self.group = None
                self.round += 1
        return step.wake

    def _observe_phase(self, gathered: Gathered) -> None:
        """hosts/ps.py's phase step: the aggregated gradient's per-layer norms into the schedule;
        after a check the next push's bounds follow the phase. Records this round's bound and
        the phase after it."""
        rec = self.job.rounds[self.round]
        rec.push_bound = max(self.push_bounds) if self.push_bounds else None
        if self.phase is None:
            return
        if gathered.values:
            grads = self.aggregator.aggregate(gathered.values, gathered.delivered)
            if self.phase.observe([float(np.sqrt(np.dot(g, g))) for g in grads]):
                self.push_bounds = self.phase.bounds(self.job.config.bounds.push)
        rec.phase = self.phase.phase


class _Job:
    """One parameter server and its workers over a `UdpBridge`, driven on ns-3's clock."""

    def __init__(self, net: SimNetwork, ps: str, workers: list[str], config: TransportConfig,
                 plan: ChunkPlan, rounds: int, jitter_s: float, seed: int,
                 on_round_start: Callable[[int], None] | None = None, worker_pace_pps: float = 0.0) -> None:
        self.on_round_start = on_round_start
        self.worker_pace_pps = worker_pace_pps
        self.net, self.config, self.plan, self.planned = net, config, plan, rounds
        self.seed = seed
        self.first_start = 0.0   # when the workers start round 0's push (simulated seconds)
        self._ns = net.ns
        self._now = 0.0      # the driver's time: ns-3's, or a timer's own when it woke us
        self.bridge = _bridge_class()()
        self.jitter_s = jitter_s
        self._jitter = net.ns.CreateObject[net.ns.UniformRandomVariable]()
        self._ip_int: dict[str, int] = {}
        self._by_ip: dict[int, str] = {}
        self.agents: dict[tuple[str, int], Agent] = {}
        ps_agent = self._agent(ps, wire.PS_RANK)
        self.ps = ps_agent
        self.workers = [_Worker(self, self._agent(name, rank), rank) for rank, name in enumerate(workers)]
        for w in self.workers:
            w.agent.port.peer = ps_agent.addr      # a worker hears its PS only
        self.server = _Server(self, ps_agent)
        rng = np.random.default_rng(seed)
        self.parameters = [rng.normal(0.0, 0.05, n).astype(np.float32) for n in plan.layer_sizes]
        self.rounds: list[LossyRound] = []
        self._pulled: dict[int, int] = {}                  # round -> workers that have its pull
        self._pushes: dict[int, list[SendSession]] = {}    # round -> the workers' closed pushes
        self._ended = 0                                    # rounds whose every worker has its pull
        # The driver ticks a router and steps a state machine only when that can do something
        # (docs/ns3.md, "Speed"): an agent that got no packet, whose sessions' set did not
        # change and none of whose timers came, would send nothing and change nothing.
        self._heard: set[str] = set()        # agents that got a packet since the last pass
        self._ticked: set[str] = set()       # agents whose router ticked in this pass
        self._stepped: set[Any] = set()      # machines stepped in this pass's first step
        self._step_wake: dict[Any, float] = {}

    def _agent(self, host: str, rank: int) -> Agent:
        ns_addr = self.net.address(host)
        ip = str(ipaddress.IPv4Address(int(ns_addr.Get())))
        self._ip_int[ip] = int(ns_addr.Get())
        self._by_ip[int(ns_addr.Get())] = ip
        port = Port(self.config.job_id, rank, self.clock, plain=self.config.plain, mac_key=self.config.mac_key,
                    mac_mode=self.config.mac_mode)
        agent = Agent(host, int(self.bridge.AddHost(self.net.node(host), UDP_PORT)), (ip, UDP_PORT), port,
                      _SimRouter(port))
        options = self.net.options          # the host software time model (SimOptions.host_rx_us)
        if options.host_rx_us or options.host_tx_us:
            self.bridge.SetServiceTime(agent.index, options.host_rx_us * 1e-6, options.host_tx_us * 1e-6)
        self.agents[agent.addr] = agent
        return agent

    def clock(self) -> float:
        """The driver's time in seconds (what the sessions' port reads)."""
        return self._now

    def _advance(self, wake: float) -> None:
        """ns-3's time after a pause; a timer that fired counts as on time (ns-3 rounds it up
        to a whole nanosecond, and a session compares the time it asked for)."""
        sim_now = self._ns.Simulator.Now().GetSeconds()
        self._now = max(self._now, sim_now, wake if self.bridge.woke and wake <= sim_now + 1e-9 else 0.0)

    # -- what the state machines report ----------------------------------------------------
    def gradient(self, rank: int, round_: int) -> list[np.ndarray]:
        """A worker's gradient: sized as the model's layers, values drawn per (seed, rank, round)."""
        rng = np.random.default_rng([self.seed, rank, round_])
        return [rng.normal(0.0, 0.01, n).astype(np.float32) for n in self.plan.layer_sizes]

    def round_started(self, round_: int, now: float) -> None:
        if len(self.rounds) == round_:
            self.rounds.append(LossyRound(start=now))
            if self.on_round_start is not None:
                self.on_round_start(round_)

    def pushed(self, sender: SendSession) -> None:
        self._pushes.setdefault(sender.round, []).append(sender)

    def gathered(self, round_: int, gathered: Gathered) -> None:
        rec = self.rounds[round_]
        fractions = gathered.fractions
        sizes = self.plan.layer_sizes
        bounds = self.config.bounds
        per_layer = [float(np.mean([f[i] for f in fractions.values()])) for i in range(len(sizes))]
        pooled = [sum(f * n for f, n in zip(fr, sizes)) / sum(sizes) for fr in fractions.values()]
        rec.delivered = [round(f, 4) for f in per_layer]
        rec.delivered_tensor_min = round(min(pooled), 4)
        # against the bounds this push was opened at (the phase's, with --phase-aware)
        rec.violations = sum(len(violated_layers(fr, self.server.push_bounds, bounds.scope, sizes))
                             for fr in fractions.values())
        rec.push_closed_by = gathered.closed_by
        rec.queue_depth = gathered.max_qdepth
        rec.deadline_ms = round(gathered.deadline * 1000, 3) if gathered.deadline != INFINITY else None

    def scattered(self, group: SendGroup) -> None:
        rec = self.rounds[group.round]
        senders = [*self._pushes.pop(group.round, []), *group.by_rank.values()]
        rec.retransmissions = sum(s.stats.retransmissions for s in senders)
        rec.data_packets = sum(s.stats.data_packets for s in senders)
        for stage, group_senders in (("push", senders[:len(senders) - len(group.by_rank)]),
                                     ("pull", list(group.by_rank.values()))):
            rec.repairs[stage] = {"resent": sum(s.stats.retransmissions for s in group_senders),
                                  "fast": sum(s.stats.fast_resends for s in group_senders),
                                  "probes": sum(s.stats.probes for s in group_senders),
                                  **_window_totals(group_senders)}
        rec.pull_sessions = [[round(s.stats.seconds, 6) if s.done else None, s.stats.retransmissions,
                              s.stats.fast_resends] for s in group.by_rank.values()]

    def pulled(self, worker: _Worker, round_: int, now: float, parts: dict[str, float]) -> None:
        """A worker has round `round_`'s pull: it starts its next push after its own delay, as
        an agent does after its training step (no barrier between workers); the round ends
        when the last worker has its pull."""
        if round_ + 1 < self.planned:
            delay = self._jitter.GetValue(0.0, self.jitter_s) if self.jitter_s > 0 else 0.0
            worker.start(round_ + 1, now + delay)
        self._pulled[round_] = self._pulled.get(round_, 0) + 1
        rec = self.rounds[round_]
        n = self._pulled[round_]
        rec.push_times.append(parts["push_s"])
        for part, value in parts.items():      # a running mean over the workers
            rec.worker_breakdown[part] = rec.worker_breakdown.get(part, 0.0) + (value - rec.worker_breakdown.get(part, 0.0)) / n
        if self._pulled[round_] == len(self.workers):
            self.rounds[round_].end = now
            self._ended += 1

    # -- the driver loop --------------------------------------------------------------------
    def _flush(self) -> None:
        """Every agent's datagrams, in the agents' order, onto ns-3 in one batch (sim/cpp/bridge.h)."""
        batch = bytearray()
        for agent in self.agents.values():
            if agent.port.outbox:
                for dg in agent.port.take():
                    batch += _RECORD.pack(agent.index, self._ip_int[dg.addr[0]], dg.addr[1], dg.tos, len(dg.data))
                    batch += dg.data
        if batch:
            self.bridge.SendBatch(bytes(batch))

    def _deliver(self, now: float) -> int:
        """Dispatch the datagrams that arrived to their agents; the agents that got a packet
        (a valid one: the rest only count) are marked in `self._heard`."""
        b = self.bridge
        size = int(b.InboxSize())
        if not size:
            return 0
        inbox = bytearray(size)
        b.TakeInbox(inbox)
        raw = bytes(inbox)
        agents = list(self.agents.values())
        head, unpack, at, n = _RECORD.size, _RECORD.unpack_from, 0, 0
        while at < size:
            host, src_ip, src_port, tos, length = unpack(raw, at)
            at += head
            agent = agents[host]
            src = (self._by_ip.get(src_ip, "0.0.0.0"), src_port)
            pkt = agent.port.parse(raw[at:at + length], src, tos)
            at += length
            n += 1
            if pkt is not None:
                agent.router.dispatch(pkt, now)
                self._heard.add(agent.name)
        return n

    def run(self, limit_s: float) -> str | None:
        """Run the job until its rounds are done or simulated time `limit_s`; an error or None."""
        return _drive([self], limit_s)[0]

    def turn(self, limit_s: float) -> tuple[bool, str | None, float]:
        """Step the state machines at the driver's time and send what they queued: (finished,
        its error or None, the next timer)."""
        now = self._now
        machines = [self.server, *self.workers]
        self._step_wake = self._step_wake or {m: -INFINITY for m in machines}
        try:
            wake = self._step(machines, now, first=True)
            for agent in self.agents.values():
                router = agent.router
                if (router.changed or agent.name in self._heard or now >= agent.wake
                        or now >= agent.alarm):
                    router.changed = False
                    agent.wake = router.tick(now)
                    agent.alarm = _alarm(router)
                    self._ticked.add(agent.name)
                wake = min(wake, agent.wake)
            wake = min(wake, self._step(machines, now, first=False))
        except PeerTimeout as exc:
            return True, f"{exc} (simulated time {now:.3f} s)", INFINITY
        self._heard.clear()
        self._ticked.clear()
        self._flush()
        if self._ended == self.planned:
            if self.server.group is not None:     # the last pull's STOPs are still on the way
                self.scattered(self.server.group)
            return True, None, INFINITY
        if now >= limit_s:
            return True, f"{self._ended} of {self.planned} rounds within {limit_s:g} s of simulated time", INFINITY
        if wake < INFINITY:
            self.bridge.WakeAt(min(wake, limit_s))
        return False, None, wake

    def resume(self, wake: float) -> int:
        """After the simulation paused: take the driver's time and hand over the arrivals;
        how many arrived."""
        self._advance(wake)
        return self._deliver(self._now)

    def _step(self, machines: list[Any], now: float, first: bool) -> float:
        """Step the state machines that may have something to do: their agent got a packet,
        their time came, or (the second step) they stepped or their agent's sessions ticked
        in this pass; the earliest time one wants to be stepped again."""
        wake = INFINITY
        for m in machines:
            name = m.agent.name
            if (name in self._heard or now >= self._step_wake[m]
                    or (not first and (m in self._stepped or name in self._ticked))):
                self._step_wake[m] = m.step(now)
                self._stepped.add(m)
            wake = min(wake, self._step_wake[m])
        if not first:
            self._stepped.clear()
        return wake


def _drive(jobs: list[_Job], limit_s: float) -> list[str | None]:
    """Run `jobs` in their one simulation until each is done, failed or at `limit_s`; per job
    its error or None. Each job pauses the simulation on its own arrivals and timers."""
    ns = jobs[0].net.ns
    for job in jobs:
        for w in job.workers:
            w.start(0, job.first_start)
    ns.Simulator.Stop(ns.Seconds(limit_s))
    # ns-3 initialises its nodes (traffic control included) in the first events at time 0:
    # nothing may be sent before they ran
    jobs[0].bridge.WakeAt(0.0)
    ns.Simulator.Run()
    errors: dict[int, str | None] = {}
    while len(errors) < len(jobs):
        waiting = []
        for i, job in enumerate(jobs):
            if i in errors:
                continue
            finished, error, wake = job.turn(limit_s)
            if finished:
                errors[i] = error
            else:
                waiting.append((i, job, wake))
        if not waiting:
            break
        before = ns.Simulator.Now().GetSeconds()
        ns.Simulator.Run()
        arrived = sum(job.resume(wake) for _, job, wake in waiting)
        if arrived == 0 and ns.Simulator.Now().GetSeconds() == before:
            for i, _, wake in waiting:
                if wake == INFINITY:
                    errors[i] = f"the job stalled at simulated time {before:.3f} s (nothing in flight, no timer)"
    return [errors.get(i) for i in range(len(jobs))]


def _window_totals(senders: list[SendSession]) -> dict[str, int]:
    """What cut the senders' windows during this transfer, summed over them (empty without a
    window): packets counted as marked, cuts by marks, by loss beyond the bound, after idle."""
    summaries = [w for w in (s.window_summary() for s in senders) if w]
    if not summaries:
        return {}
    return {key: sum(w[key] for w in summaries)
            for key in ("cc_marked", "cc_mark_cuts", "cc_loss_cuts", "cc_idle_cuts", "cc_losses_spared")}


def _alarm(router: Router) -> float:
    """The earliest time one of `router`'s sessions may raise PeerTimeout on a silent peer (a
    bound from below: ticking the router earlier is only wasted work), as a tick would find it."""
    at = INFINITY
    for session in router.sessions.values():
        senders = (session.by_rank.values() if isinstance(session, SendGroup)
                   else [session] if isinstance(session, SendSession) else [])
        for s in senders:
            if not s.done:
                at = min(at, s.last_heard + s.options.peer_timeout)
        if isinstance(session, RecvSession):
            for state in session.senders.values():
                if state.closed_by is None and state.first_data is None:
                    at = min(at, max(session.opened, state.last_heard or 0.0) + session.options.absent_timeout)
    return at - _ALARM_SLACK if at < INFINITY else at


def with_port_rate(config: TransportConfig, net: SimNetwork, hosts: list[str]) -> TransportConfig:
    """`config` with `--port-mbps` at the line rate of the slowest of `hosts`' own links (a
    simulated host knows its NIC's rate as a real one does), unless the flags set one: the
    agents' senders then pace DATA to what their own port carries (hosts/transport/port_pacer.py)."""
    if config.send.port_mbps > 0:
        return config
    mbps = min(net.host_rate_bps(h) for h in hosts) / 1e6
    return dataclasses.replace(config, send=dataclasses.replace(config.send, port_mbps=mbps))


def run_lossy_rounds(net: SimNetwork, ps: str, workers: list[str], config: TransportConfig,
                     layer_sizes: list[int], rounds: int, limit_s: float, jitter_s: float = 0.0,
                     seed: int = 0, on_round_start: Callable[[int], None] | None = None,
                     worker_pace_pps: float = 0.0) -> LossyOutcome:
    """Run `rounds` push/pull rounds of gradlane's UDP transport (`config`: ltp or mlt) between
    `workers` and `ps` in `net`, each worker starting round r+1 after its own delay drawn
    uniformly from [0, `jitter_s`) once it has the pull of round r (round 0 at once). Stops at simulated time `limit_s` if not done by then.
    `on_round_start(r)` is called when the first worker starts round r's push (ns-3's clock
    reads that moment). `worker_pace_pps` > 0 paces the workers' pushes (not the PS's pull), as
    the emulation's `pace` arms do (topo/session.py)."""
    if not workers:
        raise SimError("a job needs at least one worker")
    if rounds < 1:
        raise SimError("rounds must be at least 1")
    if not config.udp:
        raise SimError(f"transport {config.kind} is not gradlane's UDP transport (ltp, mlt)")
    config, plan = with_chunk_plan(with_port_rate(config, net, [ps, *workers]), layer_sizes)
    job = _Job(net, ps, workers, config, plan, rounds, jitter_s, seed, on_round_start, worker_pace_pps)
    t0 = time.monotonic()
    error = job.run(limit_s)
    return _outcome(job, error, time.monotonic() - t0)


@dataclass(frozen=True)
class LossyJob:
    """One job of `run_lossy_jobs`: its PS, workers, transport (its own `--job` id), layers."""

    ps: str
    workers: list[str]
    config: TransportConfig
    layer_sizes: list[int]
    rounds: int
    jitter_s: float = 0.0
    seed: int = 0
    start_s: float = 0.0        # round 0's pushes start then


def run_lossy_jobs(net: SimNetwork, jobs: list[LossyJob], limit_s: float) -> list[LossyOutcome]:
    """Several jobs of gradlane's UDP transport at once in `net` (each as `run_lossy_rounds`
    runs one, on disjoint hosts), until each is done or simulated time `limit_s`. The outcomes'
    wall time is the whole simulation's."""
    if not jobs:
        raise SimError("no job to run")
    for j in jobs:
        if not j.workers or j.rounds < 1 or not j.config.udp:
            raise SimError(f"job of PS {j.ps}: needs workers, rounds >= 1 and a UDP transport (ltp, mlt)")
    built = [_Job(net, j.ps, j.workers,
                  *with_chunk_plan(with_port_rate(j.config, net, [j.ps, *j.workers]), j.layer_sizes), j.rounds,
                  j.jitter_s, j.seed) for j in jobs]
    for job, spec in zip(built, jobs):
        job.first_start = spec.start_s
    t0 = time.monotonic()
    errors = _drive(built, limit_s)
    wall = time.monotonic() - t0
    return [_outcome(job, error, wall) for job, error in zip(built, errors)]


def _outcome(job: _Job, error: str | None, wall: float) -> LossyOutcome:
    counters = {a.name: a.port.counters.snapshot() for a in job.agents.values()}
    packets = sum(c.get("packets_sent", 0) + c.get("packets_received", 0) for c in counters.values())
    return LossyOutcome(rounds=job.rounds, planned=job.planned, wall_s=wall, packets=packets,
                        counters=counters, error=error,
                        switches={name: sw.counters() for name, sw in job.net.switches.items()})
