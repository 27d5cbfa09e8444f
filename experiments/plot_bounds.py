"""Experiment 3, PLOT: per-layer loss bounds vs one uniform bound vs one whole-tensor bound vs
TCP under background congestion (p99 round time, training time to a target accuracy,
round-time CDF, final accuracy).

Before a new run, `setup` profiles the model once (`experiments.plot_profile`, in process, with
the config's model, rounds, workers and chunking, lost elements filled with zero as in PLOT's
profile; the jobs' own hole fill is stated beside the profile in the summary) or reads a cached profile made with
the same inputs (`params.profile.cache_dir`), or reads a published PyTorch model's profile
(`params.profile.published`: a profile.json of `experiments.torch_profile`, each parameter's
tolerance its bound), or takes `params.bounds` as configured. The
per-layer arm uses the profiled bounds, the uniform arm their minimum on every layer, the
tensor arm one bound over the whole tensor with the per-layer arm's total loss budget
(sum of bound x layer size, divided by the tensor's size; LTP's and MLT's semantics: any chunk
may be the missing one), the TCP arm no bounds. The bound arms give their bounds to both
sides, so they agree: the hosts by `--layer-bounds` (tensor arm: `--bound B --bound-scope
tensor`; pull: the hosts' default quarter of each), the switches by a policy file
written for the job and installed with `gradctl policy apply` (pull_bound a quarter too) before
the job starts. Each run records the bounds the hosts logged (the PS's and workers' `start`
records) and the bounds the controller reports installed (`gradctl --json policy show`).
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from controller.errors import ControllerError
from experiments import plot_profile, plots, torch_profile
from experiments.api import ArmContext, ArmResult, Figure, Row, Summary, Table
from experiments.config import ExperimentConfig
from experiments.errors import ConfigError
from experiments.lossy_training import layer_count, layer_sizes, settings_from_config
from experiments.records import Results
from experiments.stats import fmt_num, percentile
from experiments.stats import summarize as stat_of
from experiments.training import ROUND_TIME_MEANING, run_training, time_to_accuracy
from hosts.errors import ConfigError as HostsConfigError
from hosts.transport.bounds import DEFAULT_PULL_FRACTION

REPO = Path(__file__).resolve().parents[1]
ORDER = 3
TITLE = ("PLOT: per-layer loss bounds vs one uniform bound vs one whole-tensor bound vs TCP under "
         "background congestion")
PAPER = "PLOT, IEEE TNSM 2024"


def title(config: ExperimentConfig) -> str:
    """The summary's title: TITLE, without "vs TCP" when the config runs no TCP arm."""
    return TITLE if _tcp_arm(config) else TITLE.replace(" vs TCP", "")
PER_LAYER, UNIFORM, TENSOR = "per_layer", "uniform", "tensor"
FIGURES: list[Figure] = [
    Figure(key="p99_vs_uniform_x", label="p99 round time, uniform bound / per-layer bounds",
           paper="lower tail latency with per-layer bounds (> 1x)", unit="x",
           note="uniform = the minimum of the profiled per-layer bounds, on every layer"),
    Figure(key="p99_vs_tcp_x", label="p99 round time, TCP / per-layer bounds",
           paper="lower tail latency than TCP (> 1x)", unit="x",
           note="same background TCP flows through the same bottleneck"),
    Figure(key="p99_vs_tcp_same_queue_x", label="p99 round time, TCP / per-layer bounds, both in the default queue",
           paper="n/a (the paper's arms share one switch treatment)", unit="x",
           note="the per-layer arm without the priority queues (switch and DSCP), so loss tolerance is "
                "compared without priority"),
    Figure(key="p99_vs_tensor_x", label="p99 round time, whole-tensor bound / per-layer bounds",
           paper="n/a (PLOT compares with a uniform per-layer bound)", unit="x",
           note="whole-tensor = one bound over the tensor with the per-layer bounds' total loss budget"),
    Figure(key="accuracy_vs_tensor", label="final accuracy, per-layer minus whole-tensor bound",
           paper="n/a (the gain per-layer bounds exist for: loss kept off intolerant layers)",
           unit="points", note="same rounds, same seeds"),
    Figure(key="tta_vs_uniform", label="time to target accuracy, per-layer vs uniform",
           paper="shorter training time", unit="%", note="negative = per-layer faster"),
    Figure(key="tta_vs_tcp", label="time to target accuracy, per-layer vs TCP",
           paper="shorter training time", unit="%", note="negative = per-layer faster"),
    Figure(key="accuracy_delta", label="final accuracy, per-layer minus TCP",
           paper="no accuracy loss", unit="points", note="same rounds, same seeds"),
]


# -- bounds: profiled once, cached, or configured -----------------------------------------------
def cache_key(inputs: dict) -> str:
    """A digest of a profile's inputs (the cache file's name)."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]


def profiled_bounds(config: ExperimentConfig, log: Any = print) -> tuple[list[float], dict]:
    """(per-layer bounds, the profile record): from params.bounds, a cached profile with the
    same inputs, or a new profile (then cached)."""
    configured = config.params.get("bounds")
    if configured:
        return [float(b) for b in configured], {"source": "configured (params.bounds)"}
    opts = dict(config.params.get("profile") or {})
    settings = plot_profile.profile_settings(config)
    if opts.get("published"):      # a path relative to the repository, as the config shows it
        path = Path(opts["published"])
        try:
            bounds, record = torch_profile.published_bounds(
                path if path.is_absolute() else REPO / path, settings.spec())
        except HostsConfigError as exc:
            raise ConfigError(f"{config.source}: params.profile.published: {exc}") from None
        log(f"[plot_bounds] per-layer bounds from the published profile {path}")
        return bounds, {**record, "source": f"published profile {path} (`{record['profile_command']}`)",
                        "profile_file": str(path)}
    seeds = [int(s) for s in opts.get("seeds", plot_profile.DEFAULT_SEEDS)]
    rates = [float(r) for r in opts.get("rates", plot_profile.DEFAULT_RATES)]
    tolerance = float(opts.get("tolerance", plot_profile.DEFAULT_TOLERANCE))
    inputs = plot_profile.profile_inputs(settings, seeds, rates, tolerance)
    cache_dir = Path(opts.get("cache_dir", "results/plot_bounds/profiles"))
    cached = cache_dir / f"{cache_key(inputs)}.json"
    if cached.is_file():
        try:
            profile = plot_profile.Profile.from_json(json.loads(cached.read_text()))
        except (ValueError, TypeError):
            profile = None
        if profile is not None and profile.inputs() == inputs:
            log(f"[plot_bounds] profile from cache {cached} (made in {profile.elapsed_s:.0f} s)")
            return list(profile.bounds), {"source": f"cache {cached}", **profile.to_json()}
    log(f"[plot_bounds] profiling {layer_count(settings)} layers x {len(rates)} rates x "
        f"{len(seeds)} seeds in process (cached afterwards in {cache_dir})")
    profile = plot_profile.run_profile(settings, seeds, rates, tolerance, progress=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(profile.to_json(), indent=1) + "\n")
    return list(profile.bounds), {"source": f"profiled now ({profile.elapsed_s:.0f} s), cached {cached}",
                                  **profile.to_json()}


def setup(config: ExperimentConfig) -> ExperimentConfig:
    """Profile (or read) the per-layer bounds; record them, the uniform bound and the profile."""
    bounds, record = profiled_bounds(config)
    settings = settings_from_config(config)
    sizes = layer_sizes(settings)
    if len(sizes) != len(bounds):
        raise ConfigError(f"{config.source}: params.bounds has {len(bounds)} values, the model has "
                          f"{len(sizes)} layers")
    tensor = plot_profile.tensor_bound(bounds, sizes)
    params = {**config.params, "per_layer_bounds": bounds, "uniform_bound": min(bounds),
              "tensor_bound": tensor, "layer_sizes": sizes, "profile_record": record,
              "training_hole_fill": settings.hole_fill}
    print(f"[plot_bounds] per-layer bounds {bounds}, uniform bound {min(bounds):g}, whole-tensor "
          f"bound {tensor:g} ({record['source']})", flush=True)
    return replace(config, params=params)


def arm_bounds(config: ExperimentConfig, arm_name: str) -> list[float] | None:
    """The push bound per layer of an arm (None for an arm without bounds, e.g. TCP)."""
    kind = config.arm(arm_name).params.get("bounds")
    per_layer = [float(b) for b in config.params["per_layer_bounds"]]
    if kind == PER_LAYER:
        return per_layer
    if kind == UNIFORM:
        return [float(config.params["uniform_bound"])] * len(per_layer)
    if kind == TENSOR:
        return [float(config.params["tensor_bound"])] * len(per_layer)
    return None


# -- one run -----------------------------------------------------------------------------------
def _install_policy(ctx: ArmContext, bounds: list[float]) -> tuple[Path, list[dict], str | None]:
    """Write and apply the switch policy of the next job; (file, installed classes, error)."""
    job = ctx.session.jobs + 1
    doc = plot_profile.policy_document(bounds, [job], DEFAULT_PULL_FRACTION, name=ctx.arm.name,
                                       prioritize=prioritized(ctx.config, ctx.arm.name))
    path = ctx.out_dir / "policies" / f"{ctx.arm.name}.rep{ctx.rep}.job{job}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    plot_profile.write_policy(path, doc, [f"arm {ctx.arm.name}, repetition {ctx.rep}, job {job}"])
    try:
        ctx.session.apply_policy(path.resolve())
    except ControllerError as exc:
        return path, [], f"gradctl policy apply failed: {str(exc)[:200]}"
    try:
        shown = ctx.session.control("policy.show")
        classes = [c for c in shown.get("classes", []) if isinstance(c, dict) and c.get("job") == job]
    except (ControllerError, AttributeError):
        classes = []
    return path, sorted(classes, key=lambda c: c["layers"][0]), None


def _host_bounds(outcome: Any) -> dict[str, Any]:
    """The bounds the agents logged in their `start` records."""
    out: dict[str, Any] = {}
    for name, recs in outcome.result.records.items():
        start = next((r for r in recs if r.get("event") == "start"), None)
        if start is None:
            continue
        if name.startswith("ps"):
            out["hosts_push_bounds"] = start.get("push_bounds")
            out["hosts_pull_bounds_ps"] = start.get("pull_bounds")
        elif "hosts_pull_bounds_worker" not in out:
            out["hosts_pull_bounds_worker"] = start.get("pull_bounds")
    return out


def run_arm(ctx: ArmContext) -> ArmResult:
    """One training job of the arm, its bounds given to the hosts and to the switches."""
    bounds = arm_bounds(ctx.config, ctx.arm.name)
    sides: dict[str, Any] = {"bounds": bounds}
    if bounds is not None:
        path, classes, error = _install_policy(ctx, bounds)
        if error:
            return ArmResult(rounds=[], metrics={"bounds": bounds}, ok=False, error=error)
        sides.update(policy_file=str(path),
                     switch_push_bounds=[c.get("loss_bound") for c in classes],
                     switch_pull_bounds=[c.get("pull_bound") for c in classes])
        if ctx.arm.params.get("bounds") == TENSOR:
            extra: tuple[str, ...] = ("--bound", f"{bounds[0]:g}", "--bound-scope", "tensor")
        else:
            extra = ("--layer-bounds", ",".join(f"{b:g}" for b in bounds))
        # as the arm's own agent flags (for this run only: the runner sets them per run), so the
        # session sees the hosts get their bounds by flag and does not also hand them the
        # controller's policy (the agents refuse both at once)
        session = ctx.session
        session.config = replace(session.config, agent_args=(*session.config.agent_args, *extra))
    outcome = run_training(ctx)
    metrics = dict(outcome.metrics)
    target = float(ctx.param("target_accuracy", 0.9))
    metrics["target_accuracy"] = target
    metrics["time_to_target_s"] = time_to_accuracy(metrics["accuracy_curve"], target)
    metrics.update(sides)
    metrics.update(_host_bounds(outcome))
    if bounds is not None:
        metrics["sides_agree"] = _agree(metrics)
    return ArmResult(rounds=outcome.rounds, metrics=metrics, ok=outcome.ok, error=outcome.error())


def _agree(m: dict[str, Any]) -> bool:
    """Hosts and switches hold the same push and pull bound on every layer."""
    def same(a: Any, b: Any) -> bool:
        return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                and all(x is not None and y is not None and abs(x - y) < 1e-4 for x, y in zip(a, b)))
    return (same(m.get("hosts_push_bounds"), m.get("switch_push_bounds"))
            and same(m.get("hosts_pull_bounds_worker"), m.get("switch_pull_bounds")))


# -- summary -----------------------------------------------------------------------------------
def prioritized(config: ExperimentConfig, arm_name: str) -> bool:
    """Whether the switches put the arm's gradient packets in the policy's priority queues
    (params.prioritize, default true); TCP arms never are."""
    arm = config.arm(arm_name)
    return arm.transport != "tcp" and bool(arm.params.get("prioritize", True))


def _arm_of(config: ExperimentConfig, kind: str, priority: bool = True) -> str | None:
    return next((a.name for a in config.arms if a.params.get("bounds") == kind
                 and prioritized(config, a.name) == priority), None)


def _tcp_arm(config: ExperimentConfig) -> str | None:
    return next((a.name for a in config.arms if a.transport == "tcp"), None)


def _paired(results: Results, a: str, b: str, key: str) -> list[tuple[float, float]]:
    """(metric of a, metric of b) per repetition both finished with a finite value."""
    va = {r["rep"]: r["metrics"].get(key) for r in results.runs_of(a)}
    vb = {r["rep"]: r["metrics"].get(key) for r in results.runs_of(b)}
    return [(va[k], vb[k]) for k in sorted(va) if k in vb and _finite(va[k]) and _finite(vb[k])]


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _ratio_row(results: Results, key: str, num: str | None, den: str | None, flag: bool) -> Row:
    if not (num and den):
        return Row(key, "n/a", "an arm is missing", flag)
    pairs = _paired(results, num, den, "round_time_p99_s")
    return Row(key, stat_of(a / b for a, b in pairs if b > 0), f"{num} / {den}, paired by repetition", flag)


def _tta_row(results: Results, key: str, ours: str | None, base: str | None, flag: bool) -> Row:
    if not (ours and base):
        return Row(key, "n/a", "an arm is missing", flag)
    pairs = _paired(results, ours, base, "time_to_target_s")
    missed = [a for a in (ours, base) if any(r["metrics"].get("time_to_target_s") is None
                                             for r in results.runs_of(a))]
    note = f"{ours} vs {base}, paired by repetition"
    if missed:
        note += f"; target missed in some runs of {', '.join(missed)} (left out)"
    return Row(key, stat_of(100.0 * (a - b) / b for a, b in pairs if b > 0), note, flag)


def _accuracy_row(results: Results, key: str, ours: str | None, base: str | None, flag: bool) -> Row:
    if not (ours and base):
        return Row(key, "n/a", "an arm is missing", flag)
    pairs = _paired(results, ours, base, "final_accuracy")
    return Row(key, stat_of(100.0 * (a - b) for a, b in pairs), f"{ours} minus {base}", flag)


def summarize(results: Results, config: ExperimentConfig) -> Summary:
    """Headline rows, a per-arm table, the bounds each side used, and the profile."""
    per_layer, uniform, tcp = _arm_of(config, PER_LAYER), _arm_of(config, UNIFORM), _tcp_arm(config)
    tensor = _arm_of(config, TENSOR)
    flag = results.switch_dropped()
    same_queue = _arm_of(config, PER_LAYER, priority=False)
    rows = [_ratio_row(results, "p99_vs_uniform_x", uniform, per_layer, flag),
            _ratio_row(results, "p99_vs_tcp_x", tcp, per_layer, flag),
            _ratio_row(results, "p99_vs_tcp_same_queue_x", tcp, same_queue, flag),
            _ratio_row(results, "p99_vs_tensor_x", tensor, per_layer, flag),
            _accuracy_row(results, "accuracy_vs_tensor", per_layer, tensor, flag),
            _tta_row(results, "tta_vs_uniform", per_layer, uniform, flag),
            _tta_row(results, "tta_vs_tcp", per_layer, tcp, flag),
            _accuracy_row(results, "accuracy_delta", per_layer, tcp, flag)]
    target = config.params.get("target_accuracy", 0.9)
    arm_rows = []
    for arm in results.arms():
        times = [r["round_time_s"] for r in results.rounds_of(arm)
                 if r["rep"] in {x["rep"] for x in results.runs_of(arm)} and _finite(r.get("round_time_s"))]
        missed = sum(1 for r in results.runs_of(arm) if r["metrics"].get("time_to_target_s") is None)
        arm_rows.append([arm, f"{len(results.runs_of(arm))}/{len([r for r in results.runs if r['arm'] == arm])}",
                         fmt_num(percentile(times, 50), 3), fmt_num(percentile(times, 99), 3),
                         stat_of(results.metric(arm, "round_time_p99_s")).fmt(3),
                         stat_of(results.metric(arm, "train_time_s")).fmt(3),
                         stat_of(results.metric(arm, "time_to_target_s")).fmt(3)
                         + (f", missed in {missed}" if missed else ""),
                         stat_of(results.metric(arm, "final_accuracy")).fmt(3),
                         fmt_num(stat_of(results.metric(arm, "violations")).mean, 3)])
    tables = [Table("Per arm (pooled p50/p99 over all rounds; p99 per run as mean ± sd)",
                    ["arm", "runs ok", "p50 round s", "p99 round s (pooled)", "p99 round s per run",
                     "training time s", f"time to {target:g} accuracy s", "final accuracy",
                     "bound violations/run"], arm_rows),
              _sides_table(results), _profile_table(config)]
    record = config.params.get("profile_record") or {}
    notes = [f"Bounds: per-layer {config.params.get('per_layer_bounds')}, uniform "
             f"{config.params.get('uniform_bound')} (the minimum), whole-tensor "
             f"{config.params.get('tensor_bound')} (the per-layer bounds' total budget over layers of "
             f"{config.params.get('layer_sizes')} elements), from {record.get('source', '?')}.",
             "Each bound arm gives its bounds to the hosts (--layer-bounds; pull = a quarter) and to "
             "the switches (a policy file per job, `gradctl policy apply`, pull_bound = a quarter); "
             "the sides table shows what each side reported.",
             ROUND_TIME_MEANING + " Training time = first round's "
             f"start to last round's end; time to target = until held-out accuracy first reaches {target:g} "
             "(evaluated every epoch).",
             "Gradient DATA of the bound arms rides the policy's priority queues (front layers first); "
             "TCP training traffic and the background flows share the default queue, as the suite's "
             "switches treat traffic without the gradient header. The arms marked no-priority run the "
             "same bounds without the priority queues (policy prioritize: false, DATA sent with TOS 0), "
             "so TCP and they meet the background in one queue: the p99_vs_tcp_same_queue_x row."]
    notes.extend(_packet_note(config))
    notes.extend(_bound_gap_notes(results, config, per_layer, uniform))
    return Summary(rows=rows, tables=[t for t in tables if t is not None], notes=notes)


TCP_SEGMENT_BYTES = 1448       # payload of one MTU-sized TCP segment


def _packet_note(config: ExperimentConfig) -> list[str]:
    """Packets one worker's push takes in the bound arms (one chunk each) and in TCP: at a
    bottleneck that counts packets, not bytes, small chunks cost the bound arms that ratio."""
    sizes = config.params.get("layer_sizes") or []
    chunk = config.chunk_elems
    if not sizes or not chunk:
        return []
    chunks = sum(math.ceil(n / chunk) for n in sizes)
    segments = math.ceil(4 * sum(sizes) / TCP_SEGMENT_BYTES)
    return [f"One worker's push is {chunks} gradient packets of at most {chunk} values in the bound arms "
            f"and about {segments} MTU-sized segments over TCP ({4 * sum(sizes)} bytes): the "
            f"bottleneck counts packets, so at the same rate TCP's push needs {segments / chunks:.2f}x "
            "the bound arms' wire time. The bound arms share one chunking, so they compare evenly."]


def _bound_gap_notes(results: Results, config: ExperimentConfig, per_layer: str | None,
                     uniform: str | None) -> list[str]:
    """How far apart the per-layer and uniform arms' bounds are, and how much loss the push of
    every bound arm really took: when every layer's delivered loss stays below both bounds, the
    arms cannot differ."""
    bounds = config.params.get("per_layer_bounds") or []
    if not bounds or not (per_layer and uniform):
        return []
    low = min(bounds)
    looser = [i for i, b in enumerate(bounds) if b > low]
    out = [f"Per-layer bounds are looser than the uniform {low:g} on {len(looser)} of {len(bounds)} "
           f"layers" + (f" ({', '.join(f'layer {i}: {bounds[i]:g}' for i in looser)})." if looser else
                        ": the two bound arms are the same system here.")]
    sizes = config.params.get("layer_sizes") or []
    if looser and len(sizes) == len(bounds):
        share = sum(sizes[i] for i in looser) / sum(sizes)
        extra = sum((bounds[i] - low) * sizes[i] for i in looser) / sum(sizes)
        out.append(f"Those layers hold {share:.1%} of the tensor's elements, so the per-layer arm may leave "
                   f"at most {extra:.1%} of the tensor more missing than the uniform arm (uniform budget "
                   f"{low:.1%}, per-layer {low + extra:.1%} = the whole-tensor bound).")
    highest = 0.0
    tensor = _arm_of(config, TENSOR)
    for arm in (per_layer, uniform, *([tensor] if tensor else [])):
        delivered = [r["delivered"] for r in results.rounds_of(arm)
                     if isinstance(r.get("delivered"), list) and r["delivered"]]
        if delivered:
            layers = len(delivered[0])
            mean_loss = [100.0 * (1.0 - sum(d[i] for d in delivered) / len(delivered)) for i in range(layers)]
            worst = [100.0 * (1.0 - min(d[i] for d in delivered)) for i in range(layers)]
            if arm != tensor:
                highest = max(highest, *worst)
            else:
                over = [i for i, m in enumerate(mean_loss) if i < len(bounds) and m > 100.0 * bounds[i]]
                if over:
                    out.append(f"{arm}: the pooled budget let holes gather in " + ", ".join(
                        f"layer {i} ({mean_loss[i]:.1f} % on average, its per-layer bound {bounds[i]:g})"
                        for i in over) + ", which the per-layer bounds forbid.")
            out.append(f"{arm}: push loss per layer, mean over rounds (worst round) in %: "
                       + ", ".join(f"{m:.2f} ({w:.1f})" for m, w in zip(mean_loss, worst)) + ".")
    if looser and highest < 100.0 * low:
        out.append(f"No push closed with more than {highest:.1f} % of a layer missing, well below even "
                   f"the uniform bound {low:g}: the receivers never needed the looser per-layer bounds "
                   "to close early, so the two bound arms differ by noise here. PLOT's gain needs layers "
                   "whose tolerances differ and congestion that pushes loss past the tightest bound.")
    return out


def _sides_table(results: Results) -> Table:
    rows = []
    for run in results.runs:
        m = run.get("metrics", {})
        if m.get("bounds") is None:
            continue
        rows.append([run["arm"], str(run["rep"]), _fmt_list(m.get("hosts_push_bounds")),
                     _fmt_list(m.get("switch_push_bounds")), _fmt_list(m.get("hosts_pull_bounds_worker")),
                     _fmt_list(m.get("switch_pull_bounds")), str(m.get("sides_agree", "?"))])
    return Table("Bounds each side used (hosts: the agents' start records; switches: gradctl policy show)",
                 ["arm", "rep", "hosts push", "switches push", "hosts pull", "switches pull", "agree"], rows)


def _profile_table(config: ExperimentConfig) -> Table | None:
    record = config.params.get("profile_record") or {}
    drops = record.get("drops")
    if not drops:
        return None
    rates = record.get("rates", [])
    names = record.get("layer_names") or []
    rows = [[_layer_label(int(layer), names), *(f"{row.get(str(r), math.nan) * 100:+.2f}" for r in rates),
             f"{record['bounds'][int(layer)]:g}"] for layer, row in drops.items()]
    base = record.get("base_accuracy") or []
    filling = (record.get("settings") or {}).get("hole_fill", "?")
    trained = config.params.get("training_hole_fill", "?")
    title = (f"Profile: mean accuracy drop (points) over seeds {record.get('seeds')} when one layer "
             f"loses chunks at each rate (loss-free accuracy {stat_of(base).fmt(4)}; tolerance "
             f"{record.get('tolerance', 0) * 100:g} point; holes filled with {filling} while profiling, "
             f"with {trained} in the network jobs)")
    if record.get("profile_file"):
        title += (f"; published profile {record['profile_file']}, trained with "
                  + ", ".join(f"{k} {v}" for k, v in (record.get("settings") or {}).items()))
    return Table(title, ["layer", *(f"{r:.0%}" for r in rates), "bound"], rows)


def _layer_label(layer: int, names: list[str]) -> str:
    """'layer 2' or, when the profile names its layers (torch parameters), 'layer 2 (dense.weight)'."""
    return f"layer {layer} ({names[layer]})" if layer < len(names) else f"layer {layer}"


def _fmt_list(values: Any) -> str:
    if not isinstance(values, list):
        return "n/a"
    return ", ".join(fmt_num(v, 4) if _finite(v) else "?" for v in values)


# -- plots -------------------------------------------------------------------------------------
def plot(results: Results, config: ExperimentConfig, out_dir: Path) -> list[Path]:
    """p99 round time and training time bars, round-time CDF, accuracy over time, and the
    profile the per-layer bounds came from (when it was measured)."""
    arms = results.arms()
    flagged = [a for a in arms if results.switch_dropped(a)]
    target = config.params.get("target_accuracy", 0.9)
    profile = profile_plot(config, out_dir / "profile.png")
    return [
        *([profile] if profile else []),
        plots.bars({a: results.metric(a, "round_time_p99_s") for a in arms}, out_dir / "p99_round_time.png",
                   "p99 round time (s)", "p99 round time per run", flagged=flagged),
        plots.bars({a: results.metric(a, "time_to_target_s") for a in arms}, out_dir / "time_to_target.png",
                   f"time to {target:g} accuracy (s)", "Training time to target accuracy", flagged=flagged),
        plots.round_time_cdf(results, out_dir / "round_time_cdf.png", arms),
        plots.time_to_accuracy(results, out_dir / "accuracy_over_time.png", arms, target=target),
    ]



def profile_plot(config: ExperimentConfig, path: Path) -> Path | None:
    """Accuracy drop (points, mean ± sd over seeds, paired) against the loss injected into one
    layer at a time, one line per layer, the tolerance dashed; None without a measured profile."""
    record = config.params.get("profile_record") or {}
    accuracy, base = record.get("accuracy"), record.get("base_accuracy")
    if not accuracy or not base:
        return None
    sizes = config.params.get("layer_sizes") or []
    series = {}
    for layer, by_rate in accuracy.items():
        rates = sorted(by_rate, key=float)
        drops = [[100.0 * (b - a) for b, a in zip(base, by_rate[r])] for r in rates]
        size = f", {sizes[int(layer)]} elements" if int(layer) < len(sizes) else ""
        label = f"{_layer_label(int(layer), record.get('layer_names') or [])}{size}: bound {record['bounds'][int(layer)]:g}"
        series[label] = ([100.0 * float(r) for r in rates], [float(np.mean(d)) for d in drops],
                         [float(np.std(d, ddof=1)) if len(d) > 1 else 0.0 for d in drops])
    filling = (record.get("settings") or {}).get("hole_fill", "?")
    trained = config.params.get("training_hole_fill", "?")
    return plots.lines(series, path, "chunk loss injected into this layer alone (%)",
                       "accuracy drop vs loss-free (points)",
                       f"PLOT profile, holes filled with {filling} (the jobs: {trained})\n"
                       f"mean ± sd over seeds {record.get('seeds')}, paired with the loss-free run",
                       level=(100.0 * float(record.get("tolerance", 0.0)), "tolerance"))
