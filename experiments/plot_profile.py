"""PLOT's profiler: a loss bound per layer from real training, written as a gradlane policy file.

For each layer alone, inject chunk loss at each rate (1, 2, 5, 10, 20 % by default) while
training the network experiment's model in process (`experiments.lossy_training`: same model,
data, minibatches, chunking and bound repair as the agents; lost elements filled with zero, as
PLOT's profile does, whatever the training's own filling), over several seeds, and compare
the final test accuracy with the loss-free run of the same seed (paired). A layer's bound is
the largest rate r such that at r and at every smaller rate the mean accuracy drop over the
seeds stays within the tolerance (0.5 point); 0 (must deliver) when even the smallest rate
does not. Requiring every smaller rate to pass too keeps one lucky high rate from winning
over a failing lower one, and makes the bound monotone in the measured drops.

The policy gives each layer one rule over all magnitude classes: `loss_bound` = its bound,
`pull_bound` = a quarter of it (the hosts' default pull bound, so switch and hosts agree),
priority front layers first (DLCP), drop eligible unless the bound is 0. It loads with
`controller.policy.load_policy`, so `gradctl policy apply FILE` accepts it.

Run: python -m experiments.plot_profile --out policy.yaml [--seeds 1,2,3,4,5] [--jobs 1-9] ...
     python -m experiments.plot_profile --out policy.yaml --config experiments/configs/plot_bounds.yaml
     python -m experiments.plot_profile --out cnn.yaml --model cnn --filters 16 --hidden 32 ...
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Sequence

import numpy as np
import yaml

from controller.errors import PolicyError
from controller.policy import DEFAULT_DROP_THRESHOLD, parse_policy
from experiments.config import ExperimentConfig
from experiments.lossy_training import TrainSettings, layer_count, settings_from_config, train
from hosts.errors import ConfigError as HostsConfigError
from hosts.training.models import MODEL_KINDS, ModelSpec
from p4target.atomic_files import write_text

DEFAULT_RATES = (0.01, 0.02, 0.05, 0.10, 0.20)
DEFAULT_TOLERANCE = 0.005          # 0.5 accuracy point
DEFAULT_SEEDS = (1, 2, 3, 4, 5)
FRONT_PRIORITY = 6                 # queue 7 carries the gradient control kinds
LOWEST_PRIORITY = 1                # queue 0 is ordinary (background) traffic
# PLOT measures a layer's tolerance with its lost elements set to zero: the strictest filling,
# which the training's own filling (e.g. mean-delivered) can only soften.
PROFILE_HOLE_FILL = "zero"


class ProfileError(ValueError):
    """A bad profiler input; str() is one line naming it."""


@dataclass
class Profile:
    """What the profiler measured and chose; JSON-able via `to_json`."""

    settings: dict
    seeds: list[int]
    rates: list[float]
    tolerance: float
    base_accuracy: list[float]                       # per seed, loss-free
    accuracy: dict[str, dict[str, list[float]]]      # layer -> rate -> per seed
    lost_fraction: dict[str, dict[str, float]]       # layer -> rate -> mean push loss delivered
    drops: dict[str, dict[str, float]]               # layer -> rate -> mean paired drop
    bounds: list[float]
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict) -> "Profile":
        return cls(**doc)

    def inputs(self) -> dict:
        """What determines the result (the cache key of a profile)."""
        return {"settings": self.settings, "seeds": self.seeds, "rates": self.rates,
                "tolerance": self.tolerance}


def profile_settings(config: ExperimentConfig) -> TrainSettings:
    """The settings a profile of this experiment trains with: the network jobs' training
    (`lossy_training.settings_from_config`) with holes filled by `params.profile.hole_fill`
    (default zero, as PLOT's profile), whatever filling the jobs themselves use."""
    options = config.params.get("profile") or {}
    return replace(settings_from_config(config), hole_fill=str(options.get("hole_fill", PROFILE_HOLE_FILL)))


def profile_inputs(settings: TrainSettings, seeds: Sequence[int], rates: Sequence[float],
                   tolerance: float) -> dict:
    """The inputs record of a profile that would run with these arguments."""
    return {"settings": settings.describe(), "seeds": list(seeds), "rates": list(rates),
            "tolerance": tolerance}


def choose_bound(drops: dict[float, float], tolerance: float) -> float:
    """The largest rate whose mean accuracy drop, and that of every smaller rate, is within
    `tolerance`; 0.0 if the smallest rate already exceeds it."""
    best = 0.0
    for rate in sorted(drops):
        if drops[rate] > tolerance + 1e-12:
            break
        best = rate
    return best


def run_profile(settings: TrainSettings, seeds: Sequence[int] = DEFAULT_SEEDS,
                rates: Sequence[float] = DEFAULT_RATES, tolerance: float = DEFAULT_TOLERANCE,
                progress: bool = False) -> Profile:
    """Train loss-free and with each (layer, rate) for every seed; choose every layer's bound."""
    check_inputs(seeds, rates, tolerance)
    started = time.monotonic()
    base = [train(settings, seed).accuracy for seed in seeds]
    accuracy: dict[str, dict[str, list[float]]] = {}
    lost: dict[str, dict[str, float]] = {}
    drops: dict[str, dict[str, float]] = {}
    bounds = []
    for layer in range(layer_count(settings)):
        accuracy[str(layer)], lost[str(layer)], drops[str(layer)] = {}, {}, {}
        for rate in rates:
            outcomes = [train(settings, seed, {layer: rate}) for seed in seeds]
            accs = [o.accuracy for o in outcomes]
            accuracy[str(layer)][str(rate)] = accs
            lost[str(layer)][str(rate)] = float(np.mean([o.push_lost_fraction[layer] for o in outcomes]))
            drops[str(layer)][str(rate)] = float(np.mean([b - a for b, a in zip(base, accs)]))
            if progress:
                print(f"plot_profile: layer {layer} loss {rate:.0%}: accuracy drop "
                      f"{drops[str(layer)][str(rate)] * 100:+.2f} points "
                      f"(loss delivered {lost[str(layer)][str(rate)]:.2%})", file=sys.stderr)
        bounds.append(choose_bound({float(r): d for r, d in drops[str(layer)].items()}, tolerance))
    return Profile(settings.describe(), list(seeds), list(rates), tolerance, base, accuracy, lost,
                   drops, bounds, round(time.monotonic() - started, 3))


def check_inputs(seeds: Sequence[int], rates: Sequence[float], tolerance: float) -> None:
    """ProfileError naming the first bad input."""
    if not seeds:
        raise ProfileError("--seeds: at least one seed is needed")
    if not rates or any(not 0.0 < r < 1.0 for r in rates):
        raise ProfileError(f"--rates must be loss rates in (0, 1), got {list(rates)}")
    if not 0.0 <= tolerance < 1.0:
        raise ProfileError(f"--tolerance {tolerance} must be an accuracy fraction in [0, 1)")


def tensor_bound(bounds: Sequence[float], sizes: Sequence[int]) -> float:
    """One bound over the whole tensor with the per-layer bounds' total loss budget: the sum
    of bound x layer size over the tensor's size (rounded down to 1e-6, so never looser)."""
    if len(bounds) != len(sizes) or not sizes:
        raise ProfileError(f"{len(bounds)} bounds for {len(sizes)} layers")
    return math.floor(1e6 * sum(b * n for b, n in zip(bounds, sizes)) / sum(sizes)) / 1e6


def layer_priority(layer: int) -> int:
    """Front layers first (DLCP): layer 0 gets queue 6, each later layer one lower, down to 1."""
    return max(FRONT_PRIORITY - layer, LOWEST_PRIORITY)


def policy_document(bounds: Sequence[float], jobs: Sequence[int], pull_fraction: float = 0.25,
                    drop_threshold: int = DEFAULT_DROP_THRESHOLD, name: str = "plot",
                    prioritize: bool = True) -> dict:
    """A policy document: per job in `jobs`, one rule per layer with its bound (validated);
    `prioritize` False keeps the jobs' packets out of the priority queues (the job's ablation
    switch), so they share the default queue with other traffic."""
    if not jobs:
        raise ProfileError("at least one job id is needed")
    rules = [{"range": [layer, layer], "loss_bound": round(float(b), 6),
              "pull_bound": round(float(b) * pull_fraction, 6), "priority": layer_priority(layer),
              "drop_eligible": bool(b > 0)} for layer, b in enumerate(bounds)]
    doc = {"version": 1, "defaults": {"drop_threshold": drop_threshold, "mag_classes": [0, 7]},
           "jobs": [{"job": int(j), "name": f"{name}-{j}", "layers": [dict(r) for r in rules],
                     **({} if prioritize else {"prioritize": False})} for j in jobs]}
    try:
        parse_policy(doc)
    except PolicyError as exc:
        raise ProfileError(f"the policy would be refused: {exc}") from None
    return doc


class _NoAliasDumper(yaml.SafeDumper):
    """The policy loader refuses YAML aliases, so shared lists are written out each time."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def write_policy(path: str | Path, doc: dict, header: Sequence[str] = ()) -> None:
    """Write `doc` as YAML with `header` as comment lines (written whole: temp file, rename)."""
    path = Path(path)
    body = yaml.dump(doc, Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=None)
    text = "".join(f"# {line}\n" for line in header) + body
    write_text(path, text)


def policy_header(profile: Profile) -> list[str]:
    """Comment lines that record how the bounds were measured."""
    lines = ["PLOT per-layer loss bounds, profiled by `python -m experiments.plot_profile`.",
             f"model {profile.settings}",
             f"seeds {profile.seeds}, rates {profile.rates}, tolerance "
             f"{profile.tolerance * 100:g} accuracy points (mean paired drop)",
             f"loss-free accuracy {np.mean(profile.base_accuracy):.4f} (mean over seeds)"]
    for layer, row in profile.drops.items():
        cells = ", ".join(f"{float(r):.0%}: {d * 100:+.2f}" for r, d in row.items())
        lines.append(f"layer {layer}: drop in points {cells} -> bound {profile.bounds[int(layer)]:g}")
    return lines


def parse_jobs(text: str) -> list[int]:
    """'1-3,7' -> [1, 2, 3, 7]."""
    out: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            out.extend(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise ProfileError(f"--jobs {text!r} is not a list of job ids like 1-3,7") from None
    if not out or any(not 0 <= j <= 0xFFFF for j in out):
        raise ProfileError(f"--jobs {text!r}: job ids must be in 0..65535")
    return out


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ProfileError(f"{what} {text!r} is not a comma-separated list of numbers") from None


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ProfileError(f"{what} {text!r} is not a comma-separated list of integers") from None


def build_parser() -> argparse.ArgumentParser:
    d = TrainSettings()
    ap = argparse.ArgumentParser(prog="python -m experiments.plot_profile",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="policy file to write (YAML)")
    ap.add_argument("--profile-json", help="also write the measurements here "
                                           "(default: the policy file's name + .profile.json)")
    ap.add_argument("--config", help="take the training settings, seeds, rates and tolerance from "
                                     "an experiment config (e.g. experiments/configs/plot_bounds.yaml); "
                                     "flags given explicitly still win")
    ap.add_argument("--jobs", default="1", help="job ids the policy covers, e.g. 1-9 (default 1)")
    ap.add_argument("--seeds", help="training seeds (data split, init, batches; default 1,2,3,4,5)")
    ap.add_argument("--rates", help="loss rates injected into one layer at a time "
                                    "(default 0.01,0.02,0.05,0.1,0.2)")
    ap.add_argument("--tolerance", type=float,
                    help="allowed mean accuracy drop (fraction; default 0.005 = 0.5 point)")
    g = ap.add_argument_group("training (as the network experiment's agents)")
    g.add_argument("--model", default=d.model, choices=MODEL_KINDS)
    g.add_argument("--hidden", default=",".join(map(str, d.hidden)))
    g.add_argument("--filters", type=int, default=d.filters, help="cnn: convolution kernels")
    g.add_argument("--workers", type=int, default=d.workers)
    g.add_argument("--batch", type=int, default=d.batch)
    g.add_argument("--rounds", type=int, default=d.rounds)
    g.add_argument("--lr", type=float, default=d.lr)
    g.add_argument("--momentum", type=float, default=d.momentum)
    g.add_argument("--chunk-elems", type=int, default=d.chunk_elems)
    g.add_argument("--hole-fill", default=PROFILE_HOLE_FILL, choices=("zero", "previous", "mean-delivered"),
                   help=f"push hole filling while profiling (default {PROFILE_HOLE_FILL}, as PLOT)")
    return ap


def settings_from_args(args: argparse.Namespace) -> TrainSettings:
    hidden = tuple(_ints(args.hidden, "--hidden"))
    if not hidden:
        raise ProfileError(f"--hidden {args.hidden!r}: at least one width is needed")
    try:
        ModelSpec(args.model, hidden, args.filters)
    except HostsConfigError as exc:
        raise ProfileError(str(exc)) from None
    for name in ("workers", "batch", "rounds", "chunk_elems"):
        if getattr(args, name) < 1:
            raise ProfileError(f"--{name.replace('_', '-')} must be at least 1")
    if not args.lr > 0 or not 0 <= args.momentum < 1:
        raise ProfileError("--lr must be positive and --momentum in [0, 1)")
    return TrainSettings(hidden=hidden, model=args.model, filters=args.filters, workers=args.workers,
                         batch=args.batch, rounds=args.rounds, lr=args.lr, momentum=args.momentum,
                         chunk_elems=args.chunk_elems, hole_fill=args.hole_fill)


def _from_experiment(path: str, argv: Sequence[str], args: argparse.Namespace) -> tuple[
        TrainSettings, dict]:
    """Settings and profile options of an experiment config; explicit training flags win."""
    from experiments import config as configs
    from experiments.errors import ConfigError
    try:
        cfg = configs.load(path)
    except ConfigError as exc:
        raise ProfileError(str(exc)) from None
    settings = profile_settings(cfg)
    given = {a.split("=")[0] for a in argv if a.startswith("--")}
    changes = {name: getattr(settings_from_args(args), name) for name in TrainSettings.__dataclass_fields__
               if f"--{name.replace('_', '-')}" in given}
    return replace(settings, **changes), dict(cfg.params.get("profile") or {})


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        options: dict = {}
        if args.config:
            settings, options = _from_experiment(args.config, argv, args)
        else:
            settings = settings_from_args(args)
        jobs = parse_jobs(args.jobs)
        seeds = (_ints(args.seeds, "--seeds") if args.seeds is not None
                 else [int(x) for x in options.get("seeds", DEFAULT_SEEDS)])
        rates = (_floats(args.rates, "--rates") if args.rates is not None
                 else [float(x) for x in options.get("rates", DEFAULT_RATES)])
        tolerance = (args.tolerance if args.tolerance is not None
                     else float(options.get("tolerance", DEFAULT_TOLERANCE)))
        check_inputs(seeds, rates, tolerance)
        out = Path(args.out)
        if not out.parent.is_dir():
            raise ProfileError(f"--out {out}: directory {out.parent} does not exist")
        profile = run_profile(settings, seeds, rates, tolerance, progress=True)
        doc = policy_document(profile.bounds, jobs, settings.pull_fraction)
        write_policy(out, doc, policy_header(profile))
        side = Path(args.profile_json) if args.profile_json else out.with_name(out.name + ".profile.json")
        side.write_text(json.dumps(profile.to_json(), indent=1) + "\n")
    except ProfileError as exc:
        print(f"plot_profile: error: {exc}", file=sys.stderr)
        return 2
    print(f"plot_profile: bounds per layer {profile.bounds} -> {out} (measurements: {side}; "
          f"{profile.elapsed_s:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
