"""Declarative experiment configs: experiments/configs/NAME.yaml, validated into dataclasses.

A config names the topology and its parameters, the model, the arms (what differs between the
compared systems), rounds, repetitions and seed, plus a `quick:` block of overrides for smoke
runs. Users copy a file and pass it with `--config`. Every mistake is a ConfigError naming the
file and the key.
"""
from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from experiments.errors import ConfigError
from hosts.errors import ConfigError as HostsConfigError
from hosts.training.models import ModelSpec, parse_hidden

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
TRANSPORTS = ("ltp", "mlt", "tcp")
_ARM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


@dataclass(frozen=True)
class TopologySettings:
    """The network of an arm: a built-in topology of `topo.topologies` and its knobs. Arms whose
    settings are equal share one running network; a change restarts it."""

    name: str = "incast"
    workers: int = 3
    background: int = 0
    bottleneck_pps: float | None = 1000.0
    queue_depth: int = 64
    delay_ms: float = 0.0
    loss_pct: float = 0.0
    bw_mbps: float | None = None
    policy: str | None = "controller/policies/default.yaml"
    bursts: tuple[str, ...] = ()
    background_flows: int = 0       # ECN-capable TCP flows per background sender, started with the network
    background_cc: str = "reno"


@dataclass(frozen=True)
class ModelSettings:
    """The model trained on sklearn's digits (hosts/training/models.py) and its optimiser."""

    hidden: str = "64"              # comma-separated hidden widths (cnn: its dense layer's)
    batch: int = 32
    lr: float | None = None         # parameter server only; None = the agent's default
    momentum: float | None = None
    kind: str = "mlp"               # the agents' --model: mlp or cnn
    filters: int = 16               # cnn only: convolution kernels

    def _model_args(self) -> list[str]:
        if self.kind == "mlp":
            return []
        return ["--model", self.kind, "--filters", str(self.filters)]

    def ps_args(self) -> tuple[str, ...]:
        out = [*self._model_args(), "--hidden", self.hidden, "--batch", str(self.batch)]
        if self.lr is not None:
            out += ["--lr", f"{self.lr:g}"]
        if self.momentum is not None:
            out += ["--momentum", f"{self.momentum:g}"]
        return tuple(out)

    def worker_args(self) -> tuple[str, ...]:
        return (*self._model_args(), "--hidden", self.hidden, "--batch", str(self.batch))


@dataclass(frozen=True)
class Arm:
    """One compared system. `transport`, `tcp_cc`, `tcp_ecn`, `pace` and the agent flags apply to
    its training jobs; `topology` overrides the experiment's topology for this arm only; `params`
    is free-form, read by the experiment module."""

    name: str
    transport: str = "ltp"
    tcp_cc: str | None = None
    tcp_ecn: str | None = None
    pace: bool = False
    workers: int | None = None      # workers of the job (default: the topology's)
    rounds: int | None = None       # default: the experiment's rounds
    repetitions: int | None = None  # default: the experiment's (e.g. fewer for a side sweep)
    agent_args: tuple[str, ...] = ()    # PS and workers
    ps_args: tuple[str, ...] = ()
    worker_args: tuple[str, ...] = ()
    topology: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ExperimentConfig:
    """A validated experiment config (after the `quick:` overrides, when asked)."""

    name: str
    description: str = ""
    variant: str = ""               # a second config of the experiment: results go to NAME-VARIANT
    seed: int = 1
    repetitions: int = 3
    rounds: int = 50
    timeout_s: float = 300.0        # one training job's time limit
    chunk_elems: int | None = None  # float32 values per gradient packet (None: the agents' default)
    topology: TopologySettings = field(default_factory=TopologySettings)
    model: ModelSettings = field(default_factory=ModelSettings)
    agent_args: tuple[str, ...] = ()    # every arm's PS and workers
    arms: tuple[Arm, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    quick: dict[str, Any] = field(default_factory=dict)
    source: str = ""                # the file it came from
    is_quick: bool = False

    @property
    def label(self) -> str:
        """NAME, or NAME-VARIANT: where its results and published figures go."""
        return f"{self.name}-{self.variant}" if self.variant else self.name

    def arm(self, name: str) -> Arm:
        """The arm called `name`; ConfigError if there is none."""
        for arm in self.arms:
            if arm.name == name:
                return arm
        raise ConfigError(f"{self.source}: no arm named '{name}'")

    def topology_of(self, arm: Arm) -> TopologySettings:
        """The experiment's topology with the arm's overrides applied."""
        if not arm.topology:
            return self.topology
        merged = {**_topology_dict(self.topology), **arm.topology}
        return _build(TopologySettings, merged, f"{self.source}: arms[{arm.name}].topology")

    def rounds_of(self, arm: Arm) -> int:
        return arm.rounds or self.rounds

    def repetitions_of(self, arm: Arm) -> int:
        """The arm's repetitions, at most the experiment's (so --reps N caps every arm)."""
        return min(arm.repetitions or self.repetitions, self.repetitions)

    def workers_of(self, arm: Arm) -> int:
        return arm.workers or self.topology_of(arm).workers


def default_path(name: str, variant: str = "") -> Path:
    """experiments/configs/NAME.yaml, or NAME_VARIANT.yaml for a variant (a hyphen in the
    variant, which names the results directory, is an underscore in the file's name)."""
    return CONFIG_DIR / (f"{name}_{variant.replace('-', '_')}.yaml" if variant else f"{name}.yaml")


def load(path: str | Path, quick: bool = False, overrides: dict[str, Any] | None = None) -> ExperimentConfig:
    """Read and validate a config file; `quick` applies its `quick:` block, `overrides` (e.g.
    {'repetitions': 5}) are applied last."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}: not valid YAML") from None
    return from_dict(raw, str(path), quick, overrides)


def from_dict(raw: Any, source: str, quick: bool = False,
              overrides: dict[str, Any] | None = None) -> ExperimentConfig:
    """Validate a parsed config (see load)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: a config is a mapping of keys (name, arms, ...)")
    data = copy.deepcopy(raw)
    quick_block = data.get("quick") or {}
    if not isinstance(quick_block, dict):
        raise ConfigError(f"{source}: quick: must be a mapping of overrides")
    if quick:
        data = _merge(data, quick_block)
    if overrides:
        data = _merge(data, overrides)
    only = data.pop("only_arms", None)
    data["source"] = source
    data["is_quick"] = quick
    cfg = _build(ExperimentConfig, data, source)
    if only is not None:
        if not isinstance(only, list) or not all(isinstance(n, str) for n in only):
            raise ConfigError(f"{source}: only_arms: must be a list of arm names")
        known = {a.name for a in cfg.arms}
        missing = [n for n in only if n not in known]
        if missing:
            raise ConfigError(f"{source}: only_arms: no arm named {', '.join(missing)}")
        cfg = _replace(cfg, arms=tuple(a for a in cfg.arms if a.name in only))
    _check(cfg)
    return cfg


def to_dict(cfg: ExperimentConfig) -> dict[str, Any]:
    """A plain mapping that `from_dict` reads back to an equal config (for config.yaml)."""
    out: dict[str, Any] = {}
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        if f.name in _SET_BY_LOADER:
            continue
        if f.name == "topology":
            value = _topology_dict(value)
        elif f.name == "model":
            value = {g.name: getattr(value, g.name) for g in fields(value)}
        elif f.name == "arms":
            value = [_arm_dict(a) for a in value]
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out


def save(cfg: ExperimentConfig, path: str | Path) -> None:
    """Write the effective config (quick overrides already applied; `quick:` kept for reference)."""
    data = to_dict(cfg)
    data["applied_quick"] = cfg.is_quick
    Path(path).write_text(yaml.safe_dump(data, sort_keys=False))


def load_saved(path: str | Path) -> ExperimentConfig:
    """Read a config.yaml written by `save` (for --resume)."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        raise ConfigError(f"{path}: missing or unreadable") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: not a saved experiment config")
    quick = bool(raw.pop("applied_quick", False))
    cfg = from_dict(raw, str(path), quick=False)
    return _replace(cfg, is_quick=quick)


# -- validation ---------------------------------------------------------------------------------

_SET_BY_LOADER = ("source", "is_quick")      # ExperimentConfig fields no file writes


def _build(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: must be a mapping")
    names = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(names))
    if unknown:
        known = [n for n in names if n not in _SET_BY_LOADER]
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(known)})")
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        kwargs[key] = _coerce(cls, key, value, f"{where}: {key}")
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _coerce(cls: type, key: str, value: Any, where: str) -> Any:
    kind = _FIELD_KINDS[cls].get(key, "any")
    optional = kind.endswith("?")
    kind = kind.rstrip("?")
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{where}: must not be empty")
    if kind == "str":
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(f"{where}: must be a string")
        return str(value)
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: {value!r} is not an integer")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{where}: {value!r} is not a number")
        return float(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {value!r} is not true/false")
        return value
    if kind == "strs":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
            raise ConfigError(f"{where}: must be a list of strings")
        return tuple(str(v) for v in value)
    if kind == "map":
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: must be a mapping")
        return dict(value)
    if kind == "topology":
        return _build(TopologySettings, value, where)
    if kind == "model":
        return _build(ModelSettings, value, where)
    if kind == "arms":
        if not isinstance(value, list) or not value:
            raise ConfigError(f"{where}: must be a non-empty list of arms")
        arms = []
        for i, item in enumerate(value):
            label = item.get("name", i) if isinstance(item, dict) else i
            arms.append(_build(Arm, item, f"{where}[{label}]"))
        return tuple(arms)
    return value


_FIELD_KINDS: dict[type, dict[str, str]] = {
    TopologySettings: dict(name="str", workers="int", background="int", bottleneck_pps="float?",
                           queue_depth="int", delay_ms="float", loss_pct="float", bw_mbps="float?",
                           policy="str?", bursts="strs", background_flows="int", background_cc="str"),
    ModelSettings: dict(hidden="str", batch="int", lr="float?", momentum="float?", kind="str",
                        filters="int"),
    Arm: dict(name="str", transport="str", tcp_cc="str?", tcp_ecn="str?", pace="bool", workers="int?",
              rounds="int?", repetitions="int?", agent_args="strs", ps_args="strs", worker_args="strs", topology="map",
              params="map"),
    ExperimentConfig: dict(name="str", description="str", variant="str", seed="int", repetitions="int", rounds="int",
                           timeout_s="float", chunk_elems="int?", topology="topology", model="model",
                           agent_args="strs", arms="arms", params="map", quick="map", source="str",
                           is_quick="bool"),
}


def _check(cfg: ExperimentConfig) -> None:
    src = cfg.source
    if not cfg.arms:
        raise ConfigError(f"{src}: arms: at least one arm is needed")
    if cfg.repetitions < 1 or cfg.rounds < 1:
        raise ConfigError(f"{src}: repetitions and rounds must be at least 1")
    if cfg.timeout_s <= 0:
        raise ConfigError(f"{src}: timeout_s must be positive")
    if cfg.variant and not _ARM_NAME.match(cfg.variant):
        raise ConfigError(f"{src}: variant may hold letters, digits and _ . + - only")
    if cfg.chunk_elems is not None and cfg.chunk_elems < 1:
        raise ConfigError(f"{src}: chunk_elems must be at least 1")
    if cfg.model.batch < 1:
        raise ConfigError(f"{src}: model.batch must be at least 1")
    try:
        ModelSpec(cfg.model.kind, parse_hidden(cfg.model.hidden), cfg.model.filters)
    except HostsConfigError as exc:
        raise ConfigError(f"{src}: model: {exc}") from None
    seen: set[str] = set()
    for arm in cfg.arms:
        where = f"{src}: arms[{arm.name}]"
        if not _ARM_NAME.match(arm.name):
            raise ConfigError(f"{where}: name may hold letters, digits and _ . + - only")
        if arm.name in seen:
            raise ConfigError(f"{where}: the name is used twice")
        seen.add(arm.name)
        if arm.transport not in TRANSPORTS:
            raise ConfigError(f"{where}: transport '{arm.transport}' is not one of {', '.join(TRANSPORTS)}")
        if arm.transport != "tcp" and (arm.tcp_cc or arm.tcp_ecn):
            raise ConfigError(f"{where}: tcp_cc and tcp_ecn need transport tcp")
        if arm.tcp_ecn not in (None, "on", "off"):
            raise ConfigError(f"{where}: tcp_ecn must be on or off")
        if arm.rounds is not None and arm.rounds < 1:
            raise ConfigError(f"{where}: rounds must be at least 1")
        if arm.repetitions is not None and arm.repetitions < 1:
            raise ConfigError(f"{where}: repetitions must be at least 1")
        topo = cfg.topology_of(arm)
        _check_topology(topo, f"{where}.topology" if arm.topology else f"{src}: topology")
        if arm.workers is not None and not 1 <= arm.workers <= topo.workers:
            raise ConfigError(f"{where}: workers {arm.workers} is outside 1..{topo.workers} (the topology's)")


def _check_topology(topo: TopologySettings, where: str) -> None:
    from controller.topologies import TOPOLOGIES

    if topo.name not in TOPOLOGIES:
        raise ConfigError(f"{where}: name '{topo.name}' is not one of {', '.join(sorted(TOPOLOGIES))}")
    if topo.workers < 1 or topo.background < 0 or topo.queue_depth < 1 or topo.background_flows < 0:
        raise ConfigError(f"{where}: need workers >= 1, background >= 0, queue_depth >= 1, background_flows >= 0")
    if topo.bottleneck_pps is not None and topo.bottleneck_pps <= 0:
        raise ConfigError(f"{where}: bottleneck_pps must be positive")
    if topo.delay_ms < 0 or not 0 <= topo.loss_pct <= 100:
        raise ConfigError(f"{where}: delay_ms must be >= 0 and loss_pct within 0..100")
    if topo.policy and not Path(topo.policy).is_file():
        raise ConfigError(f"{where}: policy file {topo.policy} not found")


def parse_settings(settings: list[str]) -> dict[str, Any]:
    """`KEY=VALUE` command-line overrides as a nested mapping: dotted keys name nested keys
    (`topology.loss_pct=1`), values are read as YAML (`1` an int, `[a, b]` a list)."""
    out: dict[str, Any] = {}
    for setting in settings:
        key, sep, text = setting.partition("=")
        parts = key.strip().split(".")
        if not sep or not all(parts):
            raise ConfigError(f"--set {setting!r}: expected KEY=VALUE, e.g. topology.loss_pct=1")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            raise ConfigError(f"--set {setting!r}: the value is not valid YAML") from None
        node = out
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"--set {setting!r}: {part} is set to a value and used as a section")
            node = child
        if isinstance(node.get(parts[-1]), dict):
            raise ConfigError(f"--set {setting!r}: {parts[-1]} is a section set key by key")
        node[parts[-1]] = value
    return out


def merge_overrides(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Overrides combined as `load` applies them (`extra` wins)."""
    return _merge(base, extra)


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Deep merge of mappings; lists and scalars in `extra` replace."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key != "arms":
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _topology_dict(topo: TopologySettings) -> dict[str, Any]:
    return {f.name: (list(v) if isinstance(v := getattr(topo, f.name), tuple) else v) for f in fields(topo)}


def _arm_dict(arm: Arm) -> dict[str, Any]:
    return {f.name: (list(v) if isinstance(v := getattr(arm, f.name), tuple) else v) for f in fields(arm)}


def _replace(cfg: ExperimentConfig, **changes: Any) -> ExperimentConfig:
    from dataclasses import replace

    return replace(cfg, **changes)
