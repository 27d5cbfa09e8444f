"""In-process data-parallel training with loss injected into chosen layers, with the transport's
semantics: what the network training job does (hosts/ps.py, hosts/worker.py), minus the network.

Same model (`hosts.training.models`), data, shards and minibatches (`hosts.training.dataset`), PS
aggregation and push hole fill (`hosts.training.aggregate`), pull hole fill (`keep_previous`),
chunking (`hosts.transport.chunking.ChunkPlan`) and drop decisions (`hosts.loss_model.LossModel`).
What a lossy layer looks like after the transport: every chunk is dropped with the injected
probability; the sender then resends missing chunks (in random order) until the receiver's
bound is met, i.e. at most `bound` of the layer's elements stay missing when it closes
(`TensorBuffer.meets`). So the loss that reaches training is the loss the bound admits; a
layer of one MTU-sized chunk, for example, loses nothing at any bound below 100 %.
The pull stage of a lossy layer is treated alike with the hosts' pull bound (a quarter of the
push bound, `hosts.transport.bounds.DEFAULT_PULL_FRACTION`); pull holes keep each worker's
previous parameters, as the worker agent does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from hosts.loss_model import LossModel
from hosts.training import dataset
from hosts.training.aggregate import PushAggregator
from hosts.training.mlp import MomentumSGD
from hosts.training.models import ModelSpec, parse_hidden
from hosts.transport.bounds import DEFAULT_PULL_FRACTION
from hosts.transport.chunking import ChunkPlan
from hosts.transport.holes import HoleFill, keep_previous

if TYPE_CHECKING:
    from experiments.config import ExperimentConfig


@dataclass(frozen=True)
class TrainSettings:
    """The training job as the network experiment runs it (the agents' flags)."""

    hidden: tuple[int, ...] = (128, 64, 32)
    workers: int = 3
    batch: int = 32
    rounds: int = 60
    lr: float = 0.1
    momentum: float = 0.9
    chunk_elems: int = 360
    hole_fill: str = "mean-delivered"
    pull_fraction: float = DEFAULT_PULL_FRACTION
    model: str = "mlp"               # hosts.training.models.MODEL_KINDS
    filters: int = 16                # cnn only

    def spec(self) -> ModelSpec:
        """The model these settings train (ConfigError on bad widths)."""
        return ModelSpec(self.model, self.hidden, self.filters)

    def describe(self) -> dict:
        """A JSON-able record of the settings (kept with every profile)."""
        out = {"hidden": list(self.hidden), "workers": self.workers, "batch": self.batch,
               "rounds": self.rounds, "lr": self.lr, "momentum": self.momentum,
               "chunk_elems": self.chunk_elems, "hole_fill": self.hole_fill,
               "pull_fraction": self.pull_fraction}
        if self.model != "mlp":    # an MLP's record (and the cache key of its profiles) as before
            out.update(model=self.model, filters=self.filters)
        return out


def settings_from_config(config: "ExperimentConfig") -> TrainSettings:
    """The training of an experiment's network jobs (its first ltp arm's, else its first arm's):
    model, workers, batch, rounds, optimiser, chunking and the push hole fill its agents use."""
    arm = next((a for a in config.arms if a.transport == "ltp"), config.arms[0])
    model = config.model
    d = TrainSettings()
    flags = [*config.agent_args, *arm.agent_args]
    hole_fill = flags[flags.index("--hole-fill") + 1] if "--hole-fill" in flags[:-1] else d.hole_fill
    return TrainSettings(hidden=parse_hidden(model.hidden), model=model.kind, filters=model.filters,
                         workers=config.workers_of(arm), batch=model.batch,
                         rounds=config.rounds_of(arm),
                         lr=model.lr if model.lr is not None else d.lr,
                         momentum=model.momentum if model.momentum is not None else d.momentum,
                         chunk_elems=config.chunk_elems or 64, hole_fill=hole_fill,
                         pull_fraction=DEFAULT_PULL_FRACTION)


@dataclass
class TrainOutcome:
    """One in-process training run: final test accuracy, per-epoch accuracy, loss delivered."""

    accuracy: float
    accuracy_by_round: list[tuple[int, float]] = field(default_factory=list)
    push_lost_fraction: list[float] = field(default_factory=list)   # per layer, mean over rounds
    pull_lost_fraction: list[float] = field(default_factory=list)


def layer_count(settings: TrainSettings) -> int:
    """Transport layers of the model (one per weight tensor)."""
    return settings.spec().num_layers


def layer_sizes(settings: TrainSettings) -> list[int]:
    """Elements of each transport layer of the model."""
    return settings.spec().build(dataset.FEATURES, dataset.CLASSES, seed=0).layer_sizes()


class _LayerLoss:
    """Delivered masks of one stage: Bernoulli chunk drops, repaired down to the bound: each
    layer to its own (scope ``layer``) or the pooled budget of all lossy layers (``tensor``:
    any chunk may stay missing while the sum of bound x layer size holds; bound-0 layers whole)."""

    def __init__(self, plan: ChunkPlan, rates: dict[int, float], bounds: dict[int, float],
                 seed: int, scope: str = "layer") -> None:
        self.plan = plan
        self.rates = rates
        self.bounds = bounds
        self.scope = scope
        self.models = {layer: LossModel(rate, seed=seed * 7919 + layer)
                       for layer, rate in rates.items()}
        self._repair = np.random.default_rng([seed, 104729])

    def _repaired(self, missing: list[tuple[int, int]], allowed: float) -> list[tuple[int, int]]:
        """The missing (layer, chunk) left once the sender resent random ones until at most
        `allowed` elements stay missing."""
        missing_elems = sum(self.plan.length(layer, seq) for layer, seq in missing)
        kept = list(missing)
        for idx in self._repair.permutation(len(missing)):
            if missing_elems <= allowed + 1e-9:
                break
            missing_elems -= self.plan.length(*missing[idx])
            kept[idx] = (-1, -1)
        return [m for m in kept if m[0] >= 0]

    def masks(self) -> tuple[list[np.ndarray], list[float]]:
        """Per layer, the delivered element mask and the lost fraction."""
        dropped = {layer: [(layer, seq) for seq in range(self.plan.chunk_counts[layer]) if model.drop(0.0)]
                   for layer, model in sorted(self.models.items())}
        sizes = self.plan.layer_sizes
        if self.scope == "tensor":
            pooled = [m for layer, ms in dropped.items() if self.bounds[layer] > 0 for m in ms]
            budget = sum(self.bounds[layer] * sizes[layer] for layer in dropped)
            missing = self._repaired(pooled, budget)
        else:
            missing = [m for layer, ms in dropped.items()
                       for m in self._repaired(ms, self.bounds[layer] * sizes[layer])]
        masks = [np.ones(size, dtype=bool) for size in sizes]
        for layer, seq in missing:
            off = self.plan.offset(layer, seq)
            masks[layer][off:off + self.plan.length(layer, seq)] = False
        return masks, [1.0 - float(mask.mean()) for mask in masks]


def train(settings: TrainSettings, seed: int, loss: dict[int, float] | None = None,
          bounds: dict[int, float] | None = None, eval_every: int = 0,
          scope: str = "layer") -> TrainOutcome:
    """Train like the network job with `seed` (data split, init, batches: the agents' --seed).

    `loss` maps a layer to the drop probability of its chunks (push; the pull gets
    `pull_fraction` of it); `bounds` maps it to the push bound the transport enforces (default:
    the drop probability), per layer or, with `scope` ``tensor``, pooled over the lossy layers
    (the agents' --bound-scope). `eval_every` > 0 also records test accuracy every that many rounds.
    """
    loss = dict(loss or {})
    bounds = dict(bounds) if bounds is not None else dict(loss)
    data = dataset.load(seed)
    spec = settings.spec()
    ps_model = spec.build(data.num_features, data.num_classes, seed)
    workers = [spec.build(data.num_features, data.num_classes, seed) for _ in range(settings.workers)]
    shards = [dataset.shard(data, rank, settings.workers) for rank in range(settings.workers)]
    per_epoch = dataset.rounds_per_epoch(data, settings.workers, settings.batch)
    plan = ChunkPlan(ps_model.layer_sizes(), settings.chunk_elems)
    optimizer = MomentumSGD(settings.lr, settings.momentum)
    aggregator = PushAggregator(HoleFill.parse(settings.hole_fill))
    pull_rates = {k: v * settings.pull_fraction for k, v in loss.items()}
    pull_bounds = {k: bounds[k] * settings.pull_fraction for k in loss}
    push_loss = [_LayerLoss(plan, loss, bounds, seed * 1000 + rank, scope)
                 for rank in range(settings.workers)]
    pull_loss = [_LayerLoss(plan, pull_rates, pull_bounds, seed * 1000 + 500 + rank, scope)
                 for rank in range(settings.workers)]
    push_lost = np.zeros(plan.num_layers)
    pull_lost = np.zeros(plan.num_layers)
    curve: list[tuple[int, float]] = []
    for rnd in range(settings.rounds):
        values: dict[int, list[np.ndarray]] = {}
        delivered: dict[int, list[np.ndarray]] = {}
        for rank, (x, y) in enumerate(shards):
            idx = dataset.batch_indices(len(y), settings.batch, rnd, per_epoch, seed, rank)
            _, grads = workers[rank].loss_and_gradients(x[idx], y[idx])
            masks, lost = push_loss[rank].masks()
            values[rank], delivered[rank] = grads, masks
            push_lost += lost
        grads = aggregator.aggregate(values, delivered)
        params = optimizer.step(ps_model.get_flat(), grads)
        ps_model.set_flat(params)
        for rank, worker in enumerate(workers):
            masks, lost = pull_loss[rank].masks()
            pull_lost += lost
            worker.set_flat([keep_previous(v, d, p)
                             for v, d, p in zip(params, masks, worker.get_flat())])
        if eval_every and (rnd + 1) % eval_every == 0:
            curve.append((rnd + 1, ps_model.evaluate(data.x_test, data.y_test)[1]))
    _, accuracy = ps_model.evaluate(data.x_test, data.y_test)
    scale = settings.rounds * settings.workers
    return TrainOutcome(accuracy, curve, list(push_lost / scale), list(pull_lost / scale))
