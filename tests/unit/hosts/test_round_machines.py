"""The round machines (`hosts.rounds`) driven on a made-up clock with datagrams moved in memory:
no socket, no thread, no sleep. The UDP exchange and the ns-3 driver run these same machines."""
from __future__ import annotations

import argparse
import ast
import heapq
from pathlib import Path

import numpy as np

from hosts import wire
from hosts.errors import PeerTimeout
from hosts.exchange.config import add_transport_arguments, config_from_args, with_chunk_plan
from hosts.rounds import server as ps_events
from hosts.rounds import worker as worker_events
from hosts.rounds.cadence import PULL_REQ_EVERY_PROBES
from hosts.rounds.server import ServerRounds
from hosts.rounds.worker import WorkerRounds
from hosts.transport.port import Port, Received
from hosts.transport.router import Router

JOB = 5
SIZES = [300, 40]
PS = ("10.0.0.1", 19527)


def _config(*flags: str):
    parser = argparse.ArgumentParser()
    add_transport_arguments(parser)
    args = parser.parse_args(["--transport", "ltp", "--chunk-elems", "20", "--job", str(JOB),
                              "--peer-timeout", "0.5", "--join-timeout", "0.5", *flags])
    return with_chunk_plan(config_from_args(args, len(SIZES), 0), SIZES)


class Job:
    """A PS machine and `workers` worker machines joined by a made-up path (fixed delay);
    `silent` ranks' datagrams are lost both ways."""

    def __init__(self, workers: int = 2, delay: float = 0.0005, flags: tuple[str, ...] = ()) -> None:
        self.now = 0.0
        self.delay = delay
        self.config, self.plan = _config(*flags)
        self.addrs = {r: (f"10.0.1.{r + 1}", 19527) for r in range(workers)}
        ps_port = Port(JOB, wire.PS_RANK, self.clock)
        self.routers = {PS: Router(ps_port)}
        self.ps = ServerRounds(self.routers[PS], self.config, self.plan, workers)
        self.workers: dict[int, WorkerRounds] = {}
        for rank, addr in self.addrs.items():
            self.routers[addr] = Router(Port(JOB, rank, self.clock, peer=PS))
            self.workers[rank] = WorkerRounds(self.routers[addr], self.config, self.plan, rank, PS)
            self.ps.bind(rank, addr)
        self.silent: set[int] = set()
        self.events: list[tuple[str, object]] = []
        self._flight: list = []
        self._n = 0

    def clock(self) -> float:
        return self.now

    def _lost(self, src: tuple[str, int], dst: tuple[str, int]) -> bool:
        return any(self.addrs[r] in (src, dst) for r in self.silent)

    def _send_out(self) -> None:
        for src, router in self.routers.items():
            for dg in router.endpoint.take():
                if self._lost(src, dg.addr):
                    continue
                self._n += 1
                heapq.heappush(self._flight, (self.now + self.delay, self._n, dg.addr, src, dg.data))

    def _step(self) -> float:
        wake = float("inf")
        for name, machine in [("ps", self.ps), *((f"w{r}", m) for r, m in self.workers.items())]:
            step = machine.step(self.now)
            self.events += [(name, e) for e in step.events]
            wake = min(wake, step.wake)
        return wake

    def run(self, done, limit: float = 10.0) -> None:
        """Tick, step, send and deliver until `done()`; the PS goes on without silent workers."""
        while not done():
            wake = self._step()
            for addr, router in self.routers.items():
                try:
                    wake = min(wake, router.tick(self.now))
                except PeerTimeout:
                    assert addr == PS and self.ps.on_silence(self.now), "a worker gave up"
                    wake = self.now
            wake = min(wake, self._step())
            self._send_out()
            if done():
                return
            nxt = min(wake, self._flight[0][0] if self._flight else float("inf"))
            assert nxt < limit, "the job stalled"
            self.now = max(self.now, nxt)
            while self._flight and self._flight[0][0] <= self.now:
                _, _, dst, src, data = heapq.heappop(self._flight)
                pkt = self.routers[dst].endpoint.parse(data, src)
                if pkt is not None:
                    self.routers[dst].dispatch(pkt, self.now)

    def closed(self, who: str, kind: type) -> list:
        return [e for name, e in self.events if name == who and isinstance(e, kind)]

    def round(self, round_: int, last: bool = False) -> np.ndarray:
        """One round: every worker pushes, the PS gathers, then pulls back `params`."""
        for rank, w in self.workers.items():
            if rank not in self.silent:
                w.begin(round_, [np.full(n, rank + 1, np.float32) for n in SIZES])
        self.ps.begin_push(round_, self.config.bounds.required_fraction(pull=False))
        self.run(lambda: len(self.closed("ps", ps_events.PushClosed)) > round_)
        params = [np.full(n, 10.0 * (round_ + 1), np.float32) for n in SIZES]
        self.ps.begin_pull(round_, params, last, None if last else
                           self.config.bounds.required_fraction(pull=False))
        pulled = lambda: all(len(self.closed(f"w{r}", worker_events.PullClosed)) > round_  # noqa: E731
                             for r in self.workers if r not in self.silent)
        self.run(lambda: pulled() and len(self.closed("ps", ps_events.PullClosed)) > round_)
        return params


def test_rounds_gather_every_push_and_scatter_the_result():
    job = Job(workers=2)
    for round_ in range(3):
        params = job.round(round_, last=round_ == 2)
        gathered = job.closed("ps", ps_events.PushClosed)[round_].gathered
        assert sorted(gathered.values) == [0, 1] and gathered.lost == []
        for rank in (0, 1):
            assert np.array_equal(gathered.values[rank][0], np.full(SIZES[0], rank + 1, np.float32))
            pull = job.closed(f"w{rank}", worker_events.PullClosed)[round_]
            assert pull.round == round_
            assert np.array_equal(pull.state.buffer.values[1], params[1])
            assert len(job.closed(f"w{rank}", worker_events.PushClosed)) == round_ + 1
    assert all(e.acknowledged for e in job.closed("ps", ps_events.PullClosed))


def test_the_rounds_go_on_without_a_silent_worker():
    job = Job(workers=2)
    job.round(0)
    job.silent.add(1)
    job.round(1)
    gathered = job.closed("ps", ps_events.PushClosed)[1].gathered
    assert gathered.lost == [1] and sorted(gathered.values) == [0]
    assert job.ps.membership.absent == {1: 1}
    assert [e["change"] for e in job.ps.member_events] == ["absent"]
    job.round(2, last=True)     # the pull of round 1 and the rounds after: worker 0 only
    assert list(job.closed("ps", ps_events.PullClosed)[2].group.by_rank) == [0]


def test_the_ps_pulls_with_the_configured_schedule():
    # (what the serial schedule sends, and when, is tests/unit/hosts/test_port_pacer.py's)
    job = Job(workers=3, flags=("--pull-schedule", "serial", "--port-mbps", "1", "--window", "4"))
    for round_ in range(2):
        job.round(round_, last=round_ == 1)
    pulls = job.closed("ps", ps_events.PullClosed)
    assert [e.group.schedule for e in pulls] == ["serial", "serial"]
    assert all(e.acknowledged for e in pulls)
    assert Job(workers=1).config.pull_schedule == "together"


def test_a_worker_without_pull_data_asks_every_few_probe_intervals():
    config, plan = _config()
    router = Router(Port(JOB, 0, lambda: 0.0, peer=PS))
    machine = WorkerRounds(router, config, plan, 0, PS)
    every = config.send.probe_interval * PULL_REQ_EVERY_PROBES
    machine.catch_up(4, now=0.0)
    asked: dict[float, list] = {}
    now = 0.0
    for _ in range(3):          # steps at 0, then at each time the machine asks for
        wake = machine.step(now).wake
        asked[now] = [wire.unpack_header(dg.data) for dg in router.endpoint.take()]
        now = wake
    assert np.allclose(list(asked), [0.0, every, 2 * every]) and np.isclose(now, 3 * every)
    assert [[(h.kind, h.round, bool(h.flags & wire.FLAG_PULL)) for h in sent]
            for sent in asked.values()] == [[], [(wire.KIND_PULL_REQ, 4, True)]] + \
        [[(wire.KIND_PULL_REQ, 4, True)]]


def test_the_round_machines_touch_no_socket_clock_thread_or_sleep():
    here = Path(__file__).resolve().parents[3] / "hosts" / "rounds"
    banned = {"socket", "select", "time", "threading", "asyncio", "scapy"}
    for path in sorted(here.glob("*.py")):
        tree = ast.parse(path.read_text())
        imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.Import) for alias in node.names}
        imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom)}
        assert not imported & banned, f"{path.name} imports {imported & banned}"


def test_the_server_admits_data_by_its_routers_table_alone():
    """The socket driver admits DATA by `router.data_sources` without calling `admit`
    (hosts/transport/data_route.py): the PS's admit must judge DATA by that table alone."""
    config, plan = _config()
    router = Router(Port(JOB, wire.PS_RANK, lambda: 0.0))
    ps = ServerRounds(router, config, plan, 3)
    assert router.admit == ps.admit and router.data_sources is ps.addrs
    ps.bind(0, ("10.0.1.1", 19527))
    ps.bind(2, ("10.0.1.3", 4000))
    addrs = [("10.0.1.1", 19527), ("10.0.1.3", 4000), ("10.0.1.3", 19527), ("10.0.9.9", 1)]
    for rank in range(4):
        for addr in addrs:
            for flags in (0, wire.FLAG_PULL):
                hdr = wire.unpack_header(wire.pack_header(wire.KIND_DATA, flags, JOB, rank, 0, 1))
                pkt = Received(hdr, b"", addr)
                assert router.admit(pkt) == (router.data_sources.get(rank) == addr)
    ps.bind(0, ("10.0.1.7", 19527))   # a rejoined worker: the table follows
    pkt = Received(wire.unpack_header(wire.pack_header(wire.KIND_DATA, 0, JOB, 0, 0, 1)), b"",
                   ("10.0.1.7", 19527))
    assert router.admit(pkt) and router.data_sources[0] == ("10.0.1.7", 19527)
