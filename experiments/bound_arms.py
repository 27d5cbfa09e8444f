"""PLOT's bound arms in process, before any network: does holding each layer to its own bound
keep accuracy that one bound over the whole tensor (with the same total loss budget) gives
away, and how much more may the per-layer arm leave missing than one uniform bound?

Every layer's chunks are dropped at the same rate (congestion does not pick layers); the sender
then resends missing chunks until the arm's bound is met (`experiments.lossy_training`):
- per_layer: the profiled bounds, each layer to its own;
- uniform: their minimum on every layer (PLOT's baseline);
- tensor: one bound over the whole tensor with the per-layer bounds' total loss budget
  (`plot_profile.tensor_bound`; any chunk may be the missing one, as LTP and MLT);
and the final test accuracy is compared with the loss-free run of the same seed (paired).
Holes are filled as the config's network jobs fill them (`--hole-fill` to change it).
What an arm leaves missing is what it need not wait for: the more, the sooner a push closes.

Run: python -m experiments.bound_arms --config experiments/configs/plot_bounds_cnn.yaml \
         [--bounds 0.5,0.1,0.5] [--rates 0.2,0.5] [--seeds 1,2,3,4,5] [--out arms.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from experiments import plot_profile
from experiments.lossy_training import TrainSettings, layer_sizes, settings_from_config, train

ARMS = ("per_layer", "uniform", "tensor")
DEFAULT_RATES = (0.2, 0.5)
DEFAULT_SEEDS = (1, 2, 3, 4, 5)


@dataclass
class ArmOutcome:
    """One arm at one injected loss rate, over the seeds."""

    arm: str
    rate: float
    bounds: list[float]
    scope: str
    accuracy: list[float]          # per seed
    drop_points: list[float]       # per seed, loss-free minus this arm, in accuracy points
    lost_by_layer: list[float]     # mean push fraction left missing per layer
    lost_tensor: float             # mean push fraction of the whole tensor left missing


def arm_bounds(arm: str, per_layer: Sequence[float], sizes: Sequence[int]) -> tuple[list[float], str]:
    """(push bound per layer, scope) of an arm."""
    if arm == "per_layer":
        return [float(b) for b in per_layer], "layer"
    if arm == "uniform":
        return [float(min(per_layer))] * len(per_layer), "layer"
    if arm == "tensor":
        return [plot_profile.tensor_bound(per_layer, sizes)] * len(per_layer), "tensor"
    raise plot_profile.ProfileError(f"unknown arm {arm!r} (known: {', '.join(ARMS)})")


def compare(settings: TrainSettings, per_layer: Sequence[float], rates: Sequence[float],
            seeds: Sequence[int]) -> dict:
    """Train every arm at every rate for every seed; a JSON-able record."""
    sizes = layer_sizes(settings)
    if len(per_layer) != len(sizes):
        raise plot_profile.ProfileError(f"{len(per_layer)} bounds for a model of {len(sizes)} layers")
    started = time.monotonic()
    base = [train(settings, seed).accuracy for seed in seeds]
    outcomes = []
    for rate in rates:
        for arm in ARMS:
            bounds, scope = arm_bounds(arm, per_layer, sizes)
            loss = {layer: rate for layer in range(len(sizes))}
            runs = [train(settings, seed, loss, dict(enumerate(bounds)), scope=scope) for seed in seeds]
            lost = np.mean([r.push_lost_fraction for r in runs], axis=0)
            outcomes.append(ArmOutcome(
                arm, float(rate), bounds, scope, [r.accuracy for r in runs],
                [100.0 * (b - r.accuracy) for b, r in zip(base, runs)], [float(x) for x in lost],
                float(np.dot(lost, sizes) / sum(sizes))))
    return {"settings": settings.describe(), "layer_sizes": sizes, "per_layer_bounds": list(per_layer),
            "seeds": list(seeds), "rates": list(rates), "base_accuracy": base,
            "arms": [asdict(o) for o in outcomes], "elapsed_s": round(time.monotonic() - started, 3)}


def markdown(record: dict) -> str:
    """The comparison as a markdown table."""
    lines = ["| injected loss | arm | scope | push bounds | left missing per layer | of the tensor "
             "| accuracy | drop (points, mean ± sd) |", "|---|---|---|---|---|---|---|---|"]
    for o in record["arms"]:
        drops = np.array(o["drop_points"])
        lines.append(f"| {o['rate']:.0%} | {o['arm']} | {o['scope']} | "
                     f"{', '.join(f'{b:g}' for b in o['bounds'])} | "
                     f"{', '.join(f'{x:.1%}' for x in o['lost_by_layer'])} | {o['lost_tensor']:.1%} | "
                     f"{np.mean(o['accuracy']):.4f} | {drops.mean():+.2f} ± {drops.std(ddof=1) if len(drops) > 1 else 0:.2f} |")
    return "\n".join(lines) + "\n"


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise plot_profile.ProfileError(f"{what} {text!r} is not a comma-separated list of numbers") from None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.bound_arms", description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="a plot_bounds config (model, training, profile)")
    ap.add_argument("--bounds", help="per-layer bounds (default: the config's profile, cached or made now)")
    ap.add_argument("--rates", default=",".join(map(str, DEFAULT_RATES)),
                    help="chunk loss injected into every layer (default 0.2,0.5)")
    ap.add_argument("--seeds", default=",".join(map(str, DEFAULT_SEEDS)), help="training seeds")
    ap.add_argument("--hole-fill", choices=("zero", "previous", "mean-delivered"),
                    help="push hole filling (default: the config's jobs' own)")
    ap.add_argument("--out", help="also write the record here (JSON)")
    args = ap.parse_args(argv)
    from experiments import config as configs, plot_bounds
    from experiments.errors import ConfigError
    try:
        cfg = configs.load(args.config)
        settings = settings_from_config(cfg)
        if args.hole_fill:
            settings = replace(settings, hole_fill=args.hole_fill)
        if args.bounds:
            per_layer = _floats(args.bounds, "--bounds")
        else:
            per_layer, _ = plot_bounds.profiled_bounds(cfg, log=lambda m: print(m, file=sys.stderr))
        rates = _floats(args.rates, "--rates")
        seeds = [int(x) for x in _floats(args.seeds, "--seeds")]
        plot_profile.check_inputs(seeds, rates, 0.0)
        record = compare(settings, per_layer, rates, seeds)
    except (ConfigError, plot_profile.ProfileError) as exc:
        print(f"bound_arms: error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(f"model {record['settings']}, layer sizes {record['layer_sizes']}, loss-free accuracy "
          f"{np.mean(record['base_accuracy']):.4f} (seeds {record['seeds']}; {record['elapsed_s']:.0f} s)")
    print(markdown(record), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
