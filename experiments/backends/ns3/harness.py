"""`python -m experiments NAME --backend ns3`: an experiment's arms simulated in ns-3.

The same config, records (rounds.jsonl, runs.jsonl) and summary as the emulation, every run
marked `"backend": "ns3"`, and the summary says it was simulated. An experiment is simulated
when its module declares `simulated()`, the `Simulation` of its module in this package
(experiments/backends/ns3/): `ltp_incast` (one parameter server and its workers, push/pull
rounds: TCP in C++, gradlane and MLT by the agents' own transport code, `sim.lossy`), the TCP-DDL
arms of `pcn`, the arms of `regimes` (the same rounds in each cell of the loss x BDP grid, random
loss on the bottleneck), the gradlane and MLT arms of `dblp_microbursts` (loss bursts on the
bottleneck at the planned rounds) and `dlcp_ablation` (its own loaded leaf-spine); arms the
simulator cannot run yet are listed in the config's `params.skipped_arms`, with the reason.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import experiments
from controller.errors import TopologyError
from controller.network import ECN_DEPTHS, NetworkOptions
from controller.policy import load_policy
from controller.topologies import TopoParams, build_topology
from controller.topology import Topology
from experiments.api import ArmResult, Figure, Summary
from experiments.backends.ns3 import lossy_arm
from experiments.backends.ns3.simulation import SimulatedRun, Simulation
from experiments.config import Arm, ExperimentConfig, TopologySettings
from experiments.records import Results, ResultsDir
from experiments.stats import percentile
from hosts.transport.chunk_size import MTU_CHUNK_ELEMS
from hosts.transport.sender import SCHEDULES
from sim import engine, isolate, path_timers, tcp
from sim.errors import SimError
from sim.network import SimNetwork, SimOptions
from sim.rounds import model_parameters, run_tcp_rounds

BACKEND = "ns3"
REPO = Path(__file__).resolve().parents[3]
NS3_SEED = 1                 # ns-3's seed stays fixed; the repetition's seed is the run number
DEFAULT_CHUNK_ELEMS = MTU_CHUNK_ELEMS    # the agents' default chunk (hosts/transport/chunk_size.py)
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
    datagram (`SimOptions.host_rx_us`; unset: hosts answer instantly); `params.sim_ecn_depth`,
    what the switches compare with their ECN threshold (the controller's
    `NetworkOptions.ecn_depth`: "queue", the default, or "port")."""
    pps = cfg.params.get("sim_switch_pps")
    if pps is not None and (not isinstance(pps, (int, float)) or isinstance(pps, bool) or not pps > 0):
        raise SimError(f"params.sim_switch_pps must be a rate > 0 in packets/s, not {pps!r}")
    host = {}
    for key in ("sim_host_rx_us", "sim_host_tx_us"):
        value = cfg.params.get(key, 0.0)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
            raise SimError(f"params.{key} must be a time >= 0 in microseconds, not {value!r}")
        host[key.removeprefix("sim_")] = float(value)
    ecn_depth = cfg.params.get("sim_ecn_depth", "queue")
    if ecn_depth not in ECN_DEPTHS:
        raise SimError(f"params.sim_ecn_depth must be one of {', '.join(ECN_DEPTHS)}, not {ecn_depth!r}")
    return SimOptions(switch_pps=None if pps is None else float(pps),
                      network=NetworkOptions(ecn_depth=ecn_depth), **host)


def simulation(name: str) -> Simulation | None:
    """How experiment `name` runs in ns-3 (its module's `simulated()`), or None when it is not simulated."""
    declared = getattr(experiments.get(name), "simulated", None)
    return declared() if declared else None


def simulated_names() -> list[str]:
    """The experiments that run in ns-3, in the registry's order."""
    return [name for name in experiments.names() if simulation(name) is not None]


def rounds_supported(cfg: ExperimentConfig, arm: Arm) -> str | None:
    """Why `arm` cannot run as simulated push/pull rounds (None: it can): ltp and mlt by the
    agents' transport code (`sim.lossy`), TCP by ns-3's congestion controls."""
    if arm.transport in lossy_arm.TRANSPORTS:
        return None
    if arm.transport != "tcp":
        return f"transport {arm.transport} is not simulated yet"
    if (arm.tcp_cc or "cubic") not in tcp.CONGESTION_CONTROLS:
        return f"tcp_{arm.tcp_cc} is not one of ns-3's congestion controls"
    return None


def supported(cfg: ExperimentConfig, arm: Arm) -> str | None:
    """Why `arm` cannot be simulated yet, or None when it can."""
    sim = simulation(cfg.name)
    if sim is None:
        return f"experiment {cfg.name} is not simulated yet"
    return (sim.supported or rounds_supported)(cfg, arm)


def setup(cfg: ExperimentConfig) -> ExperimentConfig:
    """Keep the arms the simulator runs (after the simulation's own setup, e.g. the regime
    map's grid); SimError if none is left."""
    sim = simulation(cfg.name)
    if sim is not None and sim.setup is not None:
        cfg = sim.setup(cfg)
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
    if sim is not None and sim.check is not None:
        sim.check(cfg)
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


def topology(settings: TopologySettings, workers: int) -> Topology:
    """The topology description of `settings` with `workers` workers (the emulation's builder)."""
    try:
        return build_topology(settings.name, TopoParams(
            workers=workers, background=settings.background, bottleneck_pps=settings.bottleneck_pps,
            queue_depth=settings.queue_depth, delay_ms=settings.delay_ms, loss_pct=settings.loss_pct,
            bw_mbps=settings.bw_mbps))
    except TopologyError as exc:
        raise SimError(str(exc)) from None


def run_arm(cfg: ExperimentConfig, arm: Arm, rep: int, out_dir: Path,
            options: SimOptions = SimOptions()) -> ArmResult:
    """One repetition of one arm, simulated with ns-3's random streams at run number
    `repetition_seed(cfg, rep)`: the same seed reproduces the repetition exactly."""
    sim = simulation(cfg.name)
    if sim is None:
        raise SimError(f"experiment {cfg.name} is not simulated yet")
    topo = None if sim.own_fabric else topology(cfg.topology_of(arm), cfg.workers_of(arm))
    seed = repetition_seed(cfg, rep)
    rng = seed_ns3(seed)
    result = sim.run_arm(SimulatedRun(config=cfg, arm=arm, rep=rep, seed=seed, topo=topo,
                                      jitter_s=start_jitter_s(cfg), out_dir=out_dir, options=options,
                                      reseed=lambda: seed_ns3(seed)))
    if sim.jitter:
        rng["start_jitter_s"] = start_jitter_s(cfg)
    result.extra["sim_rng"] = rng
    return result


def run_rounds_arm(run: SimulatedRun) -> ArmResult:
    """One repetition of a push/pull arm: ltp and mlt by `lossy_arm`, TCP by `run_tcp_arm`."""
    if run.arm.transport in lossy_arm.TRANSPORTS:
        return lossy_arm.run(run.config, run.arm, run.seed, run.topo, run.jitter_s, run.options)
    return run_tcp_arm(run.config, run.arm, run.rep, run.topo, run.options)


def tcp_settings(arm: Arm) -> tcp.TcpSettings:
    """ns-3's TCP for `arm`: its congestion control and ECN, Linux's defaults otherwise. An arm
    with `params.rto_min_ms` gets the incast fix of Vasudevan et al. (SIGCOMM '09): that minimum
    RTO, microsecond timers (ns-3's 1 ms clock granularity would floor the RTO) and no delayed
    ACKs. ns-3's receiver has no quick-ACK mode: with delayed ACKs, a sender whose RTO is below
    the 40 ms ACK delay times out spuriously, backs off and sends one segment per delayed ACK
    (measured: 1 MB incast rounds of 1.3-1.8 s at RTO_min 0.09-1 ms vs 19 ms without;
    docs/results/ns3-history.md)."""
    settings = tcp.TcpSettings(cc=arm.tcp_cc or "cubic", ecn=arm.tcp_ecn == "on")
    rto_min = arm.params.get("rto_min_ms")
    if rto_min is None:
        return settings
    if not isinstance(rto_min, (int, float)) or isinstance(rto_min, bool) or not rto_min > 0:
        raise SimError(f"arms[{arm.name}]: params.rto_min_ms must be a time > 0 in ms, not {rto_min!r}")
    return replace(settings, min_rto_ms=float(rto_min), clock_granularity_us=1.0, delayed_ack_count=1)


def tcp_pull_serial(arm: Arm) -> bool:
    """Whether a TCP arm runs its rounds as the agents' --pull-schedule serial does
    (`params.pull_schedule`: together, the default, or serial; sim.rounds.run_tcp_rounds)."""
    schedule = arm.params.get("pull_schedule", SCHEDULES[0])
    if schedule not in SCHEDULES:
        raise SimError(f"arms[{arm.name}]: params.pull_schedule must be one of {', '.join(SCHEDULES)}, "
                       f"not {schedule!r}")
    return schedule == "serial"


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
                             cfg.rounds_of(arm), limit_s=cfg.timeout_s, jitter_s=start_jitter_s(cfg),
                             serial=tcp_pull_serial(arm))
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
        "pull_schedule": arm.params.get("pull_schedule", SCHEDULES[0]),
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


def run(cfg: ExperimentConfig, rd: ResultsDir, out: Callable[[str], None] = lambda s: print(s, flush=True)) -> None:
    """Every planned (rep, arm) of `cfg` not yet in `rd`, simulated, written as the emulation's runner does."""
    done = rd.completed()
    todo = [(rep, arm) for rep in range(cfg.repetitions) for arm in cfg.arms
            if rep < cfg.repetitions_of(arm) and (arm.name, rep) not in done]
    out(f"[{cfg.name}] {len(todo)} simulated run(s) (ns-3); results in {rd.path}")
    rd.set_state("running", todo=len(todo), total=len(todo))
    with isolate.Runner() as runner:
        for index, (rep, arm) in enumerate(todo):
            _run_one(cfg, rd, runner, index, len(todo), rep, arm, out)
    rd.set_state("done", remaining=0)


def _run_one(cfg: ExperimentConfig, rd: ResultsDir, runner: isolate.Runner, index: int, total: int,
             rep: int, arm: Arm, out: Callable[[str], None]) -> None:
    """One planned run, simulated by `runner`, written to `rd`, and its line."""
    t0 = time.monotonic()
    result = run_isolated(cfg, arm, rep, rd.path, runner)
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
    out(f"[{cfg.name}] run {index + 1}/{total} arm {arm.name} rep {rep + 1}: "
        + ("done" if result.ok else f"FAILED: {result.error}")
        + f" ({brief}; simulated) in {elapsed:.1f} s wall")


def run_isolated(cfg: ExperimentConfig, arm: Arm, rep: int, out_dir: Path,
                 runner: isolate.Runner | None = None) -> ArmResult:
    """`run_arm` in a forked child (`sim.isolate`; `runner`'s, kept between an experiment's runs,
    else one of its own): when ns-3 aborts the simulation (an NS_ASSERT in its TCP, say), the run
    fails with ns-3's reason and the experiment goes on."""
    outcome = (runner.call if runner is not None else isolate.call)(run_arm, cfg, arm, rep, out_dir, sim_options(cfg))
    if isinstance(outcome, ArmResult):
        return outcome
    return ArmResult(rounds=[], metrics={"rounds": 0}, ok=False, error=outcome.message(),
                     extra={"backend": BACKEND, "sim_switches": {}, "tail_drops": {},
                            "sim_rng": {"ns3_seed": NS3_SEED, "ns3_run": repetition_seed(cfg, rep)}})


class SimulatedReport:
    """What `experiments.report` reads of a simulated experiment: the experiment module's
    TITLE, PAPER, FIGURES, scale_text, ROUND_BREAKDOWN, summarize and plot, each replaced by the
    simulation's report module where that one has it (`Simulation.report`); the summary's first
    note says that the figures were simulated."""

    def __init__(self, module: ModuleType, sim: Simulation) -> None:
        own = sim.report

        def pick(name: str, default: Any) -> Any:
            if own is not None and hasattr(own, name):
                return getattr(own, name)
            return getattr(module, name, default)

        self.TITLE: str = pick("TITLE", module.__name__.rsplit(".", 1)[-1])
        self.PAPER: str = pick("PAPER", "")
        self.FIGURES: list[Figure] = pick("FIGURES", [])
        self.scale_text: Callable[..., str] | None = pick("scale_text", None)
        self.ROUND_BREAKDOWN: bool = pick("ROUND_BREAKDOWN", True)
        self._summarize = pick("summarize", None)
        self.plot = pick("plot", None)

    def summarize(self, results: Results, config: ExperimentConfig) -> Summary:
        summary = self._summarize(results, config)
        summary.notes.insert(0, "SIMULATED with ns-3 (--backend ns3): no training ran (gradients are sized, "
                                "not computed; accuracy figures are n/a); the simulated switches run the "
                                "controller's entries. docs/ns3.md says what is simulated and what is not.")
        return summary
