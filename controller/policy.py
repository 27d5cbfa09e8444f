"""Loss-tolerance policies: the model, its validation, and its translation into table entries.

A policy names, per training job, rules over layer ranges (optionally narrowed to a range of
gradient magnitude classes): a push-stage loss bound, a tighter pull-stage bound, a priority
queue, drop eligibility, the queue depth above which selective drops start, and optionally a
DBLP-like phase schedule (per round range a low and a high bound; the high bound applies unless
the job is in a critical learning regime). The same model backs the policy file, ``gradctl
policy set`` and the daemon. Errors name the field path (``jobs[0].layers[1].loss_bound``).

Each rule becomes one ``gradient_class`` entry and owns one loss-budget slot, the switch's
per-(job, layer range) budget and counters. Each job also names which switch mechanisms help it
(ablation switches, all on by default): ``spray`` (per-packet spraying of its DATA packets over
equal-cost paths; off = per-flow hashing), ``prioritize`` (its classes' priority queues; off = the
queue ordinary traffic of its DSCP gets) and ``selective_drop`` (budgeted drops; off = counted,
never dropped); one ``job_features`` entry per job.

A job may also name its DDL flows that do not carry the gradient header (a worker pushing over
kernel TCP): source/destination prefixes, protocol and destination port range, each with the
worker rank whose PCN-START announces its bursts; each becomes one ``ddl_flow`` entry, so the
switches see such a burst arrive (PCN) as they see gradient DATA arrive.
"""
from __future__ import annotations

import copy
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from controller import p4names as N
from controller.documents import DocumentError, load_file, short
from controller.entries import Action, Exact, Range, TableEntry, Ternary
from controller.errors import PolicyError

DEFAULT_DROP_THRESHOLD = 16
CLASS_ENTRY_PRIORITY = 1   # rules of one job never overlap, so one priority serves all
PREVIOUS_ENTRY_PRIORITY = 2   # a pending change's previous entries, matched on the policy epoch
MAG_CLASSES = N.MAG_CLASS_MAX + 1

_TOP_KEYS = {"version", "defaults", "jobs"}
_FEATURE_KEYS = ("spray", "prioritize", "selective_drop")
_JOB_KEYS = {"job", "name", "layers", "phases", "hole_fill", "early_close", "pcn", "ddl_flows",
             *_FEATURE_KEYS}
# The push-stage hole-filling modes of the host agents (docs/contracts.md, Job policy).
HOLE_FILLS = ("zero", "previous", "mean-delivered")
_PCN_KEYS = {"threshold", "adapt", "floor", "ceiling"}
_DDL_FLOW_KEYS = {"worker_rank", "src", "dst", "protocol", "dst_ports"}
PROTOCOLS = {"tcp": 6, "udp": 17}
EARLY_CLOSE_LAWS = ("telemetry", "adaptive", "fixed")   # hosts/transport/deadline.py
PCN_THRESHOLD_MAX = 1000   # packets; far above any queue the switches run
_RULE_KEYS = {"range", "mag_classes", "loss_bound", "pull_bound", "priority", "drop_eligible",
              "drop_threshold", "phases"}
_PHASE_KEYS = {"rounds", "low", "high"}


@dataclass(frozen=True)
class Phase:
    """Bounds for a range of rounds: ``high`` normally, ``low`` in a critical regime."""

    rounds: tuple[int, int]
    low: float
    high: float


@dataclass(frozen=True)
class Rule:
    """One class of one job: a layer range x magnitude range and how to treat it."""

    layers: tuple[int, int]
    mag_classes: tuple[int, int]
    loss_bound: float
    pull_bound: float
    priority: int
    drop_eligible: bool
    drop_threshold: int
    phases: tuple[Phase, ...] = ()

    def bound_at(self, round_: int | None, critical: bool) -> float:
        """The push bound in effect at ``round_`` (the plain bound outside every phase)."""
        if round_ is not None:
            for ph in self.phases:
                if ph.rounds[0] <= round_ <= ph.rounds[1]:
                    return ph.low if critical else ph.high
        return self.loss_bound


@dataclass(frozen=True)
class Features:
    """A job's ablation switches: which switch mechanisms help its gradient packets."""

    spray: bool = True
    prioritize: bool = True
    selective_drop: bool = True


@dataclass(frozen=True)
class PcnSetting:
    """A job's PCN threshold (packets): the start value, whether the controller's law adapts
    it, and the bounds it stays in (docs/control-laws.md)."""

    threshold: int = 10
    adapt: bool = True
    floor: int = 5
    ceiling: int = 40


@dataclass(frozen=True)
class DdlFlow:
    """DDL traffic of one worker without the gradient header: what identifies it (None = any)
    and the worker rank whose PCN-START announces its bursts. Prefixes are (address, length)."""

    worker_rank: int
    src: tuple[int, int] | None = None
    dst: tuple[int, int] | None = None
    protocol: int | None = None
    dst_ports: tuple[int, int] | None = None

    @property
    def match(self) -> tuple:
        """What the switch matches on (two flows with equal matches are the same flow)."""
        return (self.src, self.dst, self.protocol, self.dst_ports)


@dataclass(frozen=True)
class Job:
    """A training job's rules, ablation switches and control-law settings."""

    job_id: int
    name: str
    rules: tuple[Rule, ...]
    features: Features = Features()
    hole_fill: str | None = None   # the hosts' push-stage hole filling; None = their flag
    early_close: str = "telemetry"
    pcn: PcnSetting | None = None
    ddl_flows: tuple[DdlFlow, ...] = ()


@dataclass(frozen=True)
class JobState:
    """What the controller knows of a running job: current round, critical regime."""

    round: int | None = None
    critical: bool = False


@dataclass(frozen=True)
class Policy:
    """A validated policy; ``document`` is the normalised dict it came from."""

    jobs: tuple[Job, ...]
    document: Mapping[str, Any] = field(compare=False, hash=False)

    def job(self, job_id: int) -> Job | None:
        """The job with id ``job_id``, or None."""
        return next((j for j in self.jobs if j.job_id == job_id), None)


@dataclass(frozen=True)
class SlotInfo:
    """What a loss-budget slot stands for (for stats)."""

    slot: int
    job_id: int
    job_name: str
    layers: tuple[int, int]
    mag_classes: tuple[int, int]
    loss_bound: float
    pull_bound: float
    priority: int
    drop_eligible: bool


# -- parsing and validation ------------------------------------------------------------------
def _fail(path: str, msg: str) -> PolicyError:
    return PolicyError(path, msg)


def _check_keys(obj: Any, allowed: set[str], path: str) -> dict:
    if not isinstance(obj, dict):
        raise _fail(path or "policy", f"must be a mapping, got {_kind(obj)}")
    for key in obj:
        if key not in allowed:
            name = key if isinstance(key, str) and len(key) <= 60 else short(key)
            raise _fail(f"{path}.{name}" if path else str(name),
                        f"unknown field (allowed: {', '.join(sorted(allowed))})")
    return obj


def _kind(v: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a mapping", type(None): "nothing"}.get(type(v), type(v).__name__)


def _int(v: Any, path: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _fail(path, f"must be an integer in [{lo}, {hi}], got {_kind(v)} {short(v)}")
    if not lo <= v <= hi:
        raise _fail(path, f"must be in [{lo}, {hi}], got {short(v)}")
    return v


def _bound(v: Any, path: str, hi: float = 1.0) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _fail(path, f"must be a number in [0, {hi:g}], got {_kind(v)} {short(v)}")
    if isinstance(v, int) and not 0 <= v <= hi:   # compared as an integer: no float overflow
        raise _fail(path, f"must be in [0, {hi:g}], got {short(v)}")
    if not 0.0 <= float(v) <= hi:
        raise _fail(path, f"must be in [0, {hi:g}], got {v:g}")
    return float(v)


def _bool(v: Any, path: str) -> bool:
    if not isinstance(v, bool):
        raise _fail(path, f"must be true or false, got {_kind(v)} {short(v)}")
    return v


def _pair(v: Any, path: str, lo: int, hi: int) -> tuple[int, int]:
    if isinstance(v, int) and not isinstance(v, bool):
        v = [v, v]
    if not isinstance(v, list) or len(v) != 2:
        raise _fail(path, f"must be [lo, hi] (two integers), got {short(v)}")
    a = _int(v[0], f"{path}[0]", lo, hi)
    b = _int(v[1], f"{path}[1]", lo, hi)
    if a > b:
        raise _fail(path, f"lo {a} is greater than hi {b}")
    return a, b


def _phases(raw: Any, path: str) -> tuple[Phase, ...]:
    if not isinstance(raw, list):
        raise _fail(path, f"must be a list, got {_kind(raw)}")
    out: list[Phase] = []
    for i, ph in enumerate(raw):
        p = f"{path}[{i}]"
        _check_keys(ph, _PHASE_KEYS, p)
        for key in ("rounds", "low", "high"):
            if key not in ph:
                raise _fail(f"{p}.{key}", "missing")
        rounds = _pair(ph["rounds"], f"{p}.rounds", 0, 0xFFFFFFFF)
        low = _bound(ph["low"], f"{p}.low")
        high = _bound(ph["high"], f"{p}.high")
        if low > high:
            raise _fail(f"{p}.low", f"must not exceed high ({high:g}), got {low:g}")
        out.append(Phase(rounds, low, high))
    # overlaps in one pass over the phases sorted by start (no pairwise work on a long list);
    # the error names the later phase of the pair, as listed, and the earlier one it overlaps
    order = sorted(range(len(out)), key=lambda i: (out[i].rounds[0], i))
    for a, b in zip(order, order[1:]):
        if out[b].rounds[0] <= out[a].rounds[1]:
            later, earlier = max(a, b), min(a, b)
            other = out[earlier]
            raise _fail(f"{path}[{later}].rounds", f"overlaps {path}[{earlier}].rounds "
                                                   f"({other.rounds[0]}-{other.rounds[1]})")
    return tuple(out)


def _pcn(raw: Any, path: str) -> PcnSetting:
    _check_keys(raw, _PCN_KEYS, path)
    d = PcnSetting()
    floor = _int(raw.get("floor", d.floor), f"{path}.floor", 1, PCN_THRESHOLD_MAX)
    ceiling = _int(raw.get("ceiling", d.ceiling), f"{path}.ceiling", 1, PCN_THRESHOLD_MAX)
    if floor > ceiling:
        raise _fail(f"{path}.floor", f"must not exceed the ceiling {ceiling}, got {floor}")
    threshold = _int(raw.get("threshold", min(max(d.threshold, floor), ceiling)),
                     f"{path}.threshold", floor, ceiling)
    return PcnSetting(threshold, _bool(raw.get("adapt", d.adapt), f"{path}.adapt"), floor, ceiling)


def _prefix(v: Any, path: str) -> tuple[int, int]:
    if not isinstance(v, str):
        raise _fail(path, f"must be an IPv4 address or prefix (a string), got {_kind(v)} {short(v)}")
    try:
        net = ipaddress.IPv4Network(v, strict=True)
    except ValueError as exc:
        raise _fail(path, f"is not an IPv4 address or prefix: {exc}") from None
    return int(net.network_address), net.prefixlen


def _protocol(v: Any, path: str) -> int:
    if isinstance(v, str) and v.lower() in PROTOCOLS:
        return PROTOCOLS[v.lower()]
    if isinstance(v, int) and not isinstance(v, bool):
        return _int(v, path, 0, 255)
    raise _fail(path, f"must be tcp, udp or an IP protocol number 0..255, got {short(v)}")


def _ddl_flows(raw: Any, path: str) -> tuple[DdlFlow, ...]:
    if not isinstance(raw, list):
        raise _fail(path, f"must be a list of flows, got {_kind(raw)}")
    flows: list[DdlFlow] = []
    for i, rf in enumerate(raw):
        fp = f"{path}[{i}]"
        _check_keys(rf, _DDL_FLOW_KEYS, fp)
        if "worker_rank" not in rf:
            raise _fail(f"{fp}.worker_rank", "missing (the rank whose PCN-START announces the flow)")
        if not set(rf) - {"worker_rank"}:
            raise _fail(fp, "names no field to match (src, dst, protocol, dst_ports): it would "
                            "classify all traffic as DDL")
        flow = DdlFlow(
            _int(rf["worker_rank"], f"{fp}.worker_rank", 0, N.WORKER_RANK_MAX),
            _prefix(rf["src"], f"{fp}.src") if "src" in rf else None,
            _prefix(rf["dst"], f"{fp}.dst") if "dst" in rf else None,
            _protocol(rf["protocol"], f"{fp}.protocol") if "protocol" in rf else None,
            _pair(rf["dst_ports"], f"{fp}.dst_ports", 0, 0xFFFF) if "dst_ports" in rf else None)
        flows.append(flow)
    return tuple(flows)


EMPTY_POLICY_HINT = ("it would delete every installed class (to do that on purpose: "
                     "`gradctl policy clear --yes`)")

# A rule's fields the `defaults` section may set for every rule: how each is checked, and its
# value when neither the rule nor `defaults` names it.
_DEFAULTABLE: dict[str, tuple[Callable[[Any, str], Any], Any]] = {
    "priority": (lambda v, path: _int(v, path, 0, 7), 0),
    "drop_eligible": (_bool, True),
    "drop_threshold": (lambda v, path: _int(v, path, 0, 0xFFFFFFFF), DEFAULT_DROP_THRESHOLD),
    "mag_classes": (lambda v, path: _pair(v, path, 0, N.MAG_CLASS_MAX), [0, N.MAG_CLASS_MAX]),
}
_DEFAULT_KEYS = set(_DEFAULTABLE)
# A job's fields that name one of a few choices: the choices, and the value when absent.
_CHOICES: dict[str, tuple[tuple[str, ...], str | None]] = {
    "hole_fill": (HOLE_FILLS, None),             # None: the hosts' own flag
    "early_close": (EARLY_CLOSE_LAWS, "telemetry"),
}


def parse_policy(doc: Any, *, allow_empty: bool = False) -> Policy:
    """Validate a policy document (the parsed YAML/JSON) into a :class:`Policy`.

    A document without jobs (nothing, ``null``, ``{}``, ``jobs: []``) is refused unless
    ``allow_empty``: installing it deletes every class, which only an explicit request may do.
    """
    if doc is None:
        if not allow_empty:
            raise _fail("policy", f"the document is empty: {EMPTY_POLICY_HINT}")
        doc = {}
    _check_keys(doc, _TOP_KEYS, "")
    if "version" in doc and doc["version"] != 1:
        raise _fail("version", f"must be 1, got {short(doc['version'])}")
    defaults = _defaults(doc.get("defaults", {}) or {})
    raw_jobs = doc.get("jobs", []) or []
    if not isinstance(raw_jobs, list):
        raise _fail("jobs", f"must be a list, got {_kind(raw_jobs)}")
    _check_counts(raw_jobs)
    jobs: list[Job] = []
    for ji, rj in enumerate(raw_jobs):
        jobs.append(_job(rj, f"jobs[{ji}]", defaults, jobs))
    if not jobs and not allow_empty:
        raise _fail("jobs", f"no jobs in the policy: {EMPTY_POLICY_HINT}")
    return Policy(tuple(jobs), copy.deepcopy(doc))


def _check_counts(raw_jobs: list) -> None:
    """The table sizes, checked on the raw lists before any element is validated or compared:
    a document of a million flows or rules is refused at once, whatever its contents."""
    n_rules = n_flows = 0
    for ji, rj in enumerate(raw_jobs):
        if not isinstance(rj, dict):
            continue   # the job's own validation names it
        rules, flows = rj.get("layers"), rj.get("ddl_flows")
        n_rules += len(rules) if isinstance(rules, list) else 0
        n_flows += len(flows) if isinstance(flows, list) else 0
        if n_flows > N.DDL_FLOW_TABLE_SIZE:
            raise _fail(f"jobs[{ji}].ddl_flows", f"more than {N.DDL_FLOW_TABLE_SIZE} DDL flows in all "
                                                 "(the switch's ddl_flow table)")
        if n_rules > N.NUM_SLOTS:
            raise _fail(f"jobs[{ji}].layers", f"more than {N.NUM_SLOTS} rules in all (the switch's slots)")
    if len(raw_jobs) > N.NUM_SLOTS:
        raise _fail("jobs", f"{len(raw_jobs)} jobs, more than the switch's {N.NUM_SLOTS} slots "
                            "(each job needs a rule)")


def _defaults(raw: Any) -> dict[str, Any]:
    """The `defaults` section with every field checked (and filled in)."""
    section = _check_keys(raw, _DEFAULT_KEYS, "defaults")
    return {key: check(section.get(key, builtin), f"defaults.{key}")
            for key, (check, builtin) in _DEFAULTABLE.items()}


def _defaulted(raw: dict, path: str, key: str, defaults: dict[str, Any]) -> Any:
    """A rule's field ``key``: its own value, checked, else the policy's default."""
    check, _ = _DEFAULTABLE[key]
    return check(raw[key], f"{path}.{key}") if key in raw else defaults[key]


def _choice(raw: dict, path: str, key: str) -> str | None:
    """A job's field ``key`` that must be one of its choices (or absent)."""
    choices, default = _CHOICES[key]
    value = raw.get(key, default)
    if value != default and value not in choices:
        raise _fail(f"{path}.{key}", f"must be one of {', '.join(choices)}, got {short(value)}")
    return value


def _job(raw: Any, path: str, defaults: dict[str, Any], earlier: list[Job]) -> Job:
    """Job ``path`` of the policy; ``earlier`` are the jobs before it (ids and DDL flows must
    differ, and together they must fit the switch's tables)."""
    _check_keys(raw, _JOB_KEYS, path)
    if "job" not in raw:
        raise _fail(f"{path}.job", "missing (the job id, 0..65535)")
    job_id = _int(raw["job"], f"{path}.job", 0, (1 << N.JOB_ID_BITS) - 1)
    for k, other in enumerate(earlier):
        if other.job_id == job_id:
            raise _fail(f"{path}.job", f"job {job_id} is already defined by jobs[{k}]")
    name = raw.get("name", f"job{job_id}")
    if not isinstance(name, str) or not name:
        raise _fail(f"{path}.name", f"must be a non-empty string, got {_kind(name)}")
    job_phases = _phases(raw["phases"], f"{path}.phases") if "phases" in raw else ()
    features = Features(*(_bool(raw.get(k, True), f"{path}.{k}") for k in _FEATURE_KEYS))
    hole_fill = _choice(raw, path, "hole_fill")
    early_close = _choice(raw, path, "early_close")
    pcn = _pcn(raw["pcn"], f"{path}.pcn") if "pcn" in raw else None
    ddl_flows = _ddl_flows(raw["ddl_flows"], f"{path}.ddl_flows") if "ddl_flows" in raw else ()
    _check_new_flows(ddl_flows, path, earlier)
    if sum(len(j.ddl_flows) for j in earlier) + len(ddl_flows) > N.DDL_FLOW_TABLE_SIZE:
        raise _fail(f"{path}.ddl_flows", f"more than {N.DDL_FLOW_TABLE_SIZE} DDL flows in all "
                                         "(the switch's ddl_flow table)")
    rules = _rules(raw.get("layers"), path, defaults, job_phases)
    if sum(len(j.rules) for j in earlier) + len(rules) > N.NUM_SLOTS:
        raise _fail(f"{path}.layers", f"more than {N.NUM_SLOTS} rules in all (the switch's slots)")
    assert early_close is not None
    return Job(job_id, name, rules, features, hole_fill, early_close, pcn, ddl_flows)


def _check_new_flows(flows: tuple[DdlFlow, ...], path: str, earlier: list[Job]) -> None:
    """No DDL flow of job ``path`` matches one of an earlier job or an earlier one of its own
    (one lookup per flow: the first definition of each match)."""
    first: dict[tuple, str] = {}
    for k, other in enumerate(earlier):
        for oi, theirs in enumerate(other.ddl_flows):
            first.setdefault(theirs.match, f"jobs[{k}].ddl_flows[{oi}]")
    for fi, flow in enumerate(flows):
        here = f"{path}.ddl_flows[{fi}]"
        seen = first.setdefault(flow.match, here)
        if seen != here:
            raise _fail(here, f"is the same flow as {seen}")


def _rules(raw: Any, job_path: str, defaults: dict[str, Any],
           job_phases: tuple[Phase, ...]) -> tuple[Rule, ...]:
    """The `layers` rules of one job; no two may overlap (layers x magnitude classes)."""
    if not isinstance(raw, list) or not raw:
        raise _fail(f"{job_path}.layers", "must be a non-empty list of layer rules")
    rules: list[Rule] = []
    for ri, rr in enumerate(raw):
        rp = f"{job_path}.layers[{ri}]"
        rule = _rule(rr, rp, defaults, job_phases)
        layers, mags = rule.layers, rule.mag_classes
        for k, other in enumerate(rules):
            if (layers[0] <= other.layers[1] and other.layers[0] <= layers[1]
                    and mags[0] <= other.mag_classes[1] and other.mag_classes[0] <= mags[1]):
                raise _fail(rp, f"overlaps {job_path}.layers[{k}] (layers {other.layers[0]}-"
                                f"{other.layers[1]}, mag_classes {other.mag_classes[0]}-"
                                f"{other.mag_classes[1]})")
        rules.append(rule)
    return tuple(rules)


def _rule(raw: Any, path: str, defaults: dict[str, Any], job_phases: tuple[Phase, ...]) -> Rule:
    """One layer rule; without its own `phases` it takes the job's unless its bound is 0."""
    _check_keys(raw, _RULE_KEYS, path)
    for key in ("range", "loss_bound"):
        if key not in raw:
            raise _fail(f"{path}.{key}", "missing")
    layers = _pair(raw["range"], f"{path}.range", 0, N.LAYER_ID_MAX)
    mags = _defaulted(raw, path, "mag_classes", defaults)
    loss = _bound(raw["loss_bound"], f"{path}.loss_bound")
    pull = _bound(raw["pull_bound"], f"{path}.pull_bound") if "pull_bound" in raw else loss
    # a bound-0 (critical) rule never inherits the job's relaxing phases
    phases = _phases(raw["phases"], f"{path}.phases") if "phases" in raw \
        else (job_phases if loss > 0 else ())
    tightest_push = min([loss] + [ph.low for ph in phases])
    if pull > tightest_push:
        raise _fail(f"{path}.pull_bound",
                    f"must not exceed the push bound {tightest_push:g} (pull is tighter), "
                    f"got {pull:g}")
    return Rule(layers, mags, loss, pull, *(_defaulted(raw, path, key, defaults)
                                            for key in ("priority", "drop_eligible", "drop_threshold")),
                phases)


def load_policy(path: str | Path) -> Policy:
    """Read and validate a YAML or JSON policy file; errors start with the file name.

    Reading is bounded (:mod:`controller.documents`): size, UTF-8, nesting, integer length,
    no YAML aliases; an empty document is an error.
    """
    try:
        doc = load_file(path)
    except DocumentError as exc:
        message = str(exc)
        if message.startswith("cannot read"):
            message = message.replace("cannot read", "cannot read policy", 1)
        raise PolicyError("", message, str(path)) from None
    try:
        return parse_policy(doc)
    except PolicyError as exc:
        raise exc.with_source(str(path)) from None


def empty_policy() -> Policy:
    """The policy with no jobs (every gradient packet gets the default class)."""
    return parse_policy({"jobs": []}, allow_empty=True)


# -- edits from the CLI ----------------------------------------------------------------------
def set_rule(policy: Policy, job_id: int, layers: tuple[int, int],
             mag_classes: tuple[int, int] | None = None, **changes: Any) -> Policy:
    """A copy of ``policy`` with the rule of ``job_id`` over exactly ``layers`` (and
    ``mag_classes``) changed, or added when there is none; ``changes`` are rule fields
    (loss_bound, pull_bound, priority, drop_eligible, drop_threshold). Revalidated."""
    doc = copy.deepcopy(dict(policy.document))
    jobs = doc.setdefault("jobs", [])
    if not isinstance(jobs, list):
        raise _fail("jobs", "must be a list")
    job = next((j for j in jobs if isinstance(j, dict) and j.get("job") == job_id), None)
    if job is None:
        job = {"job": job_id, "layers": []}
        jobs.append(job)
    rules = job.setdefault("layers", [])
    changes = {k: v for k, v in changes.items() if v is not None}
    rule = None
    for r in rules:
        if _pair_of(r.get("range")) == layers and (
                mag_classes is None or _pair_of(r.get("mag_classes")) == mag_classes):
            rule = r
            break
    if rule is None:
        rule = {"range": [layers[0], layers[1]]}
        if mag_classes is not None:
            rule["mag_classes"] = [mag_classes[0], mag_classes[1]]
        if "loss_bound" not in changes:
            raise _fail("loss_bound", f"job {job_id} has no rule for layers {layers[0]}-{layers[1]}; "
                                      "a new rule needs a loss bound")
        rules.append(rule)
    rule.update(changes)
    if "loss_bound" in changes and "pull_bound" in rule and "pull_bound" not in changes \
            and rule["pull_bound"] > changes["loss_bound"]:
        rule["pull_bound"] = changes["loss_bound"]  # keep pull tighter than the new push bound
    return parse_policy(doc)


def set_features(policy: Policy, job_id: int, **changes: bool | None) -> Policy:
    """A copy of ``policy`` with ablation switches of ``job_id`` changed (``spray``,
    ``prioritize``, ``selective_drop``; None = unchanged). Revalidated."""
    unknown = set(changes) - set(_FEATURE_KEYS)
    if unknown:
        raise _fail(sorted(unknown)[0], f"unknown job switch (allowed: {', '.join(_FEATURE_KEYS)})")
    doc = copy.deepcopy(dict(policy.document))
    jobs = doc.get("jobs") or []
    job = next((j for j in jobs if isinstance(j, dict) and j.get("job") == job_id), None)
    if job is None:
        raise _fail("job", f"no job {job_id} in the current policy (add a rule for it first)")
    job.update({k: v for k, v in changes.items() if v is not None})
    return parse_policy(doc)


def _pair_of(v: Any) -> tuple[int, int] | None:
    if isinstance(v, int):
        return (v, v)
    if isinstance(v, list) and len(v) == 2:
        return (v[0], v[1])
    return None


# -- translation -----------------------------------------------------------------------------
RuleKey = tuple[int, int, int, int, int]   # job, layer lo, layer hi, mag lo, mag hi


def rule_key(job: Job, rule: Rule) -> RuleKey:
    """What identifies a rule across policy versions (for slot reuse)."""
    return (job.job_id, *rule.layers, *rule.mag_classes)


def assign_slots(policy: Policy, previous: Mapping[RuleKey, int] | None = None) -> dict[RuleKey, int]:
    """A budget slot per rule; a rule that existed before keeps its slot (its counters stay)."""
    previous = previous or {}
    keys = [rule_key(j, r) for j in policy.jobs for r in j.rules]
    out = {k: previous[k] for k in keys if k in previous}
    used = set(out.values())
    free = (s for s in range(N.NUM_SLOTS) if s not in used)
    for k in keys:
        if k not in out:
            out[k] = next(free)
    return out


def basis_points(bound: float) -> int:
    """A loss fraction in basis points (1 = 0.01 %)."""
    return int(round(bound * 10000))


def features_entry(job: Job) -> TableEntry:
    """The ``job_features`` entry of ``job`` (its ablation switches)."""
    f = job.features
    return TableEntry(N.JOB_FEATURES_TABLE, ((N.JOB_FEATURES_KEY_JOB, Exact(job.job_id)),),
                      Action.of(N.SET_JOB_FEATURES, **{
                          N.SET_JOB_FEATURES_SPRAY: int(f.spray),
                          N.SET_JOB_FEATURES_PRIORITY: int(f.prioritize),
                          N.SET_JOB_FEATURES_DROP: int(f.selective_drop)}))


def pcn_entry(job_id: int, threshold: int) -> TableEntry:
    """The ``pcn_job`` entry giving ``job_id`` its own PCN threshold."""
    return TableEntry(N.PCN_JOB_TABLE, ((N.PCN_JOB_KEY_JOB, Exact(job_id)),),
                      Action.of(N.SET_PCN_JOB, **{N.SET_PCN_JOB_THRESHOLD: threshold}))


def _ternary_prefix(prefix: tuple[int, int] | None) -> Ternary:
    if prefix is None:
        return Ternary(0, 0)
    address, length = prefix
    return Ternary(address, (0xFFFFFFFF << (32 - length)) & 0xFFFFFFFF)


def ddl_flow_entries(policy: Policy) -> list[TableEntry]:
    """One ``ddl_flow`` entry per DDL flow of the policy; a flow listed earlier wins where
    two overlap (a higher entry priority)."""
    flows = [(job.job_id, f) for job in policy.jobs for f in job.ddl_flows]
    out = []
    for i, (job_id, flow) in enumerate(flows):
        match = ((N.DDL_FLOW_KEY_SRC, _ternary_prefix(flow.src)),
                 (N.DDL_FLOW_KEY_DST, _ternary_prefix(flow.dst)),
                 (N.DDL_FLOW_KEY_PROTOCOL,
                  Ternary(0, 0) if flow.protocol is None else Ternary(flow.protocol, 0xFF)),
                 (N.DDL_FLOW_KEY_DST_PORT, Range(*(flow.dst_ports or (0, 0xFFFF)))))
        out.append(TableEntry(N.DDL_FLOW_TABLE, match, Action.of(N.SET_DDL_SENDER, **{
            N.SET_DDL_SENDER_JOB: job_id, N.SET_DDL_SENDER_RANK: flow.worker_rank}),
            priority=len(flows) - i))
    return out


def pcn_threshold(job: Job, adapted: Mapping[int, int] | None = None) -> int | None:
    """The PCN threshold in force for ``job``: the adapted value within its bounds while its
    law is on, else the policy's; None when the job has no PCN setting."""
    if job.pcn is None:
        return None
    value = (adapted or {}).get(job.job_id) if job.pcn.adapt else None
    if value is None:
        return job.pcn.threshold
    return min(max(value, job.pcn.floor), job.pcn.ceiling)
@dataclass(frozen=True)
class PreviousGeneration:
    """A job's policy before a pending change: its rules, its state, its wire epoch."""

    wire_epoch: int
    job: Job
    state: JobState


def class_entry(job: Job, rule: Rule, slot: int, st: JobState,
                wire_epoch: int | None = None) -> TableEntry:
    """The ``gradient_class`` entry of one rule; ``wire_epoch`` None matches every policy epoch
    (the job's current entry), else only that epoch, at a higher priority (a previous entry)."""
    push = rule.bound_at(st.round, st.critical)
    match = [(N.CLASS_KEY_JOB, Ternary(job.job_id, (1 << N.JOB_ID_BITS) - 1)),
             (N.CLASS_KEY_LAYER, Range(*rule.layers)),
             (N.CLASS_KEY_MAG, Range(*rule.mag_classes))]
    if wire_epoch is not None:
        match.append((N.CLASS_KEY_EPOCH, Ternary(wire_epoch, 0xFF)))
    return TableEntry(
        N.CLASS_TABLE, tuple(match),
        Action.of(N.SET_CLASS, **{
            N.SET_CLASS_PRIO: rule.priority,
            N.SET_CLASS_ELIGIBLE: int(rule.drop_eligible),
            N.SET_CLASS_SLOT: slot,
            N.SET_CLASS_PUSH_BOUND: basis_points(push),
            N.SET_CLASS_PULL_BOUND: basis_points(min(rule.pull_bound, push)),
            N.SET_CLASS_DROP_THRESHOLD: rule.drop_threshold}),
        priority=CLASS_ENTRY_PRIORITY if wire_epoch is None else PREVIOUS_ENTRY_PRIORITY)


def translate(policy: Policy, slots: Mapping[RuleKey, int],
              states: Mapping[int, JobState] | None = None,
              previous: Mapping[int, PreviousGeneration] | None = None,
              pcn_thresholds: Mapping[int, int] | None = None) -> list[TableEntry]:
    """The entries of ``policy``: one ``gradient_class`` entry per rule (with the given slots),
    a ``job_features`` entry for each job that turns a mechanism off (no entry = all on), a
    ``pcn_job`` entry for each job with a PCN setting (at its adapted threshold, if any), and a
    ``ddl_flow`` entry per DDL flow.
    ``previous``: per job with a pending change, its previous rules again, for its previous
    wire epoch only (a previous rule without a slot in ``slots`` any more is left out: its
    packets get the current entries)."""
    states = states or {}
    out: list[TableEntry] = []
    for job in policy.jobs:
        st = states.get(job.job_id, JobState())
        if job.features != Features():
            out.append(features_entry(job))
        threshold = pcn_threshold(job, pcn_thresholds)
        if threshold is not None:
            out.append(pcn_entry(job.job_id, threshold))
        for rule in job.rules:
            out.append(class_entry(job, rule, slots[rule_key(job, rule)], st))
    out.extend(ddl_flow_entries(policy))
    for gen in (previous or {}).values():
        for rule in gen.job.rules:
            slot = slots.get(rule_key(gen.job, rule))
            if slot is not None:
                out.append(class_entry(gen.job, rule, slot, gen.state, gen.wire_epoch))
    return out


def job_signature(job: Job | None, st: JobState) -> tuple:
    """What a job's switches and hosts do under ``st``: equal signatures = nothing to change."""
    if job is None:
        return ()
    return (job.features, job.hole_fill, job.early_close,
            tuple((r.layers, r.mag_classes, r.bound_at(st.round, st.critical), r.pull_bound,
                   r.priority, r.drop_eligible, r.drop_threshold) for r in job.rules))


def host_view(job: Job, st: JobState, num_layers: int) -> dict[str, Any]:
    """What the hosts of ``job`` follow under ``st`` for a model of ``num_layers`` layers
    (docs/contracts.md, Job policy): per layer the tightest bound of the rules covering it
    (0 where none does), the drop-eligible magnitude classes, each class's queue, and the
    DBLP phase's P_low/P_high at the state's round."""
    push: list[float] = []
    pull: list[float] = []
    droppable: list[list[int]] = []
    priorities: list[list[int | None]] = []
    p_low: list[float | None] = []
    p_high: list[float | None] = []
    scheduled = False
    for layer in range(num_layers):
        rules = [r for r in job.rules if r.layers[0] <= layer <= r.layers[1]]
        bounds = [r.bound_at(st.round, st.critical) for r in rules]
        push.append(min(bounds, default=0.0))
        pull.append(min((min(r.pull_bound, b) for r, b in zip(rules, bounds)), default=0.0))
        droppable.append(sorted({m for r, b in zip(rules, bounds) if r.drop_eligible and b > 0
                                 for m in range(r.mag_classes[0], r.mag_classes[1] + 1)}))
        priorities.append([next((r.priority for r in rules
                                 if r.mag_classes[0] <= m <= r.mag_classes[1]), None)
                           for m in range(MAG_CLASSES)])
        phases = [ph for r in rules for ph in r.phases
                  if st.round is not None and ph.rounds[0] <= st.round <= ph.rounds[1]]
        scheduled = scheduled or bool(phases)
        p_low.append(min((ph.low for ph in phases), default=None))
        p_high.append(min((ph.high for ph in phases), default=None))
    return {"layers": num_layers, "push_bounds": push, "pull_bounds": pull,
            "droppable": droppable, "priorities": priorities, "hole_fill": job.hole_fill,
            "early_close": job.early_close,
            "phase": {"scheduled": scheduled, "regime": "critical" if st.critical else "normal",
                      "p_low": p_low if scheduled else None,
                      "p_high": p_high if scheduled else None}}


def slot_table(policy: Policy, slots: Mapping[RuleKey, int],
               states: Mapping[int, JobState] | None = None) -> list[SlotInfo]:
    """What each used slot stands for, in policy order."""
    states = states or {}
    out = []
    for job in policy.jobs:
        st = states.get(job.job_id, JobState())
        for rule in job.rules:
            push = rule.bound_at(st.round, st.critical)
            out.append(SlotInfo(slots[rule_key(job, rule)], job.job_id, job.name, rule.layers,
                                rule.mag_classes, push, min(rule.pull_bound, push),
                                rule.priority, rule.drop_eligible))
    return out
