"""DLCP's loaded leaf-spine, simulated (`dlcp_ablation --backend ns3`, the config's
`params.sim_fabric` and `params.sim_background`): several training jobs at once, each a PS and
its workers on other leaves (every gradient crosses the spines), TCP background flows among the
other hosts (`sim.background`: Poisson arrivals, web-search sizes), every job with the arm's
transport and, for gradlane's arms, the arm's switch policy (priority, selective drop, spraying).

No training: gradients are sized (`params.sim_gradient_params`), so time to accuracy is n/a
here; the emulation's run gives it. Per run the figures are the jobs' round times, each worker's
push time (DLCP's gradient flow completion time), the background's FCTs, the switches' drops,
and the evidence that each mechanism was on or off (queues, per-spine push packets, selective
drop fractions). The background is the same in every arm of a repetition (its own numbered
streams): arrivals within `window_ms`, FCTs counted for flows complete by `window_ms + drain_ms`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from controller.policy import Policy, parse_policy
from experiments import dlcp_simulated
from experiments.api import ArmResult
from experiments.backends.ns3 import lossy_arm
from experiments.backends.ns3.simulation import SimulatedRun, Simulation
from experiments.config import Arm, ExperimentConfig
from experiments.dlcp_ablation import features_of
from experiments.stats import percentile
from experiments.training import job_policy
from sim import background, path_timers, tcp
from sim.errors import SimError
from sim.lossy import LossyJob, run_lossy_jobs, transport_config
from sim.network import SimNetwork, SimOptions
from sim.rounds import TCP_PORT
from sim.topologies import leafspine

BACKEND = "ns3"
PUSH_STAGE = 0          # SwitchState's slot_seen / slot_dropped: index slot * 2 + stage (0 push)
STEP_S = 0.002          # how often a TCP arm's run checks whether its jobs are done

# FCT size classes (bytes, upper bounds): small, medium, large as DCTCP's and pFabric's figures split them
SIZE_CLASSES = (("small <100 kB", 100e3), ("medium 100 kB-10 MB", 10e6), ("large >10 MB", float("inf")))


@dataclass(frozen=True)
class Fabric:
    """The simulated fabric and its jobs (`params.sim_fabric`)."""

    leaves: int = 9
    spines: int = 4
    hosts_per_leaf: int = 16
    rate_gbps: float = 10.0
    jobs: int = 4
    workers_per_job: int = 8
    warmup_ms: float = 2.0       # background alone before the first push

    @property
    def rate_bps(self) -> float:
        return self.rate_gbps * 1e9


@dataclass(frozen=True)
class Background:
    """`params.sim_background`: the traffic and its measuring window."""

    traffic: background.BackgroundSettings
    window_ms: float
    drain_ms: float

    @property
    def end_s(self) -> float:
        return (self.window_ms + self.drain_ms) / 1000.0


def _number(raw: dict[str, Any], key: str, default: float, where: str, zero_ok: bool = False) -> float:
    value = raw.get(key, default)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not (value >= 0 if zero_ok else value > 0):
        raise SimError(f"{where}.{key} must be a number {'>=' if zero_ok else '>'} 0, not {value!r}")
    return float(value)


def fabric(cfg: ExperimentConfig) -> Fabric:
    """`params.sim_fabric` checked; SimError naming a bad key."""
    raw = cfg.params.get("sim_fabric")
    if not isinstance(raw, dict):
        raise SimError("dlcp_ablation on ns-3 needs params.sim_fabric (experiments/configs/ns3/dlcp_ablation.yaml "
                       "has it)")
    where = "params.sim_fabric"
    unknown = set(raw) - set(Fabric.__dataclass_fields__)
    if unknown:
        raise SimError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    ints = {k: raw.get(k, getattr(Fabric, k)) for k in ("leaves", "spines", "hosts_per_leaf", "jobs", "workers_per_job")}
    for k, v in ints.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise SimError(f"{where}.{k} must be a whole number >= 1, not {v!r}")
    out = Fabric(**ints, rate_gbps=_number(raw, "rate_gbps", Fabric.rate_gbps, where),
                 warmup_ms=_number(raw, "warmup_ms", Fabric.warmup_ms, where, zero_ok=True))
    if out.leaves < 2:
        raise SimError(f"{where}.leaves must be at least 2 (a job's workers sit on other leaves than its PS)")
    if out.jobs * (out.workers_per_job + 1) > out.leaves * out.hosts_per_leaf - 2:
        raise SimError(f"{where}: {out.jobs} jobs x {out.workers_per_job + 1} hosts leave fewer than 2 of the "
                       f"{out.leaves * out.hosts_per_leaf} hosts for background traffic")
    return out


def background_of(cfg: ExperimentConfig) -> Background:
    """`params.sim_background` checked (load, cc, size_cdf: web_search or [[bytes, cdf], ...],
    window_ms, drain_ms)."""
    raw = cfg.params.get("sim_background")
    where = "params.sim_background"
    if not isinstance(raw, dict):
        raise SimError(f"dlcp_ablation on ns-3 needs {where} (load, window_ms, drain_ms)")
    unknown = set(raw) - {"load", "cc", "size_cdf", "window_ms", "drain_ms"}
    if unknown:
        raise SimError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    cdf = raw.get("size_cdf", "web_search")
    points = background.WEB_SEARCH_CDF if cdf == "web_search" else background.check_cdf(cdf)
    window = _number(raw, "window_ms", 0, where)
    traffic = background.BackgroundSettings(load=_number(raw, "load", 0, where), cc=str(raw.get("cc", "dctcp")),
                                            size_cdf=points, stop_s=window / 1000.0)
    return Background(traffic, window, _number(raw, "drain_ms", 0, where, zero_ok=True))


def check(cfg: ExperimentConfig) -> None:
    """Fail early (SimError) on a config the simulation cannot run."""
    fabric(cfg)
    lossy_arm.layer_sizes(cfg)
    bg = background_of(cfg)
    if cfg.timeout_s < bg.end_s:
        raise SimError(f"timeout_s {cfg.timeout_s:g} is shorter than the background's window + drain "
                       f"({bg.end_s * 1000:g} ms)")


def placement(topo: Any, f: Fabric) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """Jobs as (PS, workers) and the background hosts: job j's PS on leaf j mod L, its workers
    one per leaf on the leaves after it (never the PS's), each on the leaf's next free host."""
    free = {i: [h for h, host in topo.hosts.items() if host.switch == f"leaf{i + 1}"] for i in range(f.leaves)}

    def take(leaf: int) -> str:
        for step in range(f.leaves):
            hosts = free[(leaf + step) % f.leaves]
            if hosts:
                return hosts.pop(0)
        raise SimError("the fabric has too few hosts for the jobs")

    jobs = []
    for j in range(f.jobs):
        ps_leaf = j % f.leaves
        ps = take(ps_leaf)
        workers = []
        for k in range(f.workers_per_job):
            leaf = (ps_leaf + 1 + k % (f.leaves - 1)) % f.leaves
            workers.append(take(leaf))
        jobs.append((ps, workers))
    return jobs, [h for hosts in free.values() for h in hosts]


def arm_policy(cfg: ExperimentConfig, arm: Arm, jobs: int) -> Policy:
    """gradlane's arms: the policy file's first job copied to jobs 1..`jobs` with the arm's
    ablation switches (as the emulation installs one per job); baselines: the file's defaults
    and no job (the emulation installs none for TCP and MLT)."""
    template = cfg.topology_of(arm).policy or "controller/policies/default.yaml"
    docs = [job_policy(template, j + 1, **features_of(arm)) for j in range(jobs)]
    doc = {**docs[0], "jobs": [d["jobs"][0] for d in docs] if arm.transport == "ltp" else []}
    return parse_policy(doc, allow_empty=True)


def run_until(net: SimNetwork, t_s: float) -> None:
    """Run the simulation to simulated time `t_s` (pauses of the lossy driver's bridges, late
    arrivals after its jobs are done, are run through)."""
    ns = net.ns
    while True:
        now = ns.Simulator.Now().GetSeconds()
        if now >= t_s - 1e-12:
            return
        ns.Simulator.Stop(ns.Seconds(t_s - now))
        ns.Simulator.Run()
        if ns.Simulator.Now().GetSeconds() == now and ns.Simulator.IsFinished():
            return


def _tcp_jobs(cfg: ExperimentConfig, arm: Arm, net: SimNetwork, jobs: list[tuple[str, list[str]]],
              size: int, start_s: float, jitter_s: float, end_s: float) -> tuple[list[dict[str, Any]], list[float], str | None]:
    apps = []
    for j, (ps, workers) in enumerate(jobs):
        app = net.cpp.TcpRounds(net.node(ps), net.address(ps), TCP_PORT + j, size, size, cfg.rounds_of(arm), 0.0,
                                jitter_s)
        for w in workers:
            app.AddWorker(net.node(w))
        app.Start(start_s)
        apps.append(app)
    run_until(net, end_s)
    while not all(a.Finished() for a in apps) and net.ns.Simulator.Now().GetSeconds() < cfg.timeout_s:
        run_until(net, min(net.ns.Simulator.Now().GetSeconds() + STEP_S, cfg.timeout_s))
    rounds, pushes = [], []
    for j, app in enumerate(apps):
        starts, ends = list(app.round_start), list(app.round_end)
        push_ends = list(app.push_end)
        for i, (s, e) in enumerate(zip(starts, ends)):
            rounds.append({"job": j + 1, "round": i, "t_s": e, "round_time_s": e - s,
                           "push_stage_s": push_ends[i] - s if i < len(push_ends) else None,
                           "delivered": 1.0, "violations": 0, "queue_depth": None, "accuracy": None})
        pushes += [float(x) for x in app.push_fct]
    done = sum(int(a.RoundsDone()) for a in apps)
    planned = cfg.rounds_of(arm) * len(apps)
    error = None if done == planned else f"{done} of {planned} rounds within {cfg.timeout_s:g} s of simulated time"
    return rounds, pushes, error


def _lossy_jobs(cfg: ExperimentConfig, arm: Arm, net: SimNetwork, jobs: list[tuple[str, list[str]]],
                f: Fabric, seed: int, start_s: float, jitter_s: float,
                end_s: float) -> tuple[list[dict[str, Any]], list[float], str | None, dict[str, Any]]:
    sizes = lossy_arm.layer_sizes(cfg)
    chunk = cfg.chunk_elems or 64
    packets = sum(-(-n // chunk) for n in sizes) * f.workers_per_job
    ps0, workers0 = jobs[0]
    timers = path_timers.timer_flags(net.base_rtt_s(workers0[0], ps0), f.rate_bps / (8 * net.options.packet_bytes),
                                     int(cfg.topology_of(arm).queue_depth), packets)
    specs = []
    for j, (ps, workers) in enumerate(jobs):
        flags = [*cfg.agent_args, *arm.agent_args, *timers, "--job", str(j + 1)]
        config = transport_config(arm.transport, flags, len(sizes), cfg.chunk_elems, seed + 1000 * j)
        specs.append(LossyJob(ps, workers, config, sizes, cfg.rounds_of(arm), jitter_s, seed + 1000 * j, start_s))
    outcomes = run_lossy_jobs(net, specs, cfg.timeout_s)
    run_until(net, end_s)
    rounds, pushes, errors = [], [], []
    bounds = specs[0].config.bounds
    extra: dict[str, Any] = {"path_timers": timers, "retransmissions": 0, "violations": 0,
                             "delivered_tensor_min": 1.0, "closed_by_deadline": 0, "bound_scope": bounds.scope,
                             "push_bounds": list(bounds.push), "pull_bounds": list(bounds.pull)}
    for j, out in enumerate(outcomes):
        if out.error:
            errors.append(f"job {j + 1}: {out.error}")
        for i, r in enumerate(x for x in out.rounds if x.end is not None):
            rounds.append({"job": j + 1, "round": i, "t_s": r.end, "round_time_s": r.end - r.start,
                           "delivered": r.delivered, "delivered_tensor_min": r.delivered_tensor_min,
                           "violations": r.violations, "closed_by": r.push_closed_by,
                           "retransmissions": r.retransmissions, "queue_depth": r.queue_depth,
                           "accuracy": None, "push_times": [round(t, 9) for t in r.push_times]})
            pushes += r.push_times
            extra["retransmissions"] += r.retransmissions
            extra["violations"] += r.violations
            extra["delivered_tensor_min"] = min(extra["delivered_tensor_min"], r.delivered_tensor_min)
            extra["closed_by_deadline"] += sum(1 for c in r.push_closed_by.values() if c == "deadline")
        if not out.complete and not out.error:
            errors.append(f"job {j + 1}: {sum(r.end is not None for r in out.rounds)} of {out.planned} rounds")
    return rounds, pushes, ("; ".join(errors) or None), extra


def spray_evidence(net: SimNetwork, spines: int) -> dict[str, Any]:
    """The jobs' push packets each spine classified (0 for baselines: no job policy), the
    busier spine's share (1/spines = even) and, per switch, the push stage's selectively
    dropped fraction of what it classified."""
    per_spine, worst, seen_all, dropped_all = {}, 0.0, 0, 0
    for name, sw in net.switches.items():
        seen = sum(int(sw.state.slot_seen[i]) for i in range(PUSH_STAGE, int(sw.state.slot_seen.size()), 2))
        dropped = sum(int(sw.state.slot_dropped[i]) for i in range(PUSH_STAGE, int(sw.state.slot_dropped.size()), 2))
        if name.startswith("spine"):
            per_spine[name] = seen
        if seen:
            worst = max(worst, dropped / seen)
        seen_all += seen
        dropped_all += dropped
    total = sum(per_spine.values())
    return {"push_per_spine": per_spine, "busier_spine_share": max(per_spine.values()) / total if total else None,
            "even_spine_share": 1.0 / spines, "push_classified": seen_all, "push_selective_drops": dropped_all,
            "selective_drop_fraction_max": worst if seen_all else None}


def run_arm(cfg: ExperimentConfig, arm: Arm, seed: int, jitter_s: float,
            options: SimOptions = SimOptions()) -> ArmResult:
    """One repetition of `arm` on the loaded fabric (ns-3's streams already seeded)."""
    f, bg = fabric(cfg), background_of(cfg)
    settings = cfg.topology_of(arm)
    topo = leafspine(f.leaves, f.spines, f.hosts_per_leaf, rate_mbps=f.rate_gbps * 1000,
                     queue_depth=int(settings.queue_depth))
    jobs, bg_hosts = placement(topo, f)
    # the arm's TCP for TCP arms; the background's own for the others (Linux's timers either way)
    tcp.configure(tcp.TcpSettings(cc=arm.tcp_cc or "cubic", ecn=arm.tcp_ecn == "on") if arm.transport == "tcp"
                  else tcp.TcpSettings(cc=bg.traffic.cc, ecn=True))
    t0 = time.monotonic()
    net = SimNetwork(topo, arm_policy(cfg, arm, f.jobs), options)
    build_s = time.monotonic() - t0
    try:
        app = background.install(net, bg_hosts, bg.traffic, f.rate_bps, measured_until_s=bg.end_s)
        start = f.warmup_ms / 1000.0
        t1 = time.monotonic()
        extra: dict[str, Any] = {}
        if arm.transport == "tcp":
            size = 4 * sum(lossy_arm.layer_sizes(cfg))
            rounds, pushes, error = _tcp_jobs(cfg, arm, net, jobs, size, start, jitter_s, bg.end_s)
        elif arm.transport in lossy_arm.TRANSPORTS:
            rounds, pushes, error, extra = _lossy_jobs(cfg, arm, net, jobs, f, seed, start, jitter_s, bg.end_s)
        else:
            raise SimError(f"arms[{arm.name}]: transport {arm.transport} is not simulated on the fabric")
        wall = time.monotonic() - t1
        simulated = net.ns.Simulator.Now().GetSeconds()
        flows = background.flows(app)
        switches = {name: sw.counters() for name, sw in net.switches.items()}
        evidence = spray_evidence(net, f.spines)
    finally:
        net.close()
    counted = [{**r, "fct_s": r["fct_s"] if r["end"] is not None and r["end"] <= bg.end_s + 1e-12 else None}
               for r in flows]
    bg_stats = fct_stats(counted)
    times = [r["round_time_s"] for r in rounds]
    tail = {name: c["tail_drops"] for name, c in switches.items()}
    metrics: dict[str, Any] = {
        "rounds": len(rounds), "round_time_p50_s": percentile(times, 50), "round_time_p99_s": percentile(times, 99),
        "push_fct_p50_s": percentile(pushes, 50), "push_fct_p99_s": percentile(pushes, 99),
        "push_fct_mean_s": sum(pushes) / len(pushes) if pushes else None, "pushes": len(pushes),
        "jobs_end_s": max((r["t_s"] for r in rounds), default=None),
        "background": bg_stats, "bg_fct_p99_s": bg_stats["fct_p99_s"], "bg_fct_mean_s": bg_stats["fct_mean_s"],
        "bg_hosts": len(bg_hosts), "bg_flows_per_s": background.flows_per_s(bg.traffic, len(bg_hosts), f.rate_bps),
        "tail_drops": sum(tail.values()), "selective_drops": sum(c["selective_drops"] for c in switches.values()),
        "ecn_marked": sum(c["marked"] for c in switches.values()),
        "gradient_bytes": 4 * sum(lossy_arm.layer_sizes(cfg)), "simulated_s": simulated,
        "sim_wall_s": round(wall, 3), "sim_build_s": round(build_s, 3),
        "features": features_of(arm) if arm.transport == "ltp" else None,
        "final_accuracy": None, "time_to_target_s": None, "accuracy_curve": [],
        **evidence, **extra,
    }
    return ArmResult(rounds=rounds, metrics=metrics, ok=error is None, error=error,
                     extra={"backend": BACKEND, "sim_switches": switches, "tail_drops": tail,
                            "placement": [{"job": j + 1, "ps": ps, "workers": w} for j, (ps, w) in enumerate(jobs)]})


def fct_stats(records: list[dict[str, Any]]) -> dict[str, Any]:
    """FCT figures of background flows: mean and p99 (s) over completed flows, per size class
    too, and how many arrived and completed."""
    done = [r for r in records if r["fct_s"] is not None]
    fcts = [r["fct_s"] for r in done]
    out: dict[str, Any] = {"flows": len(records), "completed": len(done),
                           "fct_mean_s": sum(fcts) / len(fcts) if fcts else None,
                           "fct_p50_s": percentile(fcts, 50), "fct_p99_s": percentile(fcts, 99),
                           "offered_bytes": sum(r["bytes"] for r in records), "by_size": {}}
    low = 0.0
    for label, high in SIZE_CLASSES:
        cls = [r for r in records if low < r["bytes"] <= high]
        times = [r["fct_s"] for r in cls if r["fct_s"] is not None]
        out["by_size"][label] = {"flows": len(cls), "completed": len(times),
                                 "fct_mean_s": sum(times) / len(times) if times else None,
                                 "fct_p99_s": percentile(times, 99)}
        low = high
    return out


def simulate(run: SimulatedRun) -> ArmResult:
    """`run_arm` for the harness."""
    return run_arm(run.config, run.arm, run.seed, run.jitter_s, run.options)


SIMULATION = Simulation(run_arm=simulate, check=check, config="experiments/configs/ns3/dlcp_ablation.yaml",
                        own_fabric=True, report=dlcp_simulated)
