"""`python -m experiments NAME --backend ns3`: an experiment's arms simulated in ns-3.

The same config, records (rounds.jsonl, runs.jsonl) and summary as the emulation, every run
marked `"backend": "ns3"`, and the summary says it was simulated. Simulated so far: the arms
of `ltp_incast` (one parameter server and its workers, push/pull rounds: TCP in C++, gradlane and
MLT by the agents' own transport code, `sim.lossy`), the TCP-DDL arms of `pcn` (`sim.pcn`) and the arms
of `regimes` (the same rounds in each cell of the loss x BDP grid, random loss on the
bottleneck) and the gradlane and MLT arms of `dblp_microbursts` (loss bursts on the bottleneck
at the planned rounds, `sim.microbursts`); arms the simulator cannot run yet are listed in the config's
`params.skipped_arms`, with the reason.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from controller.policy import load_policy
from experiments import regimes
from experiments.api import ArmResult, Summary
from experiments.config import Arm, ExperimentConfig, TopologySettings
from experiments.records import Results, ResultsDir
from experiments.stats import percentile
from sim import dlcp, engine, isolate, lossy_arm, microbursts, path_timers, pcn, tcp
from sim.errors import SimError
from sim.network import SimNetwork, SimOptions
from sim.rounds import model_parameters, run_tcp_rounds
from topo.topologies import TopoParams, build_topology

SIMULATED_EXPERIMENTS = {"ltp_incast", "pcn", "regimes", "dblp_microbursts", "dlcp_ablation"}
# experiments whose emulation config the simulator does not run: --backend ns3 takes this one
NS3_ONLY_CONFIGS = {"dlcp_ablation": "experiments/configs/ns3/dlcp_ablation.yaml"}
BACKEND = "ns3"
REPO = Path(__file__).resolve().parents[1]
NS3_SEED = 1                 # ns-3's seed stays fixed; the repetition's seed is the run number
DEFAULT_CHUNK_ELEMS = 64    # the agents' --chunk-elems default
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


def gradient_bytes(cfg: ExperimentConfig) -> int:
    """Bytes of one worker's push (and pull): float32 parameters of `params.sim_gradient_params`
    when set (a model sized by its parameter count, e.g. ResNet-50's 25.6 M), else of the bundled
    model of `model` (kind, hidden, filters)."""
    count = cfg.params.get("sim_gradient_params")
    if count is None:
        return 4 * model_parameters(cfg.model.hidden, kind=cfg.model.kind, filters=cfg.model.filters)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise SimError(f"params.sim_gradient_params must be a positive number of parameters, not {count!r}")
    return 4 * count


def sim_options(cfg: ExperimentConfig) -> SimOptions:
    """What the config says about the simulated network beyond its topology, both for comparing
    with the emulation and off unless set: `params.sim_switch_pps`, a software switch's
    forwarding rate (`SimOptions.switch_pps`; unset: switches forward at line rate), and
    `params.sim_host_rx_us` / `sim_host_tx_us`, the agents' software time per received / sent
    datagram (`SimOptions.host_rx_us`; unset: hosts answer instantly)."""
    pps = cfg.params.get("sim_switch_pps")
    if pps is not None and (not isinstance(pps, (int, float)) or isinstance(pps, bool) or not pps > 0):
        raise SimError(f"params.sim_switch_pps must be a rate > 0 in packets/s, not {pps!r}")
    host = {}
    for key in ("sim_host_rx_us", "sim_host_tx_us"):
        value = cfg.params.get(key, 0.0)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
            raise SimError(f"params.{key} must be a time >= 0 in microseconds, not {value!r}")
        host[key.removeprefix("sim_")] = float(value)
    return SimOptions(switch_pps=None if pps is None else float(pps), **host)


def supported(cfg: ExperimentConfig, arm: Arm) -> str | None:
    """Why `arm` cannot be simulated yet, or None when it can."""
    if cfg.name not in SIMULATED_EXPERIMENTS:
        return f"experiment {cfg.name} is not simulated yet"
    if cfg.name == "pcn":
        ddl = arm.params.get("transport", cfg.params.get("transport", pcn.PcnSettings.transport))
        if ddl not in pcn.SIMULATED_TRANSPORTS:
            return f"DDL transport {ddl} is not simulated yet (only ns-3's TCP)"
        return None
    if arm.transport in lossy_arm.TRANSPORTS:
        return None
    if cfg.name == "dblp_microbursts":
        return f"transport {arm.transport} is not simulated under bursts yet (only ltp and mlt)"
    if arm.transport != "tcp":
        return f"transport {arm.transport} is not simulated yet"
    if (arm.tcp_cc or "cubic") not in tcp.CONGESTION_CONTROLS:
        return f"tcp_{arm.tcp_cc} is not one of ns-3's congestion controls"
    return None


def setup(cfg: ExperimentConfig) -> ExperimentConfig:
    """Keep the arms the simulator runs (regimes: after expanding its grid); SimError if none is left."""
    if cfg.name == "regimes":
        cfg = setup_regimes(cfg)
    keep, skipped = [], []
    for arm in cfg.arms:
        why = supported(cfg, arm)
        if why:
            skipped.append(f"{arm.name} ({why})")
        else:
            keep.append(arm)
    if not keep:
        raise SimError(f"{cfg.name}: no arm can be simulated yet: " + "; ".join(skipped))
    start_jitter_s(cfg)      # bad values fail here, before any run
    gradient_bytes(cfg)
    sim_options(cfg)
    if cfg.name == "dlcp_ablation":
        dlcp.check(cfg)
    if cfg.name == "dblp_microbursts":
        microbursts.burst_direction(cfg)
    keep = [with_path_timers(cfg, arm) if arm.params.get("timers_from_path") and "path_timers" not in arm.params
            else arm for arm in keep]
    for arm in keep:
        if arm.transport == "tcp":
            tcp_settings(arm)
        elif arm.transport in lossy_arm.TRANSPORTS:
            lossy_arm.layer_sizes(cfg)
    params = {**cfg.params, "backend": BACKEND, "skipped_arms": skipped, "config_file": _repo_path(cfg.source)}
    return replace(cfg, arms=tuple(keep), params=params)


def _repo_path(source: str) -> str:
    """`source` relative to the repository when it lies inside it (for the summary's command)."""
    path = Path(source).resolve()
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return source


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
    # dlcp_ablation builds its own fabric (sim.dlcp)
    topo = None if cfg.name == "dlcp_ablation" else topology(cfg.topology_of(arm), cfg.workers_of(arm))
    rng = seed_ns3(repetition_seed(cfg, rep))
    if cfg.name == "pcn":
        result = pcn.run_arm(cfg, arm, rep, topo, out_dir, options)
    elif cfg.name == "regimes":
        result = run_regime_arm(cfg, arm, rep, topo, options)
        rng["start_jitter_s"] = start_jitter_s(cfg)
    elif cfg.name == "dblp_microbursts":
        seed = repetition_seed(cfg, rep)
        result = microbursts.run_arm(cfg, arm, seed, topo, start_jitter_s(cfg), out_dir, options,
                                     lambda: seed_ns3(seed))
        rng["start_jitter_s"] = start_jitter_s(cfg)
    elif cfg.name == "dlcp_ablation":
        result = dlcp.run_arm(cfg, arm, repetition_seed(cfg, rep), start_jitter_s(cfg), options)
        rng["start_jitter_s"] = start_jitter_s(cfg)
    elif arm.transport in lossy_arm.TRANSPORTS:
        result = lossy_arm.run(cfg, arm, repetition_seed(cfg, rep), topo, start_jitter_s(cfg), options)
        rng["start_jitter_s"] = start_jitter_s(cfg)
    else:
        result = run_tcp_arm(cfg, arm, rep, topo, options)
        rng["start_jitter_s"] = start_jitter_s(cfg)
    result.extra["sim_rng"] = rng
    return result


def tcp_settings(arm: Arm) -> tcp.TcpSettings:
    """ns-3's TCP for `arm`: its congestion control and ECN, Linux's defaults otherwise. An arm
    with `params.rto_min_ms` gets the incast fix of Vasudevan et al. (SIGCOMM '09): that minimum
    RTO, microsecond timers (ns-3's 1 ms clock granularity would floor the RTO) and no delayed
    ACKs. ns-3's receiver has no quick-ACK mode: with delayed ACKs, a sender whose RTO is below
    the 40 ms ACK delay times out spuriously, backs off and sends one segment per delayed ACK
    (measured: 1 MB incast rounds of 1.3-1.8 s at RTO_min 0.09-1 ms vs 19 ms without; docs/ns3.md)."""
    settings = tcp.TcpSettings(cc=arm.tcp_cc or "cubic", ecn=arm.tcp_ecn == "on")
    rto_min = arm.params.get("rto_min_ms")
    if rto_min is None:
        return settings
    if not isinstance(rto_min, (int, float)) or isinstance(rto_min, bool) or not rto_min > 0:
        raise SimError(f"arms[{arm.name}]: params.rto_min_ms must be a time > 0 in ms, not {rto_min!r}")
    return replace(settings, min_rto_ms=float(rto_min), clock_granularity_us=1.0, delayed_ack_count=1)


def run_tcp_arm(cfg: ExperimentConfig, arm: Arm, rep: int, topo: Any,
                options: SimOptions = SimOptions()) -> ArmResult:
    """One repetition of a TCP arm: rounds of push (each worker's gradient to the PS) and pull."""
    workers = cfg.workers_of(arm)
    policy = load_policy(cfg.topology_of(arm).policy or "controller/policies/default.yaml")
    size = gradient_bytes(cfg)
    settings = tcp_settings(arm)
    tcp.configure(settings)
    net = SimNetwork(topo, policy, options)
    try:
        out = run_tcp_rounds(net, "ps", [f"w{i}" for i in range(1, workers + 1)], size, size,
                             cfg.rounds_of(arm), limit_s=cfg.timeout_s, jitter_s=start_jitter_s(cfg))
        base_rtt = net.base_rtt_s("w1", "ps")
    finally:
        net.close()
    times = [e - s for s, e in zip(out.starts, out.ends)]
    # the push stage (first push start to the PS having every push) and the pull stage after it
    push = [p - s for s, p in zip(out.starts, out.push_ends)]
    pull = [e - p for p, e in zip(out.push_ends, out.ends)]
    rounds = [{"round": i, "t_s": end, "round_time_s": t, "push_stage_s": ps, "pull_stage_s": pl, "delivered": 1.0,
               "violations": 0, "queue_depth": None, "accuracy": None}
              for i, (t, end, ps, pl) in enumerate(zip(times, out.ends, push, pull))]
    span = out.ends[-1] - out.starts[0] if out.ends else 0.0
    metrics: dict[str, Any] = {
        "rounds": len(times), "rounds_per_s": len(times) / span if span > 0 else None,
        "round_time_p50_s": percentile(times, 50), "round_time_p99_s": percentile(times, 99),
        "push_stage_p50_s": percentile(push, 50), "pull_stage_p50_s": percentile(pull, 50),
        "gradient_bytes": size, "rto_min_ms": settings.min_rto_ms, "simulated_s": span,
        "base_rtt_ms": base_rtt * 1000.0,
        "link_drops": sum(out.link_drops.values()), "sim_wall_s": round(out.wall_s, 3),
        "violations": 0, "final_accuracy": None, "time_to_target_s": None, "accuracy_curve": [],
    }
    error = None if out.complete else (f"{len(times)} of {out.planned} rounds within "
                                       f"{cfg.timeout_s:g} s of simulated time")
    tail = {name: c["tail_drops"] for name, c in out.switches.items()}
    return ArmResult(rounds=rounds, metrics=metrics, ok=out.complete, error=error,
                     extra={"backend": BACKEND, "sim_switches": out.switches, "tail_drops": tail,
                            "sim_link_drops": out.link_drops})


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


def with_path_timers(cfg: ExperimentConfig, arm: Arm) -> Arm:
    """A lossy arm with its timers derived from its path (`sim.path_timers`): its regime cell's
    or its own `params.rtt_ms` (the path's round trip), the flags appended to its agent_args and
    recorded in params.path_timers."""
    if arm.transport not in lossy_arm.TRANSPORTS:
        raise SimError(f"arms[{arm.name}]: params.timers_from_path needs transport ltp or mlt")
    rtt = arm.params.get("rtt_ms")
    if not isinstance(rtt, (int, float)) or isinstance(rtt, bool) or not rtt > 0:
        raise SimError(f"arms[{arm.name}]: params.timers_from_path needs params.rtt_ms, the path's round trip in ms")
    gradient_bytes(cfg)
    chunk = cfg.chunk_elems or DEFAULT_CHUNK_ELEMS
    packets = sum(-(-n // chunk) for n in lossy_arm.layer_sizes(cfg)) * cfg.workers_of(arm)
    settings = cfg.topology_of(arm)
    flags = path_timers.timer_flags(float(arm.params["rtt_ms"]) / 1000.0, bottleneck_pps(cfg, settings),
                                    int(settings.queue_depth), packets)
    return replace(arm, agent_args=(*arm.agent_args, *flags), params={**arm.params, "path_timers": flags})


def bottleneck_pps(cfg: ExperimentConfig, settings: TopologySettings) -> float:
    """The bottleneck's rate in packets/s: `topology.bottleneck_pps`, else (every link at one
    rate) the links' rate, `bw_mbps` or the simulator's, in `SimOptions.packet_bytes` packets."""
    if settings.bottleneck_pps:
        return float(settings.bottleneck_pps)
    options = sim_options(cfg)
    bps = settings.bw_mbps * 1e6 if settings.bw_mbps else options.rate_gbps * 1e9
    return bps / (8 * options.packet_bytes)


def run_regime_arm(cfg: ExperimentConfig, arm: Arm, rep: int, topo: Any,
                   options: SimOptions = SimOptions()) -> ArmResult:
    """One repetition of a regime-map arm in its cell (the bottleneck's loss and delay come with
    the arm's topology; the tuned-RTO arm's minimum RTO with its params, see `setup_regimes`)."""
    if arm.transport in lossy_arm.TRANSPORTS:
        result = lossy_arm.run(cfg, arm, repetition_seed(cfg, rep), topo, start_jitter_s(cfg), options)
    else:
        result = run_tcp_arm(cfg, arm, rep, topo, options)
    p = arm.params
    result.metrics.update(loss_pct=p["loss_pct"], bdp_packets=p["bdp_packets"], rtt_ms=p["rtt_ms"])
    return result


def run(cfg: ExperimentConfig, rd: ResultsDir, out: Callable[[str], None] = lambda s: print(s, flush=True)) -> None:
    """Every planned (rep, arm) of `cfg` not yet in `rd`, simulated, written as the emulation's runner does."""
    done = rd.completed()
    todo = [(rep, arm) for rep in range(cfg.repetitions) for arm in cfg.arms
            if rep < cfg.repetitions_of(arm) and (arm.name, rep) not in done]
    out(f"[{cfg.name}] {len(todo)} simulated run(s) (ns-3); results in {rd.path}")
    rd.set_state("running", todo=len(todo), total=len(todo))
    for index, (rep, arm) in enumerate(todo):
        t0 = time.monotonic()
        result = run_isolated(cfg, arm, rep, rd.path)
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


def run_isolated(cfg: ExperimentConfig, arm: Arm, rep: int, out_dir: Path) -> ArmResult:
    """`run_arm` in a forked child (`sim.isolate`): when ns-3 aborts the simulation (an
    NS_ASSERT in its TCP, say), the run fails with ns-3's reason and the experiment goes on."""
    outcome = isolate.call(run_arm, cfg, arm, rep, out_dir, sim_options(cfg))
    if isinstance(outcome, ArmResult):
        return outcome
    return ArmResult(rounds=[], metrics={"rounds": 0}, ok=False, error=outcome.message(),
                     extra={"backend": BACKEND, "sim_switches": {}, "tail_drops": {},
                            "sim_rng": {"ns3_seed": NS3_SEED, "ns3_run": repetition_seed(cfg, rep)}})


class SimulatedModule:
    """An experiment module whose summary says that its figures were simulated in ns-3. Where
    the simulated figures differ from the emulation's, the module gives `SIM_<NAME>` or
    `<name>_simulated` (SIM_FIGURES, summarize_simulated, plot_simulated, ...): they stand for
    NAME here."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        for alias in (f"SIM_{name}", f"{name}_simulated"):
            if hasattr(self._module, alias):
                return getattr(self._module, alias)
        return getattr(self._module, name)

    def summarize(self, results: Results, config: ExperimentConfig) -> Summary:
        summary = self.__getattr__("summarize")(results, config)
        summary.notes.insert(0, "SIMULATED with ns-3 (--backend ns3): no training ran (gradients are sized, "
                                "not computed; accuracy figures are n/a); the simulated switches run the "
                                "controller's entries. docs/ns3.md says what is simulated and what is not.")
        return summary
