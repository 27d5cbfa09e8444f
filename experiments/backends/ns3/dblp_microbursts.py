"""One repetition of a `dblp_microbursts` arm, simulated: the emulation's burst plan
(`experiments.dblp_microbursts.burst_plan`: same rounds and losses for every arm of a
repetition) started on the bottleneck (`SimNetwork.start_burst`) the moment the planned round's
first push starts, for one loss-free round of the reference arm, measured by a warm-up job of
that arm in the same network (kept in the results directory, as the emulation keeps its own).
"""
from __future__ import annotations

import json
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from experiments import dblp_microbursts as dblp
from experiments.api import ArmResult
from experiments.backends.ns3 import lossy_arm
from experiments.backends.ns3.simulation import SimulatedRun, Simulation
from experiments.config import Arm, ExperimentConfig
from sim.errors import SimError
from sim.network import SimNetwork, SimOptions


def burst_direction(cfg: ExperimentConfig) -> str:
    """`params.burst_direction` as `SimOptions.bursts` ("congested" or "both")."""
    value = cfg.params.get("burst_direction", "congested")
    if value not in ("congested", "both"):
        raise SimError(f"params.burst_direction must be congested or both, not {value!r}")
    return str(value)


def burst_duration(cfg: ExperimentConfig, seed: int, topo: Any, jitter_s: float, out_dir: Path,
                   options: SimOptions) -> float:
    """`params.burst_duration_s`, or the median round period of a loss-free warm-up job of
    `params.reference_arm` (rounds 2 on, as the emulation reads its warm-up), saved in
    `out_dir` and reused by every later arm and repetition."""
    fixed = cfg.params.get("burst_duration_s")
    if fixed is not None:
        return float(fixed)
    saved = out_dir / dblp.WARMUP_FILE
    if saved.is_file():
        return float(json.loads(saved.read_text())["duration_s"])
    name = cfg.params.get("reference_arm", dblp.BASELINE)
    ref = next((a for a in cfg.arms if a.name == name), None)
    if ref is None or ref.transport not in lossy_arm.TRANSPORTS:
        raise SimError(f"params.reference_arm {name!r} is not a simulated ltp or mlt arm of the config")
    rounds = int(cfg.params.get("warmup_rounds", 12))
    warm = lossy_arm.run(cfg, ref, seed, topo, jitter_s, options, rounds_planned=rounds)
    ends = [r["t_s"] for r in warm.rounds][2:]
    if not warm.ok or len(ends) < 3:
        raise SimError(f"warm-up job of {name} failed: {warm.error or 'too few rounds (raise params.warmup_rounds)'}")
    periods = [b - a for a, b in zip(ends, ends[1:])]
    duration = statistics.median(periods)
    saved.write_text(json.dumps({"duration_s": duration, "reference_arm": name, "rounds": rounds,
                                 "round_periods_s": [round(p, 9) for p in periods], "simulated": True}) + "\n")
    return duration


def run_arm(cfg: ExperimentConfig, arm: Arm, seed: int, topo: Any, jitter_s: float, out_dir: Path,
            options: SimOptions, reseed: Callable[[], object]) -> ArmResult:
    """One repetition of `arm` under the repetition's bursts; records and metrics as
    `experiments.dblp_microbursts.run_arm` writes them (accuracy n/a: sized gradients).
    `reseed()` resets ns-3's streams after the warm-up, so every arm's run draws alike."""
    if arm.transport not in lossy_arm.TRANSPORTS:
        raise SimError(f"arms[{arm.name}]: dblp_microbursts simulates ltp and mlt arms only")
    options = replace(options, bursts=burst_direction(cfg))
    duration = burst_duration(cfg, seed, topo, jitter_s, out_dir, replace(options, bursts=None))
    reseed()
    rounds = cfg.rounds_of(arm)
    try:
        plan = dblp.burst_plan(seed, rounds, int(cfg.params.get("bursts", 3)),
                               dblp.loss_range(cfg.params.get("burst_loss", [0.6, 0.9])),
                               duration * float(cfg.params.get("burst_rounds", 1.0)),
                               max(1, int(rounds * float(cfg.params.get("first_burst_fraction", 0.2)))))
    except dblp.ExperimentParamError as exc:
        raise SimError(str(exc)) from None
    pending = {b.round: b for b in plan}
    fired: list[dict[str, Any]] = []

    def start(net: SimNetwork, round_: int) -> None:
        burst = pending.pop(round_, None)
        if burst is not None:
            net.start_burst(burst.loss, burst.duration_s)
            fired.append({"round": burst.round, "loss": burst.loss, "duration_s": burst.duration_s,
                          "t_start": net.ns.Simulator.Now().GetSeconds()})

    result = lossy_arm.run(cfg, arm, seed, topo, jitter_s, options, on_round_start=start)
    hit = {f["round"]: f["loss"] for f in fired}
    records = [{**r, "burst": hit.get(r["round"])} for r in result.rounds]
    burst_rounds = [r for r in records if r["burst"] is not None]
    calm = [r["round_time_s"] for r in records if r["burst"] is None]
    metrics = dict(result.metrics)
    metrics.update({
        "train_time_s": metrics["simulated_s"], "target_accuracy": None,
        "burst_duration_s": round(duration, 9),
        "bursts_planned": [{"round": b.round, "loss": b.loss} for b in plan],
        "bursts": [{"round": r["round"], "loss": r["burst"], "round_time_s": r["round_time_s"],
                    "push_s": r["worker_breakdown"].get("push_s"), "phase": r["phase"],
                    "push_bound": r["push_bound"], "closed_by": r["closed_by"], "t_s": r["t_s"]}
                   for r in burst_rounds],
        "burst_round_time_mean_s": dblp.finite_mean([r["round_time_s"] for r in burst_rounds]),
        "burst_round_time_max_s": max((r["round_time_s"] for r in burst_rounds), default=None),
        "calm_round_time_mean_s": dblp.finite_mean(calm),
        "burst_ends": burst_direction(cfg),
    })
    error = result.error
    if error is None and len(fired) != len(plan):
        error = f"{len(fired)} of {len(plan)} bursts fired"
    return ArmResult(rounds=records, metrics=metrics, ok=error is None, error=error,
                     extra={**result.extra, "bursts_fired": fired})


def supported(cfg: ExperimentConfig, arm: Arm) -> str | None:
    """Why `arm` cannot be simulated (None: it can): the bursts are simulated under ltp and mlt."""
    if arm.transport in lossy_arm.TRANSPORTS:
        return None
    return f"transport {arm.transport} is not simulated under bursts yet (only ltp and mlt)"


def simulate(run: SimulatedRun) -> ArmResult:
    """`run_arm` for the harness."""
    return run_arm(run.config, run.arm, run.seed, run.topo, run.jitter_s, run.out_dir, run.options, run.reseed)


SIMULATION = Simulation(run_arm=simulate, supported=supported, check=burst_direction)
