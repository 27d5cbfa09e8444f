"""`python -m experiments NAME --backend ns3`: an experiment's arms simulated in ns-3.

The same config, records (rounds.jsonl, runs.jsonl) and summary as the emulation, every run
marked `"backend": "ns3"`, and the summary says it was simulated. Simulated so far: the TCP arms
of `ltp_incast` (one parameter server and its workers, push/pull rounds) and the TCP-DDL arms of
`pcn` (`sim.pcn`); arms the simulator cannot run yet are listed in the config's
`params.skipped_arms`, with the reason.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from controller.policy import load_policy
from experiments.api import ArmResult, Summary
from experiments.config import Arm, ExperimentConfig, TopologySettings
from experiments.records import Results, ResultsDir
from experiments.stats import percentile
from sim import engine, pcn, tcp
from sim.errors import SimError
from sim.network import SimNetwork, SimOptions
from sim.rounds import model_parameters, run_tcp_rounds
from topo.topologies import TopoParams, build_topology

SIMULATED_EXPERIMENTS = {"ltp_incast", "pcn"}
BACKEND = "ns3"
NS3_SEED = 1                 # ns-3's seed stays fixed; the repetition's seed is the run number
START_JITTER_MS = 1.0        # default spread of the workers' push starts per round (params.sim_start_jitter_ms)


def repetition_seed(cfg: ExperimentConfig, rep: int) -> int:
    """The seed of repetition `rep`, as the emulation's runner derives it (config seed + rep)."""
    return cfg.seed + rep


def seed_ns3(seed: int) -> dict[str, Any]:
    """Set ns-3's random streams for a repetition with `seed` (before anything random is
    created); returns what a run record keeps to reproduce it."""
    if seed < 0:
        raise SimError(f"seed {seed} is negative")
    ns = engine.ns3()
    ns.RngSeedManager.SetSeed(NS3_SEED)
    ns.RngSeedManager.SetRun(seed)
    # streams are numbered in creation order, across simulations of one process: start again
    # so that a repetition draws the same numbers whether it runs first or tenth
    ns.RngSeedManager.ResetNextStreamIndex()
    return {"ns3_seed": NS3_SEED, "ns3_run": seed}


def start_jitter_s(cfg: ExperimentConfig) -> float:
    """The spread of the workers' push starts in seconds (params.sim_start_jitter_ms, else 1 ms)."""
    value = cfg.params.get("sim_start_jitter_ms", START_JITTER_MS)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise SimError(f"params.sim_start_jitter_ms must be a non-negative number of ms, not {value!r}")
    return float(value) / 1000.0


def supported(cfg: ExperimentConfig, arm: Arm) -> str | None:
    """Why `arm` cannot be simulated yet, or None when it can."""
    if cfg.name not in SIMULATED_EXPERIMENTS:
        return f"experiment {cfg.name} is not simulated yet"
    if cfg.name == "pcn":
        ddl = arm.params.get("transport", cfg.params.get("transport", pcn.PcnSettings.transport))
        if ddl not in pcn.SIMULATED_TRANSPORTS:
            return f"DDL transport {ddl} is not simulated yet (only ns-3's TCP)"
        return None
    if arm.transport != "tcp":
        return f"transport {arm.transport} is not simulated yet (only ns-3's TCP)"
    if (arm.tcp_cc or "cubic") not in tcp.CONGESTION_CONTROLS:
        return f"tcp_{arm.tcp_cc} is not one of ns-3's congestion controls"
    return None


def setup(cfg: ExperimentConfig) -> ExperimentConfig:
    """Keep the arms the simulator runs; SimError if none is left."""
    keep, skipped = [], []
    for arm in cfg.arms:
        why = supported(cfg, arm)
        if why:
            skipped.append(f"{arm.name} ({why})")
        else:
            keep.append(arm)
    if not keep:
        raise SimError(f"{cfg.name}: no arm can be simulated yet: " + "; ".join(skipped))
    start_jitter_s(cfg)      # a bad value fails here, before any run
    params = {**cfg.params, "backend": BACKEND, "skipped_arms": skipped}
    return replace(cfg, arms=tuple(keep), params=params)


def topology(settings: TopologySettings, workers: int) -> Any:
    """The topology description of `settings` with `workers` workers."""
    return build_topology(settings.name, TopoParams(
        workers=workers, background=settings.background, bottleneck_pps=settings.bottleneck_pps,
        queue_depth=settings.queue_depth, delay_ms=settings.delay_ms, loss_pct=settings.loss_pct,
        bw_mbps=settings.bw_mbps))


def run_arm(cfg: ExperimentConfig, arm: Arm, rep: int, out_dir: Path,
            options: SimOptions = SimOptions()) -> ArmResult:
    """One repetition of one arm, simulated with ns-3's random streams at run number
    `repetition_seed(cfg, rep)`: the same seed reproduces the repetition exactly."""
    topo = topology(cfg.topology_of(arm), cfg.workers_of(arm))
    rng = seed_ns3(repetition_seed(cfg, rep))
    if cfg.name == "pcn":
        result = pcn.run_arm(cfg, arm, rep, topo, out_dir, options)
    else:
        result = run_tcp_arm(cfg, arm, rep, topo, options)
        rng["start_jitter_s"] = start_jitter_s(cfg)
    result.extra["sim_rng"] = rng
    return result


def run_tcp_arm(cfg: ExperimentConfig, arm: Arm, rep: int, topo: Any,
                options: SimOptions = SimOptions()) -> ArmResult:
    """One repetition of a TCP arm: rounds of push (each worker's gradient to the PS) and pull."""
    settings = cfg.topology_of(arm)
    workers = cfg.workers_of(arm)
    policy = load_policy(settings.policy or "controller/policies/default.yaml")
    gradient_bytes = 4 * model_parameters(cfg.model.hidden)
    tcp.configure(tcp.TcpSettings(cc=arm.tcp_cc or "cubic", ecn=arm.tcp_ecn == "on"))
    net = SimNetwork(topo, policy, options)
    try:
        out = run_tcp_rounds(net, "ps", [f"w{i}" for i in range(1, workers + 1)], gradient_bytes,
                             gradient_bytes, cfg.rounds_of(arm), limit_s=cfg.timeout_s,
                             jitter_s=start_jitter_s(cfg))
    finally:
        net.close()
    times = [e - s for s, e in zip(out.starts, out.ends)]
    rounds = [{"round": i, "t_s": end, "round_time_s": t, "delivered": 1.0, "violations": 0,
               "queue_depth": None, "accuracy": None} for i, (t, end) in enumerate(zip(times, out.ends))]
    span = out.ends[-1] - out.starts[0] if out.ends else 0.0
    metrics: dict[str, Any] = {
        "rounds": len(times), "rounds_per_s": len(times) / span if span > 0 else None,
        "round_time_p50_s": percentile(times, 50), "round_time_p99_s": percentile(times, 99),
        "gradient_bytes": gradient_bytes, "simulated_s": span, "sim_wall_s": round(out.wall_s, 3),
        "violations": 0, "final_accuracy": None, "time_to_target_s": None, "accuracy_curve": [],
    }
    error = None if out.complete else (f"{len(times)} of {out.planned} rounds within "
                                       f"{cfg.timeout_s:g} s of simulated time")
    tail = {name: c["tail_drops"] for name, c in out.switches.items()}
    return ArmResult(rounds=rounds, metrics=metrics, ok=out.complete, error=error,
                     extra={"backend": BACKEND, "sim_switches": out.switches, "tail_drops": tail})


def run(cfg: ExperimentConfig, rd: ResultsDir, out: Callable[[str], None] = lambda s: print(s, flush=True)) -> None:
    """Every planned (rep, arm) of `cfg` not yet in `rd`, simulated, written as the emulation's runner does."""
    done = rd.completed()
    todo = [(rep, arm) for rep in range(cfg.repetitions) for arm in cfg.arms
            if rep < cfg.repetitions_of(arm) and (arm.name, rep) not in done]
    out(f"[{cfg.name}] {len(todo)} simulated run(s) (ns-3); results in {rd.path}")
    rd.set_state("running", todo=len(todo), total=len(todo))
    for index, (rep, arm) in enumerate(todo):
        t0 = time.monotonic()
        result = run_arm(cfg, arm, rep, rd.path)
        elapsed = time.monotonic() - t0
        tail = result.extra["tail_drops"]
        run_record: dict[str, Any] = {
            "arm": arm.name, "rep": rep, "seed": repetition_seed(cfg, rep), "ok": result.ok, "error": result.error,
            "elapsed_s": round(elapsed, 3), "transport": arm.transport, "tcp_cc": arm.tcp_cc,
            "tcp_ecn": arm.tcp_ecn, "pace": arm.pace, "workers": cfg.workers_of(arm),
            "rounds_planned": cfg.rounds_of(arm), "metrics": result.metrics,
            "switch": {"queue_tail_drops": tail, "switch_dropped": False},
            "conditions": {"switch_dropped": False, "simulated": True},
            **result.extra, "backend": BACKEND,
        }
        rd.append_run(run_record, [{**r, "arm": arm.name, "rep": rep} for r in result.rounds])
        m = result.metrics
        brief = ", ".join(f"{k} {m[k]:.3g}" for k in ("rounds_per_s", "round_time_p99_s", "start_queue_pkts",
                                                      "burst_completion_s") if isinstance(m.get(k), (int, float)))
        out(f"[{cfg.name}] run {index + 1}/{len(todo)} arm {arm.name} rep {rep + 1}: "
            + ("done" if result.ok else f"FAILED: {result.error}")
            + f" ({brief}; simulated) in {elapsed:.1f} s wall")
    rd.set_state("done", remaining=0)


class SimulatedModule:
    """An experiment module whose summary says that its figures were simulated in ns-3."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def summarize(self, results: Results, config: ExperimentConfig) -> Summary:
        summary = self._module.summarize(results, config)
        summary.notes.insert(0, "SIMULATED with ns-3 (--backend ns3): no training ran (gradients are sized, "
                                "not computed; accuracy figures are n/a); the simulated switches run the "
                                "controller's entries. docs/ns3.md says what is simulated and what is not.")
        return summary
