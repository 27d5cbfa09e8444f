"""Per-pipeline P4Runtime state the engine does not keep: controller-chosen ids of action
profile members and groups, their references, and table entry metadata."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from p4target.engine import Engine

from .translate import Translator


@dataclass
class EntryExtras:
    """What a P4Runtime table entry carries beyond key, action and priority."""
    controller_metadata: int = 0
    metadata: bytes = b""
    idle_timeout_ns: int = 0


@dataclass
class ProfileIds:
    """P4Runtime member/group ids of one action profile and their engine handles."""
    members: dict[int, int] = field(default_factory=dict)        # member id -> engine handle
    member_ids: dict[int, int] = field(default_factory=dict)     # engine handle -> member id
    groups: dict[int, int] = field(default_factory=dict)         # group id -> engine handle
    group_ids: dict[int, int] = field(default_factory=dict)      # engine handle -> group id
    group_members: dict[int, list[int]] = field(default_factory=dict)  # group id -> member ids
    group_max_size: dict[int, int] = field(default_factory=dict)


class PipelineState:
    """Everything the P4Runtime server tracks for one committed pipeline."""

    def __init__(self, translator: Translator, engine: Engine) -> None:
        self.translator = translator
        self.engine = engine
        self.profiles: dict[int, ProfileIds] = {pid: ProfileIds() for pid in translator.profiles}
        self.extras: dict[tuple[str, int], EntryExtras] = {}
        # references to members/groups: (profile id, "member"|"group", id) -> count
        self.refs: Counter = Counter()
        # replicas as written, for faithful read-back: mgrp -> list of Replica protos
        self.mc_replicas: dict[int, list] = {}
        self.clone_sessions: dict[int, object] = {}
