"""One repetition of a gradlane or MLT arm (`transport: ltp` / `mlt`) of `ltp_incast`, simulated:
the arm's agent flags build the transport (`sim.lossy`), its records match the TCP arms'."""
from __future__ import annotations

from typing import Any, Callable

from controller.policy import load_policy
from experiments.api import ArmResult
from experiments.config import Arm, ExperimentConfig
from experiments.stats import percentile
from sim.errors import SimError
from sim.layer_split import split_parameters
from sim.lossy import run_lossy_rounds, transport_config
from sim.network import SimNetwork, SimOptions
from sim.rounds import model_layer_sizes

TRANSPORTS = ("ltp", "mlt")
BACKEND = "ns3"


def layer_sizes(cfg: ExperimentConfig) -> list[int]:
    """Per transport layer, the elements: `params.sim_gradient_params` split in ResNet-50's stage
    proportions (`sim.layer_split`) when set, else the config's bundled model (kind, hidden, filters)."""
    count = cfg.params.get("sim_gradient_params")   # checked by harness.setup
    if count is not None:
        try:
            return split_parameters(count)
        except ValueError as exc:
            raise SimError(f"params.sim_gradient_params: {exc}") from None
    return model_layer_sizes(cfg.model.hidden, kind=cfg.model.kind, filters=cfg.model.filters)


def pace_pps(cfg: ExperimentConfig, arm: Arm) -> float:
    """A `pace: true` arm's per-worker pacing rate, as the emulation's session sets it: 0.9 x the
    bottleneck's rate / workers (0: unpaced)."""
    if not arm.pace:
        return 0.0
    rate = cfg.topology_of(arm).bottleneck_pps
    if not rate:
        raise SimError(f"arms[{arm.name}]: pace needs topology.bottleneck_pps")
    return 0.9 * float(rate) / cfg.workers_of(arm)


def run(cfg: ExperimentConfig, arm: Arm, seed: int, topo: Any, jitter_s: float,
        options: SimOptions = SimOptions(), rounds_planned: int | None = None,
        on_round_start: Callable[[SimNetwork, int], None] | None = None) -> ArmResult:
    """One repetition of `arm` with the agents' flags of the config and the arm: the arm's
    rounds, or `rounds_planned`; `on_round_start(net, r)` as round r starts."""
    settings = cfg.topology_of(arm)
    workers = cfg.workers_of(arm)
    sizes = layer_sizes(cfg)
    config = transport_config(arm.transport, [*cfg.agent_args, *arm.agent_args], len(sizes),
                              cfg.chunk_elems, seed)
    policy = load_policy(settings.policy or "controller/policies/default.yaml")
    net = SimNetwork(topo, policy, options)
    try:
        hook = None if on_round_start is None else (lambda r: on_round_start(net, r))
        out = run_lossy_rounds(net, "ps", [f"w{i}" for i in range(1, workers + 1)], config, sizes,
                               rounds_planned or cfg.rounds_of(arm), limit_s=cfg.timeout_s, jitter_s=jitter_s,
                               seed=seed, on_round_start=hook, worker_pace_pps=pace_pps(cfg, arm))
        link_drops, burst_drops = net.link_drops(), net.burst_drops()
    finally:
        net.close()
    done = [r for r in out.rounds if r.end is not None]
    rounds = [{"round": i, "t_s": r.end, "round_time_s": r.end - r.start, "delivered": r.delivered,
               "delivered_tensor_min": r.delivered_tensor_min, "violations": r.violations,
               "closed_by": r.push_closed_by, "retransmissions": r.retransmissions,
               "data_packets": r.data_packets, "queue_depth": r.queue_depth,
               "deadline_ms": r.deadline_ms, "accuracy": None, "phase": r.phase, "push_bound": r.push_bound,
               "worker_breakdown": {k: round(v, 6) for k, v in r.worker_breakdown.items()},
               "repairs": r.repairs, "pull_sessions": r.pull_sessions}
              for i, r in enumerate(done)]
    times = [r["round_time_s"] for r in rounds]
    span = done[-1].end - done[0].start if done else 0.0
    push_packets = sum(-(-n // config.chunk_elems) for n in sizes) * workers
    metrics: dict[str, Any] = {
        "rounds": len(rounds), "rounds_per_s": len(rounds) / span if span > 0 else None,
        "round_time_p50_s": percentile(times, 50), "round_time_p99_s": percentile(times, 99),
        "gradient_bytes": 4 * sum(sizes), "simulated_s": span, "sim_wall_s": round(out.wall_s, 3),
        "sim_packets": out.packets,
        "sim_packets_per_wall_s": round(out.packets / out.wall_s) if out.wall_s > 0 else None,
        "violations": sum(r["violations"] for r in rounds),
        "retransmissions": sum(r["retransmissions"] for r in rounds),
        "push_packets_per_round": push_packets, "bound_scope": config.bounds.scope,
        "push_bounds": list(config.bounds.push), "pull_bounds": list(config.bounds.pull),
        "final_accuracy": None, "time_to_target_s": None, "accuracy_curve": [],
        "link_drops": sum(link_drops.values()), "burst_drops": sum(burst_drops.values()),
    }
    tail = {name: c["tail_drops"] for name, c in out.switches.items()}
    return ArmResult(rounds=rounds, metrics=metrics, ok=out.complete, error=out.error,
                     extra={"backend": BACKEND, "sim_switches": out.switches, "tail_drops": tail,
                            "agent_counters": out.counters, "transport_config": config.summary()})
