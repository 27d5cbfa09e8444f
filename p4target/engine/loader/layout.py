"""The PHV layout of a program (BMv2: `PHVFactory`): a slot per field of every header
instance, header ids, stacks, unions, stacks of unions, and the program's error values."""
from __future__ import annotations

from typing import Any

from ..errors import ProgramLoadError
from ..program import simple_switch_field
from . import names
from .codegen import Namespace, int_literal



class Layout:
    """Where each field, header and stack of one BMv2 JSON program lives in the PHV lists."""

    def __init__(self, j: dict) -> None:
        types = {t["name"]: t for t in j.get("header_types", [])}
        self.field_index: dict[tuple[str, str], int] = {}
        self.field_width: dict[int, int] = {}
        self.field_signed: dict[int, bool] = {}
        self.header_index: dict[str, int] = {}
        self.header_names: list[str] = []  # header index -> name
        self.header_by_json_id: dict[int, str] = {}
        self.header_base: list[int] = []
        self.header_fields: dict[str, list[tuple[str, int, bool]]] = {}
        self.metadata: set[int] = set()
        self.varbit_slots: dict[int, int] = {}  # slot -> largest width in bits
        F0: list[int] = []
        V0: list[int] = []
        for h in j.get("headers", []):
            ht = types.get(h["header_type"])
            if ht is None:
                raise ProgramLoadError(f"header '{h['name']}' has unknown type '{h['header_type']}'")
            hid = len(V0)
            self.header_index[h["name"]] = hid
            self.header_names.append(h["name"])
            self.header_by_json_id[h["id"]] = h["name"]
            self.header_base.append(len(F0))
            for f in ht["fields"]:
                if not isinstance(f, list) or len(f) not in (2, 3, 4) or type(f[0]) is not str or \
                        not (f[1] == "*" or (type(f[1]) is int and f[1] >= 0)):
                    raise ProgramLoadError(f"header type '{ht['name']}': bad field {f!r:.60}")
                if len(f) == 4 and f[3]:
                    raise ProgramLoadError(f"header type '{ht['name']}': saturating field '{f[0]}' is not supported")
            fixed = sum(f[1] for f in ht["fields"] if f[1] != "*")
            fields = []
            for f in ht["fields"]:
                name, width = f[0], f[1]
                signed = bool(f[2]) if len(f) > 2 else False
                if width == "*":
                    width = max(0, int(int_literal(ht.get("max_length", 0), "max_length")) * 8 - fixed)
                    self.varbit_slots[len(F0)] = width
                self.field_index[(h["name"], name)] = len(F0)
                self.field_width[len(F0)] = width
                self.field_signed[len(F0)] = signed
                F0.append(0)
                fields.append((name, width, signed))
            self.header_fields[h["name"]] = fields
            meta = bool(h.get("metadata"))
            if meta:
                self.metadata.add(hid)
            V0.append(1 if meta else 0)
        self.stacks: dict[str, list[int]] = {}
        self.stack_id: dict[str, int] = {}
        for s in j.get("header_stacks", []):
            ids = [self.header_index[self.header_name_by_id(i)] for i in s["header_ids"]]
            self.stack_id[s["name"]] = len(self.stacks)
            self.stacks[s["name"]] = ids
        self.unions: dict[str, list[int]] = {}
        for u in j.get("header_unions", []):
            self.unions[u["name"]] = [self.header_index[self.header_name_by_id(i)] for i in u["header_ids"]]
        # stacks of header unions: each element a union's header ids; their next index follows
        # the header stacks' in NX
        union_names = {u["id"]: u["name"] for u in j.get("header_unions", [])}
        union_members = {t["name"]: [m for m, _ in t["headers"]] for t in j.get("header_union_types", [])}
        self.union_stacks: dict[str, tuple[int, list[list[int]], list[str]]] = {}
        for k, us in enumerate(j.get("header_union_stacks", [])):
            elems = [self.unions[union_names[i]] for i in us["header_union_ids"]]
            self.union_stacks[us["name"]] = (len(self.stacks) + k, elems, union_members.get(us["union_type"], []))
        # `field_aliases`: another name for a field, which field references may use too; an
        # alias wins over a real field of the same name (BMv2's PHV::add_field_alias)
        for alias, (header, name) in j.get("field_aliases", []):
            alias_header, _, alias_field = alias.partition(".")
            self.field_index[(alias_header, alias_field)] = self.field_index[(header, name)]
        self.F0, self.V0 = F0, V0
        self.NX0 = [0] * (len(self.stacks) + len(self.union_stacks))
        self.errors = {e[0]: int(int_literal(e[1], f"value of error {e[0]!r:.40}")) for e in j.get("errors", [])}

    def publish(self, ns: Namespace) -> None:
        """Bind the layout tables generated code indexes (see `names`)."""
        hlen = [len(self.header_fields[n]) for n in self.header_names]
        ns[names.HEADER_BASE] = self.header_base
        ns[names.STACK_IDS] = list(self.stacks.values())
        ns[names.HEADER_LEN] = hlen
        # fixed size in bytes (a varbit field adds its per-packet length, see remove_header)
        ns[names.HEADER_BYTES] = [sum(w for k, (_, w, _) in enumerate(self.header_fields[n])
                                      if self.header_base[hid] + k not in self.varbit_slots) // 8
                                  for hid, n in enumerate(self.header_names)]
        ns[names.HEADER_SPANS] = {hid: (self.header_base[hid], hlen[hid]) for hid in range(len(self.V0))}

    # -- look-ups -------------------------------------------------------------------------
    def header_name_by_id(self, json_id: Any) -> str:
        """Name of the header with this JSON `id`."""
        if type(json_id) is not int or json_id not in self.header_by_json_id:
            raise ProgramLoadError(f"unknown header id {json_id!r:.40}")
        return self.header_by_json_id[json_id]

    def header_name(self, hid: int) -> str:
        """Name of the header at PHV index `hid`."""
        return self.header_names[hid]

    def fidx(self, ref: Any) -> int:
        """Slot of a field reference `[header, field]`."""
        if not isinstance(ref, list) or len(ref) != 2:
            raise ProgramLoadError(f"bad field reference {ref!r:.60}")
        key = (ref[0], ref[1])
        if key not in self.field_index:
            raise ProgramLoadError(f"unknown field '{ref[0]}.{ref[1]}'")
        return self.field_index[key]

    def hid(self, name: Any) -> int:
        """PHV index of a header instance."""
        if type(name) is not str or name not in self.header_index:
            raise ProgramLoadError(f"unknown header {name!r:.60}")
        return self.header_index[name]

    def has_varbit(self, hid: int) -> bool:
        base = self.header_base[hid]
        return any(base + i in self.varbit_slots for i in range(len(self.header_fields[self.header_names[hid]])))

    def sm_opt(self, name: str) -> int | None:
        """Slot of the metadata field simple_switch knows as `name` (`program.SIMPLE_SWITCH_FIELDS`),
        or None if the program lacks it."""
        return simple_switch_field(self.field_index, name)

    def sm_idx(self, name: str) -> int:
        i = self.sm_opt(name)
        if i is None:
            raise ProgramLoadError(f"program lacks standard_metadata.{name}")
        return i

    def error_value(self, name: str) -> int:
        return self.errors.get(name, 0)
