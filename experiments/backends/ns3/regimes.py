"""The regime map (experiments/regimes.py) in ns-3: the same push/pull rounds in each cell of
the loss x BDP grid, random loss and delay on the bottleneck from the cell's topology."""
from __future__ import annotations

from dataclasses import replace

from experiments import regimes
from experiments.api import ArmResult
from experiments.backends.ns3.harness import run_rounds_arm, with_path_timers
from experiments.backends.ns3.simulation import SimulatedRun, Simulation
from experiments.config import ExperimentConfig


def setup_regimes(cfg: ExperimentConfig) -> ExperimentConfig:
    """The regime map's grid expanded (`experiments.regimes.setup`); the tuned-RTO arms' minimum
    RTO is `rto_min_rtts` x the cell's RTT, without the emulation's 1 ms floor (a limit of
    Linux's per-route metric that ns-3 does not have: at microsecond RTTs it would be tens of RTTs)."""
    cfg = regimes.setup(cfg)
    arms = []
    for arm in cfg.arms:
        rtts = arm.params.get("rto_min_rtts")
        if rtts is not None:
            arm = replace(arm, params={**arm.params, "rto_min_ms": round(float(rtts) * float(arm.params["rtt_ms"]), 6)})
        if arm.params.get("timers_from_path") and "path_timers" not in arm.params:
            arm = with_path_timers(cfg, arm)
        arms.append(arm)
    return replace(cfg, arms=tuple(arms))


def run_regime_arm(run: SimulatedRun) -> ArmResult:
    """One repetition of a regime-map arm in its cell (the bottleneck's loss and delay come with
    the arm's topology; the tuned-RTO arm's minimum RTO with its params, see `setup_regimes`)."""
    result = run_rounds_arm(run)
    p = run.arm.params
    result.metrics.update(loss_pct=p["loss_pct"], bdp_packets=p["bdp_packets"], rtt_ms=p["rtt_ms"])
    return result


SIMULATION = Simulation(run_arm=run_regime_arm, setup=setup_regimes)
