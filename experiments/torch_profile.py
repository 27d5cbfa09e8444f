"""PLOT's per-layer loss-tolerance profile of a PyTorch model, in process, with zero filling.

For each transport layer (a parameter) alone, every worker's pushed gradient loses each chunk
of that layer with probability r (Bernoulli, chunks as the agents cut them); the parameter
server fills the holes with zero (PLOT's strictest filling: a lost contribution counts as 0 in
the mean over all workers), takes the agents' momentum-SGD step, and the workers train on. The
final test accuracy is compared with the loss-free run of the same seed (same data, shards,
batches and initialisation: paired). A layer's tolerance is the largest rate r such that at r
and at every smaller rate the mean accuracy drop over the seeds stays within --tolerance (0.5
point), 0 when even the smallest rate does not (as `experiments.plot_profile` decides it for
the NumPy models). No pull loss: the profile isolates the push.

Writes OUT/profile.json (every accuracy and drop, the tolerances, the command), OUT/profile.png
(drop per layer and rate; tolerance per layer) and OUT/summary.md.
Run: python -m experiments.torch_profile --model resnet --out DIR [--seeds 1,2] [--rates ...]
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import time
from pathlib import Path

import numpy as np

from hosts.errors import ConfigError
from hosts.training import dataset
from hosts.training.aggregate import PushAggregator
from hosts.training.mlp import MomentumSGD
from hosts.training.models import TORCH_KINDS, ModelSpec, parse_hidden
from hosts.transport.chunking import ChunkPlan
from hosts.transport.holes import HoleFill

DEFAULT_RATES = (0.1, 0.3, 0.5, 0.8)
DEFAULT_TOLERANCE = 0.005


def train(spec: ModelSpec, seed: int, workers: int, batch: int, rounds: int, lr: float,
          momentum: float, chunk_elems: int, layer: int | None = None, rate: float = 0.0) -> float:
    """Final test accuracy of one run; `layer` loses its chunks at `rate` in every push."""
    data = spec.load_data(seed)
    model = spec.build(data.num_features, data.num_classes, seed)
    plan = ChunkPlan(model.layer_sizes(), chunk_elems)
    shards = [dataset.shard(data, rank, workers) for rank in range(workers)]
    per_epoch = dataset.rounds_per_epoch(data, workers, batch)
    optimizer = MomentumSGD(lr, momentum)
    aggregator = PushAggregator(HoleFill.ZERO)
    drops = np.random.default_rng([seed, 7, 0 if layer is None else layer + 1, int(rate * 1000)])
    for rnd in range(rounds):
        values, delivered = {}, {}
        for rank, (x, y) in enumerate(shards):
            idx = dataset.batch_indices(len(y), batch, rnd, per_epoch, seed, rank)
            _, grads = model.loss_and_gradients(x[idx], y[idx])
            masks = [np.ones(n, dtype=bool) for n in plan.layer_sizes]
            if layer is not None:
                lost = drops.random(plan.chunk_counts[layer]) < rate
                masks[layer] = np.repeat(~lost, chunk_elems)[:plan.layer_sizes[layer]]
            values[rank], delivered[rank] = grads, masks
        model.set_flat(optimizer.step(model.get_flat(), aggregator.aggregate(values, delivered)))
    return model.evaluate(data.x_test, data.y_test)[1]


def tolerance_of(drops: dict[float, float], tolerance: float) -> float:
    """The largest rate whose drop and every smaller rate's stay within `tolerance`."""
    best = 0.0
    for rate in sorted(drops):
        if drops[rate] > tolerance:
            break
        best = rate
    return best


def published_bounds(path: Path, spec: ModelSpec) -> tuple[list[float], dict]:
    """(bound per layer, profile record) from a profile.json this module wrote, for `spec`'s
    model: each parameter's tolerance is its bound, in the model's layer order. The record has
    the shape `experiments.plot_profile.Profile` gives plot_bounds (layers keyed by index, holes
    filled with zero) plus the profile's file and command. ConfigError (one line) when the file
    cannot be read, was made for another model, or lacks a layer."""
    try:
        doc = json.loads(Path(path).read_text())
        model, tolerances = doc["model"], doc["tolerances"]
        accuracy, drops = doc["accuracy"], doc["drops"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"published profile {path}: not a torch_profile profile.json ({exc})") from None
    wanted = spec.describe()
    if model != wanted:
        raise ConfigError(f"published profile {path} is of model {model}, the experiment trains {wanted}")
    names = wanted.get("layer_names", [])
    missing = [n for n in names if n not in tolerances]
    if missing:
        raise ConfigError(f"published profile {path} has no tolerance for {', '.join(missing)}")
    bounds = [float(tolerances[n]) for n in names]
    record = {"settings": {**doc.get("settings", {}), "hole_fill": "zero"}, "seeds": doc.get("seeds"),
              "rates": doc.get("rates", []), "tolerance": doc.get("tolerance"),
              "base_accuracy": doc.get("base_accuracy", []),
              "accuracy": {str(i): accuracy[n] for i, n in enumerate(names) if n in accuracy},
              "drops": {str(i): drops[n] for i, n in enumerate(names) if n in drops},
              "bounds": bounds, "layer_names": names, "elapsed_s": doc.get("elapsed_s", 0.0),
              "profile_file": str(path), "profile_command": doc.get("command")}
    return bounds, record


def plot(out: Path, names: list[str], rates: list[float], drops: list[dict[float, float]],
         tolerances: list[float], title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.array([[100 * d[r] for r in rates] for d in drops])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 0.32 * len(names) + 2.2),
                                   gridspec_kw={"width_ratios": [3, 2]}, sharey=True)
    limit = max(1.0, float(np.abs(grid).max()))
    im = ax1.imshow(grid, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
    ax1.set_xticks(range(len(rates)), [f"{r:.0%}" for r in rates])
    ax1.set_yticks(range(len(names)), names, fontsize=8)
    ax1.set_xlabel("chunk loss in this layer's push (zero filled)")
    for i in range(len(names)):
        for j in range(len(rates)):
            ax1.text(j, i, f"{grid[i, j]:.1f}", ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax1, label="accuracy drop (points) vs loss-free, mean over seeds")
    ax2.barh(range(len(names)), [100 * t for t in tolerances], color="tab:green")
    ax2.set_xlabel("tolerance (largest loss rate within 0.5 point), %")
    ax2.set_xlim(0, 100 * max(rates) * 1.05)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def _numbers(text: str, kind: type, what: str) -> list:
    try:
        values = [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError(f"{what} {text!r} is not a comma-separated list") from None
    if not values:
        raise ConfigError(f"{what} is empty")
    return values


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.torch_profile",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet", choices=TORCH_KINDS)
    ap.add_argument("--hidden", default="64")
    ap.add_argument("--filters", type=int, default=16)
    ap.add_argument("--out", required=True, help="directory for profile.json, .png, summary.md")
    ap.add_argument("--layers", help="comma-separated fnmatch patterns: profile only the "
                                     "parameters whose names match one (default: every one)")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--rates", default=",".join(map(str, DEFAULT_RATES)))
    ap.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=120)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--chunk-elems", type=int, default=64)
    args = ap.parse_args(argv)
    try:
        spec = ModelSpec(args.model, parse_hidden(args.hidden), args.filters)
        seeds = _numbers(args.seeds, int, "--seeds")
        rates = sorted(_numbers(args.rates, float, "--rates"))
        if not all(0 < r < 1 for r in rates):
            raise ConfigError("--rates must lie in (0, 1)")
        if min(args.workers, args.batch, args.rounds, args.chunk_elems) < 1:
            raise ConfigError("--workers, --batch, --rounds and --chunk-elems must be positive")
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
    except (ConfigError, OSError) as exc:
        print(f"experiments.torch_profile: error: {exc}", file=sys.stderr)
        return 2
    names = spec.layer_names()
    chosen = list(range(len(names)))
    if args.layers:
        patterns = [p.strip() for p in args.layers.split(",") if p.strip()]
        chosen = [i for i, n in enumerate(names) if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
        if not chosen:
            print(f"experiments.torch_profile: error: --layers {args.layers!r} matches no "
                  f"parameter of {args.model}", file=sys.stderr)
            return 2
    common = dict(workers=args.workers, batch=args.batch, rounds=args.rounds, lr=args.lr,
                  momentum=args.momentum, chunk_elems=args.chunk_elems)
    started = time.monotonic()
    base = {s: train(spec, s, **common) for s in seeds}
    accuracy: dict[str, dict[str, list[float]]] = {}
    drops: list[dict[float, float]] = []
    for layer in chosen:
        name = names[layer]
        accuracy[name] = {}
        per_rate = {}
        for rate in rates:
            runs = [train(spec, s, layer=layer, rate=rate, **common) for s in seeds]
            accuracy[name][str(rate)] = runs
            per_rate[rate] = float(np.mean([base[s] - a for s, a in zip(seeds, runs)]))
            print(f"{name} {rate:.0%}: drop {100 * per_rate[rate]:+.2f} points", flush=True)
        drops.append(per_rate)
    tolerances = [tolerance_of(d, args.tolerance) for d in drops]
    sizes = [spec.build(*_shape(spec), seeds[0]).layer_sizes()[i] for i in chosen]
    names = [names[i] for i in chosen]
    command = "python -m experiments.torch_profile " + " ".join(argv if argv is not None else sys.argv[1:])
    doc = {"command": command, "model": spec.describe(), "settings": common, "seeds": seeds,
           "rates": rates, "tolerance": args.tolerance,
           "base_accuracy": [base[s] for s in seeds], "accuracy": accuracy,
           "drops": {n: {str(r): d[r] for r in rates} for n, d in zip(names, drops)},
           "tolerances": dict(zip(names, tolerances)),
           "elapsed_s": round(time.monotonic() - started, 1)}
    (out / "profile.json").write_text(json.dumps(doc, indent=1) + "\n")
    plot(out / "profile.png", names, rates, drops, tolerances,
         f"{args.model}: per-layer tolerance to push loss, zero filled (seeds {args.seeds}, "
         f"{args.rounds} rounds, {args.workers} workers)")
    hi = max(range(len(names)), key=lambda i: tolerances[i])
    lo = min(range(len(names)), key=lambda i: tolerances[i])
    lines = [f"# Per-layer loss tolerance of `{args.model}` (PyTorch), zero filling, in process", "",
             f"Command: `{command}` (seeds {args.seeds}; {doc['elapsed_s']} s).", "",
             f"Loss-free accuracy per seed: {', '.join(f'{100 * base[s]:.2f} %' for s in seeds)}.",
             f"Widest gap: `{names[hi]}` tolerates {tolerances[hi]:.0%}, `{names[lo]}` "
             f"{tolerances[lo]:.0%} ({100 * (tolerances[hi] - tolerances[lo]):.0f} points).", "",
             "| layer | elements | " + " | ".join(f"drop at {r:.0%}" for r in rates) + " | tolerance |",
             "|---|---|" + "---|" * len(rates) + "---|"]
    for name, size, d, t in zip(names, sizes, drops, tolerances):
        lines.append(f"| `{name}` | {size} | " + " | ".join(f"{100 * d[r]:+.2f}" for r in rates)
                     + f" | {t:.0%} |")
    lines += ["", "Drops in accuracy points (loss-free minus lossy, mean over the seeds); "
              "![profile](profile.png)", ""]
    (out / "summary.md").write_text("\n".join(lines))
    print(f"wrote {out}/profile.json, profile.png, summary.md")
    return 0


def _shape(spec: ModelSpec) -> tuple[int, int]:
    data = spec.load_data(1)
    return data.num_features, data.num_classes


if __name__ == "__main__":
    sys.exit(main())
