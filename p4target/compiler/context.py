"""State shared by every lowering step of one compilation."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4target.compiler.annotation_values import structured_annotation_text
from p4target.compiler.bmv2_json import Bmv2Program, fresh_name
from p4target.compiler.expressions import Env
from p4target.compiler.semantics import ProgramScope
from p4target.compiler.storage import Storage
from p4target.compiler.values import ActionSymbol, ExternInstance, StructValue


@dataclass
class TableInfo:
    """What P4Info needs about one table beyond its BMv2 JSON."""
    annotations: list[str] = field(default_factory=list)
    action_scopes: dict[str, str] = field(default_factory=dict)
    action_ref_annotations: dict[str, list[str]] = field(default_factory=dict)
    const_default_action: bool = False
    is_const_table: bool = False
    key_names: list[str] = field(default_factory=list)
    key_bitwidths: list[int] = field(default_factory=list)
    key_annotations: list[list[str]] = field(default_factory=list)
    key_type_names: list[str | None] = field(default_factory=list)  # P4 ``type`` of each key
    key_match_kinds: list[str] = field(default_factory=list)  # source match kinds (JSON says "ternary" for "optional")
    implementation: str | None = None
    direct_counter: str | None = None
    direct_meter: str | None = None
    size: int | None = None


class Context:
    """One compilation: program scope, output document, storage, names, P4Info facts."""

    def __init__(self, scope: ProgramScope, program_name: str) -> None:
        self.scope = scope
        self.out = Bmv2Program(program_name)
        self.storage = Storage(self.out)
        self.global_env = Env()
        for name, decl in scope.actions.items():
            self.global_env.define(name, ActionSymbol(decl, name, None))
        self.metadata: StructValue | None = None
        self.externs: dict[str, ExternInstance] = {}
        self.tables: dict[str, TableInfo] = {}
        self.applied_tables: set[str] = set()
        self.table_envs: dict[str, Env] = {}
        self.action_annotations: dict[str, list[str]] = {}
        self.action_param_annotations: dict[str, list[list[str]]] = {}
        # actions called directly from a control's apply block (inlined, yet p4c lists them in
        # P4Info): name -> directionless (name, bitwidth) parameters
        self.direct_actions: dict[str, list[tuple[str, int]]] = {}
        # action name -> the P4 ``type`` of each action-data parameter (None: a plain type)
        self.action_param_types: dict[str, list[str | None]] = {}
        self.serializable_enums: dict[str, Any] = {}  # name -> EnumT (for P4Info type_info)
        self.extern_annotations: dict[str, list[str]] = {}
        self.hidden: set[str] = set()
        self.direct_meter_targets: dict[str, list] = {}
        self.digests: dict[str, tuple[str, list[tuple[str, int]]]] = {}
        self.explicit_ids: dict[str, int] = {}  # @id of tables and actions (P4Info)
        self.value_sets: dict[str, Any] = {}  # BMv2 name -> element type (for P4Info matches)
        self._names: dict[str, int] = {}
        self._used_action_names: set[str] = set()
        self.pipeline: dict | None = None
        self.profile_kinds: dict[str, tuple[str, int]] = {}
        self._table_ids = 0
        self._profile_ids = 0
        self._node_ids = 0

    def fresh_table_id(self) -> int:
        self._table_ids += 1
        return self._table_ids - 1

    def fresh_profile_id(self) -> int:
        self._profile_ids += 1
        return self._profile_ids - 1

    def fresh_node_id(self) -> int:
        self._node_ids += 1
        return self._node_ids - 1

    def fresh(self, base: str) -> str:
        """``base``, ``base_0``, ``base_1``... (p4c's style for synthesized names)."""
        n = self._names.get(base)
        self._names[base] = 0 if n is None else n + 1
        return base if n is None else f"{base}_{n}"

    def action_name(self, base: str) -> str:
        return fresh_name(base, self._used_action_names)

    def reserve_action_name(self, name: str) -> str:
        """A P4 action's own name, kept from the compiler's generated action names."""
        self._used_action_names.add(name)
        return name

    def annotations_text(self, annotations: Any) -> list[str]:
        out = []
        for a in annotations or ():
            if a.name in ("name", "id", "defaultonly", "tableonly", "hidden", "priority"):
                continue
            if a.structured:
                out.append(structured_annotation_text(a, self.scope.consts))
                continue
            out.append(f"@{a.name}" + (f"({a.raw})" if a.raw else ""))
        return out
