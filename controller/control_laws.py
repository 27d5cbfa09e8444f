"""The controller's control laws: pure functions of what the switches report (no I/O).

PCN threshold law (per job, docs/control-laws.md). Input each step: how many of the job's
gradient DATA packets the switches classified (seen) and how many of them found their egress
queue deeper than their class's drop threshold (congested), summed over every switch since
the previous step. With f = congested / seen:

    fewer than MIN_PACKETS seen      hold ("too few packets")
    f >= HIGH                        threshold - STEP, at least the floor (one step at once:
                                     the job's bursts still meet deep queues, so background
                                     flows must back off earlier)
    f <= LOW for CALM_STEPS steps    threshold + STEP, at most the ceiling (queues stay short:
                                     give background traffic its throughput back)
    otherwise                        hold, and the calm count restarts (the band between LOW
                                     and HIGH and the CALM_STEPS wait are the hysteresis)

STEP is 5 packets, the PCN encoding's granularity (TOS bits 5..2 carry threshold / 5). The
paper's reference points are the bounds' defaults: 10 packets while a burst is pending (the
start value), 40 normally (the ceiling: never laxer than the port's normal threshold).
"""
from __future__ import annotations

from dataclasses import dataclass

STEP = 5
HIGH = 0.10
LOW = 0.02
CALM_STEPS = 3
MIN_PACKETS = 50


@dataclass(frozen=True)
class PcnObservation:
    """The job's gradient DATA packets since the last step: seen, and met a deep queue."""

    seen: int
    congested: int

    @property
    def fraction(self) -> float:
        return self.congested / self.seen if self.seen else 0.0


@dataclass
class PcnLawState:
    """One job's law: the threshold in force and how many calm steps in a row it saw."""

    threshold: int
    floor: int
    ceiling: int
    calm: int = 0


@dataclass(frozen=True)
class PcnStep:
    """What one step decided: the new threshold (possibly unchanged) and why."""

    threshold: int
    previous: int
    reason: str

    @property
    def changed(self) -> bool:
        return self.threshold != self.previous


def pcn_step(state: PcnLawState, obs: PcnObservation) -> PcnStep:
    """Advance ``state`` by one observation (mutates it) and say what happened."""
    before = state.threshold
    if obs.seen < MIN_PACKETS:
        return PcnStep(before, before, f"hold: too few packets ({obs.seen} < {MIN_PACKETS})")
    f = obs.fraction
    if f >= HIGH:
        state.calm = 0
        state.threshold = max(state.floor, before - STEP)
        why = "floor" if state.threshold == before else "lowered"
        return PcnStep(state.threshold, before,
                       f"{why}: {f:.1%} of the job's packets met a deep queue (>= {HIGH:.0%})")
    if f <= LOW:
        state.calm += 1
        if state.calm < CALM_STEPS:
            return PcnStep(before, before, f"hold: queues short ({f:.1%}), calm {state.calm}/"
                                           f"{CALM_STEPS}")
        state.calm = 0
        state.threshold = min(state.ceiling, before + STEP)
        why = "ceiling" if state.threshold == before else "raised"
        return PcnStep(state.threshold, before,
                       f"{why}: queues short for {CALM_STEPS} steps ({f:.1%} <= {LOW:.0%})")
    state.calm = 0
    return PcnStep(before, before, f"hold: {f:.1%} within the band ({LOW:.0%}, {HIGH:.0%})")
