"""Link delay, loss and rate: what this kernel can do (netem, tbf) and who makes each impairment.

netem exists on most kernels but not on every machine (research.md section 9): we probe it on
a throw-away veth pair. Without netem, delay and loss are made in user space by the embedded
switch's per-port `--impair PORT:SPEC` (on the switch's egress, so on a host link only the
switch -> host direction is impaired; on a switch-to-switch link both switch ports are).
"""
from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass

from controller.topology import Link, Topology


def _tc_ok(*args: str) -> bool:
    return subprocess.run(["tc", "qdisc", "add", *args], capture_output=True).returncode == 0


@functools.lru_cache(maxsize=1)
def probe_qdiscs() -> dict[str, bool]:
    """{'netem': bool, 'tbf': bool}: which qdiscs this kernel accepts (needs root)."""
    a, b = f"glpa{os.getpid() % 100000}", f"glpb{os.getpid() % 100000}"
    made = subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b],
                          capture_output=True).returncode == 0
    if not made:
        return {"netem": False, "tbf": False}
    try:
        netem = _tc_ok("dev", a, "root", "netem", "delay", "1ms")
        tbf = _tc_ok("dev", b, "root", "tbf", "rate", "10mbit", "burst", "10kb", "latency", "50ms")
        return {"netem": netem, "tbf": tbf}
    finally:
        subprocess.run(["ip", "link", "del", a], capture_output=True)


@dataclass(frozen=True)
class ImpairmentPlan:
    """Per-switch `--impair` specs (when the switch makes them) and the netem links."""

    switch_specs: dict[str, tuple[str, ...]]
    netem_links: tuple[int, ...]  # indexes into topo.links
    unmade: tuple[str, ...] = ()  # links whose requested impairment nothing here can make
    bursts: tuple[str, ...] = ()  # scheduled loss bursts on the switch-impaired bottleneck links

    def summary(self, topo: Topology) -> list[str]:
        """One line per impaired link naming who makes the impairment."""
        out = []
        for link in topo.links:
            if link.impairment != "none":
                bursts = f", loss bursts {' '.join(self.bursts)}" if self.bursts and link.impairment == "switch" \
                    and _is_bottleneck(link) else ""
                out.append(f"{link.a}-{link.b}: delay {link.delay_ms:g} ms, loss {link.loss_pct:g} %{bursts} "
                           f"by {'netem (kernel)' if link.impairment == 'netem' else 'switch egress (--impair)'}")
        out += [f"{name}: impairment requested but NOT applied (impairment none: no netem in this "
                "kernel and the real switch has no --impair)" for name in self.unmade]
        return out


def _spec(link: Link, bursts: tuple[str, ...]) -> str:
    items = []
    if link.delay_ms:
        items.append(f"delay={link.delay_ms:g}ms")
    if link.loss_pct:
        items.append(f"loss={link.loss_pct / 100:g}")
    items += [f"burst={b}" for b in bursts]
    return ",".join(items)


def plan_impairments(topo: Topology, *, netem: bool, switch_kind: str,
                     bursts: tuple[str, ...] = ()) -> ImpairmentPlan:
    """Decide netem vs switch per impaired link and set each link's `impairment` field.

    `bursts` (`START+DURATION@LOSS`, switch syntax) are scheduled loss bursts ("microbursts") on
    the impaired links; netem cannot schedule them, so they always go to the embedded switch.
    When nothing here can make one (no netem and a real switch), the link's impairment is
    recorded as "none" and named in `unmade`."""
    specs: dict[str, list[str]] = {}
    netem_links: list[int] = []
    unmade: list[str] = []
    for index, link in enumerate(topo.links):
        wanted = bool(link.delay_ms or link.loss_pct)
        link_bursts = bursts if (wanted or bursts) and _is_bottleneck(link) else ()
        if not wanted and not link_bursts:
            link.impairment = "none"
            continue
        if netem and not link_bursts:
            link.impairment = "netem"
            netem_links.append(index)
            continue
        if switch_kind != "embedded":
            link.impairment = "none"
            unmade.append(f"{link.a}-{link.b}")
            continue
        link.impairment = "switch"
        for end in (link.a, link.b):
            port = link.port_of(end)
            if end in topo.switches and port is not None:
                specs.setdefault(end, []).append(f"{port}:{_spec(link, link_bursts)}")
    return ImpairmentPlan({k: tuple(v) for k, v in specs.items()}, tuple(netem_links), tuple(unmade), tuple(bursts))


def _is_bottleneck(link: Link) -> bool:
    return link.a_queue_rate_pps is not None or link.b_queue_rate_pps is not None
