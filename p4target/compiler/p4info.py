"""P4Info generation from a BMv2 JSON program (plus hints for what the JSON lacks), P4Info
files in p4c's three formats, and a name <-> id index over a P4Info message.

Ids follow p4c's scheme so our P4Info is interchangeable with p4c-bm2-ss's: the top 8 bits
are the resource type (``P4Ids``), the low 24 bits Jenkins' one-at-a-time hash of the fully
qualified name. Explicit ``@id`` values are reserved first; then, per resource type, names
are hashed in sorted order and collisions are resolved by incrementing the hash value until
a free id is found. Aliases are the shortest dot-separated suffix that is unique among all
symbols of the program.
"""
from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Union

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

from p4target.errors import P4TargetError

PREFIX_ACTION = p4info_pb2.P4Ids.ACTION
PREFIX_TABLE = p4info_pb2.P4Ids.TABLE
PREFIX_VALUE_SET = p4info_pb2.P4Ids.VALUE_SET
PREFIX_CONTROLLER_HEADER = p4info_pb2.P4Ids.CONTROLLER_HEADER
PREFIX_ACTION_PROFILE = p4info_pb2.P4Ids.ACTION_PROFILE
PREFIX_COUNTER = p4info_pb2.P4Ids.COUNTER
PREFIX_DIRECT_COUNTER = p4info_pb2.P4Ids.DIRECT_COUNTER
PREFIX_METER = p4info_pb2.P4Ids.METER
PREFIX_DIRECT_METER = p4info_pb2.P4Ids.DIRECT_METER
PREFIX_REGISTER = p4info_pb2.P4Ids.REGISTER
PREFIX_DIGEST = p4info_pb2.P4Ids.DIGEST

DEFAULT_TABLE_SIZE = 1024

# The comment header p4c puts at the top of text P4Info files (tools use it to pick the schema).
TEXT_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"

FORMATS_BY_SUFFIX = {".txt": "text", ".txtpb": "text", ".json": "json", ".bin": "binary"}

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
    "valid": p4info_pb2.MatchField.EXACT,  # P4_14-style validity match: a 1-bit exact field
}

_SCOPES = {
    "TABLE_AND_DEFAULT": (p4info_pb2.ActionRef.TABLE_AND_DEFAULT, None),
    "TABLE_ONLY": (p4info_pb2.ActionRef.TABLE_ONLY, "@tableonly"),
    "DEFAULT_ONLY": (p4info_pb2.ActionRef.DEFAULT_ONLY, "@defaultonly"),
}

_COUNTER_UNITS = {
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
    "both": p4info_pb2.CounterSpec.BOTH,
}

# The PkgInfo fields p4c fills from ``@pkginfo`` keys (``arch`` overrides the compiler's).
PKG_INFO_KEYS = ("name", "version", "arch", "organization", "contact", "url")

_METER_UNITS = {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}

# Annotations p4c consumes itself and never copies into P4Info.
_CONSUMED_ANNOTATIONS = {"name", "id", "hidden", "brief", "description", "max_group_size"}


class P4InfoLookupError(P4TargetError, LookupError):
    """A name or id that the P4Info does not contain."""


# ---------------------------------------------------------------------------------------
# Hints: what the BMv2 JSON does not say
# ---------------------------------------------------------------------------------------


@dataclass
class TableHints:
    """P4Info facts of one table that BMv2 JSON does not carry."""
    annotations: list[str] = field(default_factory=list)        # e.g. ['@brief("...")'] (not @name)
    action_scopes: dict[str, str] = field(default_factory=dict)  # action -> TABLE_AND_DEFAULT|TABLE_ONLY|DEFAULT_ONLY
    const_default_action: bool = False
    is_const_table: bool = False                                # had `const entries`
    key_names: Optional[list[str]] = None                       # override match field names
    key_bitwidths: Optional[list[int]] = None                   # override widths (expressions, slices)
    key_type_names: Optional[list[Optional[str]]] = None        # P4 ``type`` of each key (P4Info type_name)
    implementation: Optional[str] = None                        # action profile/selector name
    direct_counter: Optional[str] = None
    direct_meter: Optional[str] = None
    size: Optional[int] = None


@dataclass
class ControllerHeaderHint:
    """A header type annotated ``@controller_header("packet_in"|"packet_out")``."""
    name: str                       # header type name, e.g. "packet_in_header_t"
    controller_header: str          # "packet_in" / "packet_out"
    fields: list[tuple[str, int]]   # (field name, bitwidth) in order
    annotations: list[str] = field(default_factory=list)
    type_names: list[Optional[str]] = field(default_factory=list)  # P4 ``type`` of each field


@dataclass
class DigestHint:
    """One ``digest<T>(...)`` call: its BMv2 learn list and the struct type T."""
    name: str                       # BMv2 learn_list name
    type_name: str                  # struct type name: the P4Info digest name and type_info key
    fields: list[tuple[str, int]]
    type_names: list[Optional[str]] = field(default_factory=list)  # P4 ``type`` of each field


@dataclass
class NewTypeHint:
    """A P4 ``type`` declaration for ``type_info.new_types``: its underlying type (``bitwidth``
    and ``signed``, or ``is_bool``), or with ``uri`` set its ``@p4runtime_translation`` to
    ``sdn_bitwidth`` bits (None: to strings)."""
    bitwidth: int = 0
    signed: bool = False
    is_bool: bool = False
    uri: Optional[str] = None
    sdn_bitwidth: Optional[int] = None
    annotations: list[str] = field(default_factory=list)


@dataclass
class P4InfoHints:
    """Everything the back end knows about the program's control-plane API beyond BMv2 JSON.

    ``hidden`` names compiler-synthesized tables/actions to leave out of P4Info (as p4c does
    for ``@hidden``). Without it, a table whose name has no ``.`` (user tables are always
    qualified by their control) is taken as synthesized, and so is an action without ``.``
    that no visible table references. ``counter_units`` maps a counter name to its v1model
    ``CounterType`` ("packets", "bytes", "packets_and_bytes"; default "packets_and_bytes",
    which is what BMv2 counts).
    """
    arch: str = "v1model"
    tables: dict[str, TableHints] = field(default_factory=dict)
    action_annotations: dict[str, list[str]] = field(default_factory=dict)
    extern_annotations: dict[str, list[str]] = field(default_factory=dict)   # counters, meters, registers, profiles
    controller_headers: list[ControllerHeaderHint] = field(default_factory=list)
    digests: list[DigestHint] = field(default_factory=list)
    explicit_ids: dict[str, int] = field(default_factory=dict)   # @id annotations: name -> id
    register_types: dict[str, tuple[int, bool]] = field(default_factory=dict)  # name -> (bitwidth, signed)
    # value set name -> its match fields (name, bitwidth, match kind); default one unnamed exact field
    value_set_matches: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)
    hidden: set[str] = field(default_factory=set)
    # actions called directly from control code: name -> [(param, bitwidth)]; p4c lists them
    direct_actions: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    # serializable enums a table key or action parameter uses: name -> (bitwidth, [(member, value)])
    serializable_enums: dict[str, tuple[int, list[tuple[str, int]]]] = field(default_factory=dict)
    counter_units: dict[str, str] = field(default_factory=dict)
    # ``@pkginfo(key="value", ...)`` on the main package instance (name, version, arch,
    # organization, contact, url) and the instance's other annotations (@brief/@description
    # become ``pkg_info.doc``)
    pkg_info: dict[str, str] = field(default_factory=dict)
    pkg_annotations: list[str] = field(default_factory=list)
    # P4 ``type`` declarations by name, and the types of action parameters and registers
    new_types: dict[str, NewTypeHint] = field(default_factory=dict)
    action_param_types: dict[str, list[Optional[str]]] = field(default_factory=dict)
    register_type_names: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------
# Ids and aliases
# ---------------------------------------------------------------------------------------


def jenkins_one_at_a_time(data: bytes) -> int:
    """Bob Jenkins' one-at-a-time hash (32 bits), the hash p4c applies to P4Info names."""
    h = 0
    for byte in data:
        h = (h + byte) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


def hashed_id(prefix: int, name: str) -> int:
    """The id p4c gives ``name`` of resource type ``prefix`` when nothing collides."""
    return (prefix << 24) | (jenkins_one_at_a_time(name.encode("utf-8")) & 0xFFFFFF)


class SymbolIds:
    """Collects the program's P4Runtime symbols, then assigns ids and aliases like p4c."""

    def __init__(self, explicit_ids: Optional[dict[str, int]] = None) -> None:
        self._explicit = dict(explicit_ids or {})
        self._symbols: dict[int, dict[str, Optional[int]]] = {}
        self._taken: set[int] = set()
        self._all_names: set[str] = set()
        self._suffix_counts: dict[tuple[str, ...], int] = {}
        self._done = False

    def add(self, prefix: int, name: str) -> None:
        """Register ``name`` as a symbol of resource type ``prefix`` (duplicates are fine)."""
        if self._done:
            raise RuntimeError("symbols added after ids were assigned")
        table = self._symbols.setdefault(prefix, {})
        if name in table:
            return
        table[name] = self._reserve_explicit(prefix, name)
        if name not in self._all_names:
            self._all_names.add(name)
            parts = tuple(name.split("."))
            for k in range(1, len(parts) + 1):
                suffix = parts[-k:]
                self._suffix_counts[suffix] = self._suffix_counts.get(suffix, 0) + 1

    def _reserve_explicit(self, prefix: int, name: str) -> Optional[int]:
        if name not in self._explicit:
            return None
        value = int(self._explicit[name])
        if not 0 <= value <= 0xFFFFFFFF:
            raise P4TargetError(f"@id {value} of '{name}' is not a 32-bit unsigned integer")
        top = value >> 24
        if top not in (0, prefix):
            raise P4TargetError(f"@id 0x{value:08x} of '{name}' has the wrong 8-bit prefix "
                                f"(expected 0x{prefix:02x})")
        value |= prefix << 24
        if value in self._taken:
            raise P4TargetError(f"@id 0x{value:08x} is assigned to multiple declarations")
        self._taken.add(value)
        return value

    def assign(self) -> None:
        """Give every symbol without an explicit id its hashed id (sorted names, linear probing)."""
        if self._done:
            return
        for prefix in sorted(self._symbols):
            table = self._symbols[prefix]
            for name in sorted(n for n, v in table.items() if v is None):
                value = jenkins_one_at_a_time(name.encode("utf-8"))
                start = value
                while True:
                    candidate = (prefix << 24) | (value & 0xFFFFFF)
                    if candidate not in self._taken:
                        break
                    value = (value + 1) & 0xFFFFFFFF
                    if value == start:
                        raise P4TargetError(f"no P4Runtime id left for '{name}'")
                self._taken.add(candidate)
                table[name] = candidate
        self._done = True

    def id(self, prefix: int, name: str) -> int:
        """The id of a symbol added before :meth:`assign`."""
        self.assign()
        try:
            value = self._symbols[prefix][name]
        except KeyError:
            raise P4TargetError(f"internal: P4Info symbol '{name}' was never registered") from None
        assert value is not None
        return value

    def alias(self, name: str) -> str:
        """Shortest suffix of dot-separated components that no other symbol shares."""
        parts = tuple(name.split("."))
        for k in range(1, len(parts) + 1):
            if self._suffix_counts.get(parts[-k:], 0) < 2:
                return ".".join(parts[-k:])
        return name


# ---------------------------------------------------------------------------------------
# Building P4Info
# ---------------------------------------------------------------------------------------

_DOC_RE = re.compile(r'^@(brief|description)\s*\(\s*"((?:[^"\\]|\\.)*)"\s*\)\s*$', re.S)
_ANNOTATION_NAME_RE = re.compile(r"^@\s*([A-Za-z_][A-Za-z0-9_]*)")


def _annotation_name(text: str) -> str:
    m = _ANNOTATION_NAME_RE.match(text.strip())
    return m.group(1) if m else ""


def _apply_annotations(target: Any, annotations: Iterable[str], doc_holder: Any = None) -> None:
    """Copy annotations the way p4c does: @brief/@description become ``doc``, the ones p4c
    consumes itself (@name, @id, @hidden, ...) are dropped, the rest are kept verbatim."""
    for text in annotations:
        text = text.strip()
        name = _annotation_name(text)
        if name in ("brief", "description"):
            m = _DOC_RE.match(text)
            holder = doc_holder if doc_holder is not None else target
            if m and holder is not None and hasattr(holder, "doc"):
                value = re.sub(r"\\(.)", r"\1", m.group(2))
                setattr(holder.doc, m.group(1), value)
            continue
        if name in _CONSUMED_ANNOTATIONS:
            continue
        target.annotations.append(text)


def _annotation_int(annotations: Iterable[str], wanted: str) -> Optional[int]:
    for text in annotations:
        if _annotation_name(text) == wanted:
            m = re.search(r"\(\s*(0x[0-9a-fA-F]+|\d+)\s*\)", text)
            if m:
                return int(m.group(1), 0)
    return None


class _FieldWidths:
    """Bit widths of BMv2 fields, found through ``headers`` -> ``header_types``."""

    def __init__(self, bmv2: dict) -> None:
        types = {ht["name"]: {f[0]: int(f[1]) for f in ht.get("fields", []) if f[1] != "*"}
                 for ht in bmv2.get("header_types", [])}
        self._by_header: dict[str, dict[str, int]] = {}
        for hdr in bmv2.get("headers", []):
            self._by_header[hdr["name"]] = types.get(hdr.get("header_type", ""), {})

    def width(self, target: Any) -> Optional[int]:
        if isinstance(target, str):  # a header (validity match)
            return 1
        if not isinstance(target, (list, tuple)) or len(target) != 2:
            return None
        header, fname = target
        if fname == "$valid$":
            return 1
        return self._by_header.get(header, {}).get(fname)


class _NewTypes:
    """P4Info of values declared with a P4 ``type``, as p4c writes it: a ``type_name``
    reference, the controller's bit width for a translated type (0 for a string translation),
    and a ``type_info.new_types`` entry for every type referenced."""

    def __init__(self, hints: dict[str, NewTypeHint]) -> None:
        self.hints = hints
        self.used: set[str] = set()

    def reference(self, type_name: Optional[str]) -> bool:
        """Record a use of ``type_name``; False when it is not a P4 ``type``."""
        if not type_name or type_name not in self.hints:
            return False
        self.used.add(type_name)
        return True

    def describe(self, msg: Any, type_name: Optional[str], width: int) -> None:
        """Set ``bitwidth`` (and ``type_name``) of a match field, action parameter or
        controller header field of data-plane width ``width``."""
        msg.bitwidth = int(width)
        if self.reference(type_name):
            msg.type_name.name = type_name
            nt = self.hints[type_name]
            if nt.uri is not None:
                msg.bitwidth = nt.sdn_bitwidth or 0

    def write(self, type_info: Any) -> None:
        for name in sorted(self.used):
            nt = self.hints[name]
            spec = type_info.new_types[name]
            _apply_annotations(spec, [a for a in nt.annotations
                                      if _annotation_name(a) != "p4runtime_translation"])
            if nt.uri is not None:
                spec.translated_type.uri = nt.uri
                if nt.sdn_bitwidth is None:
                    spec.translated_type.sdn_string.SetInParent()
                else:
                    spec.translated_type.sdn_bitwidth = nt.sdn_bitwidth
            elif nt.is_bool:
                spec.original_type.bool.SetInParent()
            else:
                bits = spec.original_type.bitstring.int if nt.signed else spec.original_type.bitstring.bit
                bits.bitwidth = nt.bitwidth


def _pipeline_objects(bmv2: dict, key: str) -> list[dict]:
    out: list[dict] = []
    for pipe in bmv2.get("pipelines", []):
        out.extend(pipe.get(key, []) or [])
    return out


def _unique_by_name(items: Iterable[dict]) -> list[dict]:
    seen: dict[str, dict] = {}
    for item in items:
        seen.setdefault(item["name"], item)
    return list(seen.values())


def _table_is_visible(name: str, hints: P4InfoHints) -> bool:
    if name in hints.hidden:
        return False
    return name in hints.tables or "." in name


def build_p4info(bmv2_json: dict, hints: Optional[P4InfoHints] = None) -> p4info_pb2.P4Info:
    """Derive the P4Info of a BMv2 JSON program (our compiler's or p4c's) with p4c's ids.

    Raises :class:`P4TargetError` when the JSON and the hints disagree (an unknown action
    profile, a bad ``@id``) so that a broken P4Info never reaches a switch.
    """
    hints = hints or P4InfoHints()
    if hints.arch != "v1model":
        raise P4TargetError(f"architecture '{hints.arch}' is not supported (only v1model)")
    widths = _FieldWidths(bmv2_json)
    symbols = SymbolIds(hints.explicit_ids)
    new_types = _NewTypes(hints.new_types)

    tables = _pipeline_objects(bmv2_json, "tables")
    profiles = _unique_by_name(_pipeline_objects(bmv2_json, "action_profiles"))
    actions = _unique_by_name(bmv2_json.get("actions", []))
    listed = {a["name"] for a in actions}
    actions += [{"name": name, "runtime_data": [{"name": p, "bitwidth": w} for p, w in params]}
                for name, params in hints.direct_actions.items() if name not in listed]
    action_by_id = {a["id"]: a["name"] for a in bmv2_json.get("actions", [])}
    param_widths = {a["id"]: [int(rd["bitwidth"]) for rd in a.get("runtime_data", [])]
                    for a in bmv2_json.get("actions", [])}
    counters = bmv2_json.get("counter_arrays", []) or []
    meters = bmv2_json.get("meter_arrays", []) or []
    registers = bmv2_json.get("register_arrays", []) or []
    value_sets = bmv2_json.get("parse_vsets", []) or []
    digests = _digest_specs(bmv2_json, hints, widths)

    visible_tables = [t for t in tables if _table_is_visible(t["name"], hints)]
    referenced = {a for t in visible_tables for a in t.get("actions", [])}
    visible_actions = [a for a in actions if a["name"] not in hints.hidden
                       and ("." in a["name"] or a["name"] in referenced
                            or a["name"] in hints.action_annotations or a["name"] in hints.direct_actions)]

    # Every symbol of the program takes part in id probing and alias uniqueness, hidden
    # ones included, as in p4c.
    for t in tables:
        symbols.add(PREFIX_TABLE, t["name"])
    for a in actions:
        symbols.add(PREFIX_ACTION, a["name"])
    for p in profiles:
        symbols.add(PREFIX_ACTION_PROFILE, p["name"])
    for c in counters:
        symbols.add(PREFIX_DIRECT_COUNTER if c.get("is_direct") else PREFIX_COUNTER, c["name"])
    for m in meters:
        symbols.add(PREFIX_DIRECT_METER if m.get("is_direct") else PREFIX_METER, m["name"])
    for r in registers:
        symbols.add(PREFIX_REGISTER, r["name"])
    for vs in value_sets:
        symbols.add(PREFIX_VALUE_SET, vs["name"])
    for d in digests:
        symbols.add(PREFIX_DIGEST, d[0])
    for ch in hints.controller_headers:
        symbols.add(PREFIX_CONTROLLER_HEADER, ch.name)
    symbols.assign()

    info = p4info_pb2.P4Info()
    info.pkg_info.arch = hints.arch
    for key, value in hints.pkg_info.items():
        if key not in PKG_INFO_KEYS:
            raise P4TargetError(f"@pkginfo: unknown key '{key}' (one of {', '.join(PKG_INFO_KEYS)})")
        setattr(info.pkg_info, key, value)
    _apply_annotations(info.pkg_info, hints.pkg_annotations)

    direct_counter_of = {c.get("binding"): c["name"] for c in counters if c.get("is_direct")}
    direct_meter_of = {m.get("binding"): m["name"] for m in meters if m.get("is_direct")}
    profile_names = {p["name"] for p in profiles}
    implementation_of: dict[str, str] = {}

    action_names = {a["name"] for a in actions}
    visible_action_names = {a["name"] for a in visible_actions}
    direct_counters = {c["name"] for c in counters if c.get("is_direct")}
    direct_meters = {m["name"] for m in meters if m.get("is_direct")}
    for t in visible_tables:
        th = hints.tables.get(t["name"], TableHints())
        for aname in t.get("actions", []):
            if aname not in action_names:
                raise P4TargetError(f"table '{t['name']}' refers to action '{aname}' "
                                    "which the BMv2 JSON does not declare")
            if aname not in visible_action_names:
                raise P4TargetError(f"table '{t['name']}' refers to hidden action '{aname}'")
        for kind, name, known in (("direct counter", th.direct_counter, direct_counters),
                                  ("direct meter", th.direct_meter, direct_meters)):
            if name and name not in known:
                raise P4TargetError(f"table '{t['name']}' uses {kind} '{name}' "
                                    "which the BMv2 JSON does not declare")
        impl = th.implementation or t.get("action_profile")
        if impl:
            if impl not in profile_names:
                raise P4TargetError(f"table '{t['name']}' uses action profile '{impl}' "
                                    "which the BMv2 JSON does not declare")
            implementation_of[t["name"]] = impl
        _add_table(info, symbols, t, th, widths, new_types, action_by_id, param_widths, impl,
                   th.direct_counter or direct_counter_of.get(t["name"]),
                   th.direct_meter or direct_meter_of.get(t["name"]))

    for a in visible_actions:
        pa = info.actions.add()
        _preamble(pa.preamble, symbols, PREFIX_ACTION, a["name"],
                  hints.action_annotations.get(a["name"], []))
        param_types = hints.action_param_types.get(a["name"], [])
        for i, rd in enumerate(a.get("runtime_data", []), start=1):
            param = pa.params.add()
            param.id = i
            param.name = rd["name"]
            new_types.describe(param, param_types[i - 1] if i <= len(param_types) else None, rd["bitwidth"])

    for p in profiles:
        ap = info.action_profiles.add()
        annotations = hints.extern_annotations.get(p["name"], [])
        _preamble(ap.preamble, symbols, PREFIX_ACTION_PROFILE, p["name"], annotations)
        ap.with_selector = bool(p.get("selector"))
        ap.size = int(p.get("max_size", 0))
        for tname in sorted(n for n, impl in implementation_of.items() if impl == p["name"]):
            ap.table_ids.append(symbols.id(PREFIX_TABLE, tname))
        max_group = _annotation_int(annotations, "max_group_size")
        if max_group is not None and ap.with_selector:
            ap.max_group_size = max_group

    for c in counters:
        annotations = hints.extern_annotations.get(c["name"], [])
        unit_name = hints.counter_units.get(c["name"], "packets_and_bytes")
        if unit_name not in _COUNTER_UNITS:
            raise P4TargetError(f"counter '{c['name']}': unknown unit '{unit_name}'")
        if c.get("is_direct"):
            dc = info.direct_counters.add()
            _preamble(dc.preamble, symbols, PREFIX_DIRECT_COUNTER, c["name"], annotations)
            dc.spec.unit = _COUNTER_UNITS[unit_name]
            if c.get("binding") in {t["name"] for t in tables}:
                dc.direct_table_id = symbols.id(PREFIX_TABLE, c["binding"])
        else:
            ic = info.counters.add()
            _preamble(ic.preamble, symbols, PREFIX_COUNTER, c["name"], annotations)
            ic.spec.unit = _COUNTER_UNITS[unit_name]
            ic.size = int(c.get("size", 0))

    for m in meters:
        annotations = hints.extern_annotations.get(m["name"], [])
        unit = _METER_UNITS.get(str(m.get("type", "")).lower(), p4info_pb2.MeterSpec.UNSPECIFIED)
        if m.get("is_direct"):
            dm = info.direct_meters.add()
            _preamble(dm.preamble, symbols, PREFIX_DIRECT_METER, m["name"], annotations)
            dm.spec.unit = unit
            if m.get("binding") in {t["name"] for t in tables}:
                dm.direct_table_id = symbols.id(PREFIX_TABLE, m["binding"])
        else:
            im = info.meters.add()
            _preamble(im.preamble, symbols, PREFIX_METER, m["name"], annotations)
            im.spec.unit = unit
            im.size = int(m.get("size", 0))

    for ch in hints.controller_headers:
        cpm = info.controller_packet_metadata.add()
        cpm.preamble.id = symbols.id(PREFIX_CONTROLLER_HEADER, ch.name)
        cpm.preamble.name = ch.controller_header
        cpm.preamble.alias = ch.controller_header
        annotations = list(ch.annotations)
        if not any(_annotation_name(a) == "controller_header" for a in annotations):
            annotations.insert(0, f'@controller_header("{ch.controller_header}")')
        _apply_annotations(cpm.preamble, annotations)
        for i, (fname, width) in enumerate(ch.fields, start=1):
            md = cpm.metadata.add()
            md.id = i
            md.name = fname
            new_types.describe(md, ch.type_names[i - 1] if i <= len(ch.type_names) else None, width)

    for vs in value_sets:
        pvs = info.value_sets.add()
        _preamble(pvs.preamble, symbols, PREFIX_VALUE_SET, vs["name"],
                  hints.extern_annotations.get(vs["name"], []))
        pvs.size = int(vs.get("max_size", 0))
        fields = hints.value_set_matches.get(vs["name"]) or [("", int(vs.get("compressed_bitwidth", 0)), "exact")]
        for i, (fname, width, kind) in enumerate(fields):
            match = pvs.match.add()
            match.id = i + 1
            if fname:
                match.name = fname
            match.bitwidth = width
            match.match_type = _MATCH_TYPES.get(kind, p4info_pb2.MatchField.EXACT)

    for r in registers:
        pr = info.registers.add()
        _preamble(pr.preamble, symbols, PREFIX_REGISTER, r["name"],
                  hints.extern_annotations.get(r["name"], []))
        pr.size = int(r.get("size", 0))
        if new_types.reference(hints.register_type_names.get(r["name"])):
            pr.type_spec.new_type.name = hints.register_type_names[r["name"]]
            continue
        width, signed = hints.register_types.get(r["name"], (int(r.get("bitwidth", 0)), False))
        bits = pr.type_spec.bitstring.int if signed else pr.type_spec.bitstring.bit
        bits.bitwidth = int(width)

    digest_type_names = {d.type_name: d.type_names for d in hints.digests}
    for type_name, fields in digests:
        dg = info.digests.add()
        _preamble(dg.preamble, symbols, PREFIX_DIGEST, type_name, [])
        dg.type_spec.struct.name = type_name
        struct = info.type_info.structs[type_name]
        if not struct.members:
            member_types = digest_type_names.get(type_name, [])
            for i, (fname, width) in enumerate(fields):
                member = struct.members.add()
                member.name = fname
                member_type = member_types[i] if i < len(member_types) else None
                if new_types.reference(member_type):
                    member.type_spec.new_type.name = member_type
                else:
                    member.type_spec.bitstring.bit.bitwidth = int(width)

    for enum_name, (width, members) in hints.serializable_enums.items():
        spec = info.type_info.serializable_enums[enum_name]
        spec.underlying_type.bitwidth = int(width)
        for member_name, value in members:
            m = spec.members.add()
            m.name = member_name
            m.value = _param_bytes(value & ((1 << width) - 1), width)
    new_types.write(info.type_info)
    return info


def _preamble(pre: Any, symbols: SymbolIds, prefix: int, name: str, annotations: Iterable[str]) -> None:
    pre.id = symbols.id(prefix, name)
    pre.name = name
    pre.alias = symbols.alias(name)
    _apply_annotations(pre, annotations)


def _add_table(info: p4info_pb2.P4Info, symbols: SymbolIds, t: dict, th: TableHints,
               widths: _FieldWidths, new_types: _NewTypes, action_by_id: dict[int, str],
               param_widths: dict[int, list[int]], impl: Optional[str],
               direct_counter: Optional[str], direct_meter: Optional[str]) -> None:
    name = t["name"]
    pt = info.tables.add()
    _preamble(pt.preamble, symbols, PREFIX_TABLE, name, th.annotations)

    keys = t.get("key", []) or []
    key_names = th.key_names or None  # an empty list means "not given"
    key_bitwidths = th.key_bitwidths or None
    for label, override in (("key_names", key_names), ("key_bitwidths", key_bitwidths)):
        if override is not None and len(override) != len(keys):
            raise P4TargetError(f"table '{name}': {label} has {len(override)} entries "
                                f"but the table has {len(keys)} keys")
    for i, key in enumerate(keys):
        mf = pt.match_fields.add()
        mf.id = i + 1
        target = key.get("target")
        if key_names is not None:
            mf.name = key_names[i]
        elif key.get("name"):
            mf.name = key["name"]
        else:
            mf.name = target if isinstance(target, str) else ".".join(str(p) for p in target)
        width = key_bitwidths[i] if key_bitwidths is not None else widths.width(target)
        if width is None:
            raise P4TargetError(f"table '{name}': cannot find the width of key '{mf.name}'")
        type_names = th.key_type_names or []
        new_types.describe(mf, type_names[i] if i < len(type_names) else None, width)
        match_type = str(key.get("match_type", "exact")).lower()
        if match_type in _MATCH_TYPES:
            mf.match_type = _MATCH_TYPES[match_type]
        else:
            mf.other_match_type = match_type

    for aname in t.get("actions", []):
        ref = pt.action_refs.add()
        ref.id = symbols.id(PREFIX_ACTION, aname)
        scope_name = th.action_scopes.get(aname, "TABLE_AND_DEFAULT")
        if scope_name not in _SCOPES:
            raise P4TargetError(f"table '{name}': unknown action scope '{scope_name}' for '{aname}'")
        scope, annotation = _SCOPES[scope_name]
        if annotation:
            ref.annotations.append(annotation)
        ref.scope = scope

    default = t.get("default_entry") or {}
    default_name = action_by_id.get(default.get("action_id", -1))
    if default_name is not None:
        if th.const_default_action or default.get("action_const"):
            pt.const_default_action_id = symbols.id(PREFIX_ACTION, default_name)
        # Recent p4c records every table's initial default action (the implicit NoAction
        # included, const or not), each argument at its parameter's full byte width.
        call = pt.initial_default_action
        call.action_id = symbols.id(PREFIX_ACTION, default_name)
        bitwidths = param_widths.get(default["action_id"], [])
        for param_id, value in enumerate(default.get("action_data", []) or [], start=1):
            arg = call.arguments.add()
            arg.param_id = param_id
            width = bitwidths[param_id - 1] if param_id <= len(bitwidths) else 0
            arg.value = _param_bytes(value, width)

    if impl:
        pt.implementation_id = symbols.id(PREFIX_ACTION_PROFILE, impl)
    if direct_counter:
        pt.direct_resource_ids.append(symbols.id(PREFIX_DIRECT_COUNTER, direct_counter))
    if direct_meter:
        pt.direct_resource_ids.append(symbols.id(PREFIX_DIRECT_METER, direct_meter))
    pt.size = int(th.size if th.size is not None else t.get("max_size", DEFAULT_TABLE_SIZE))
    if t.get("support_timeout"):
        pt.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL
    if th.is_const_table:
        pt.is_const_table = True
    if th.is_const_table or t.get("entries"):
        pt.has_initial_entries = True


def _param_bytes(value: object, bitwidth: int) -> bytes:
    """A BMv2 action-data value (hex string or int) as p4c writes it in P4Info: big-endian,
    as many bytes as the parameter's width needs."""
    number = int(value, 16) if isinstance(value, str) else int(value)  # type: ignore[arg-type]
    if number < 0:
        raise P4TargetError(f"negative action argument {value!r} in a default entry")
    size = max(1, (bitwidth + 7) // 8, (number.bit_length() + 7) // 8)
    return number.to_bytes(size, "big")


def _digest_specs(bmv2: dict, hints: P4InfoHints, widths: _FieldWidths) -> list[tuple[str, list[tuple[str, int]]]]:
    """(P4Info digest name, struct members) per digest, in BMv2 learn-list order (which the
    switch may use to pair them); hints supply names, learn lists alone give field widths."""
    by_list = {d.name: d for d in hints.digests}
    specs: list[tuple[str, list[tuple[str, int]]]] = []
    seen: set[str] = set()

    def add(name: str, fields: list[tuple[str, int]]) -> None:
        if name not in seen:
            seen.add(name)
            specs.append((name, fields))

    used: set[str] = set()
    for ll in bmv2.get("learn_lists", []) or []:
        hint = by_list.get(ll["name"])
        if hint is not None:
            used.add(hint.name)
            add(hint.type_name, [(n, int(w)) for n, w in hint.fields])
            continue
        fields = []
        for element in ll.get("elements", []):
            target = element.get("value")
            width = widths.width(target)
            if width is None:
                raise P4TargetError(f"learn list '{ll['name']}': cannot find the width of {target}")
            fields.append((str(target[-1]).split(".")[-1], width))
        add(ll["name"], fields)
    for hint in hints.digests:
        if hint.name not in used:
            add(hint.type_name, [(n, int(w)) for n, w in hint.fields])
    return specs


# ---------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------


def p4info_format(path: Union[str, os.PathLike]) -> str:
    """``text``, ``json`` or ``binary`` from the file suffix; P4TargetError for others."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS_BY_SUFFIX:
        raise P4TargetError(f"{path}: unknown P4Info file suffix '{suffix or '(none)'}' "
                            f"(use {', '.join(FORMATS_BY_SUFFIX)})")
    return FORMATS_BY_SUFFIX[suffix]


def serialize_p4info(p4info: p4info_pb2.P4Info, fmt: str) -> bytes:
    """The bytes of ``p4info`` in format ``text``, ``json`` or ``binary``."""
    if fmt == "text":
        return (TEXT_HEADER + text_format.MessageToString(p4info)).encode("utf-8")
    if fmt == "json":
        return (json_format.MessageToJson(p4info, indent=2) + "\n").encode("utf-8")
    if fmt == "binary":
        return p4info.SerializeToString()
    raise P4TargetError(f"unknown P4Info format '{fmt}' (use text, json or binary)")


def new_file_mode() -> int:
    """Permissions a newly created file gets under the current umask (mkstemp uses 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: Union[str, os.PathLike], data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it into place."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=str(target.parent or "."))
    except OSError as exc:
        raise P4TargetError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, new_file_mode())
        os.replace(tmp, target)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise P4TargetError(f"cannot write {path}: {exc.strerror}") from None


def write_p4info(p4info: p4info_pb2.P4Info, path: Union[str, os.PathLike]) -> None:
    """Write ``p4info`` atomically, in the format its suffix names (.txt/.txtpb, .json, .bin)."""
    atomic_write(path, serialize_p4info(p4info, p4info_format(path)))


def read_p4info(path: Union[str, os.PathLike]) -> p4info_pb2.P4Info:
    """Read a P4Info file written in any of the three formats (chosen by suffix)."""
    fmt = p4info_format(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise P4TargetError(f"cannot read {path}: {exc.strerror}") from None
    info = p4info_pb2.P4Info()
    try:
        if fmt == "text":
            text_format.Parse(data.decode("utf-8"), info)
        elif fmt == "json":
            json_format.Parse(data.decode("utf-8"), info)
        else:
            info.ParseFromString(data)
    except Exception as exc:  # protobuf raises several unrelated types
        raise P4TargetError(f"{path}: not a {fmt} P4Info file ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    return info


# ---------------------------------------------------------------------------------------
# Index
# ---------------------------------------------------------------------------------------

KINDS = ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
         "direct_meters", "controller_packet_metadata", "value_sets", "registers", "digests")


class P4InfoIndex:
    """Name <-> id lookups over one P4Info message (names may be full names or aliases).

    ``kind`` is the P4Info field name: ``tables``, ``actions``, ``counters``, ... (see KINDS).
    Misses raise :class:`P4InfoLookupError` naming what is missing.
    """

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self._by_name: dict[str, dict[str, Any]] = {}
        self._by_id: dict[str, dict[int, Any]] = {}
        self._kind_of_id: dict[int, str] = {}
        for kind in KINDS:
            names: dict[str, Any] = {}
            ids: dict[int, Any] = {}
            for obj in getattr(p4info, kind):
                names[obj.preamble.name] = obj
                ids[obj.preamble.id] = obj
                self._kind_of_id[obj.preamble.id] = kind
            for obj in getattr(p4info, kind):
                alias = obj.preamble.alias
                if alias and alias not in names:
                    names[alias] = obj
            self._by_name[kind] = names
            self._by_id[kind] = ids

    @staticmethod
    def _check_kind(kind: str) -> None:
        if kind not in KINDS:
            raise P4InfoLookupError(f"unknown P4Info object kind '{kind}' (one of {', '.join(KINDS)})")

    def get(self, kind: str, key: Union[str, int]) -> Any:
        """The P4Info message of ``kind`` with this name/alias (str) or id (int)."""
        self._check_kind(kind)
        found = self._by_id[kind].get(key) if isinstance(key, int) else self._by_name[kind].get(key)
        if found is None:
            raise P4InfoLookupError(f"P4Info has no {kind.rstrip('s').replace('_', ' ')} {key!r}")
        return found

    def has(self, kind: str, key: Union[str, int]) -> bool:
        """True if ``get`` would find it."""
        self._check_kind(kind)
        return (key in self._by_id[kind]) if isinstance(key, int) else (key in self._by_name[kind])

    def id(self, kind: str, name: str) -> int:
        """Id of the object of ``kind`` named ``name`` (full name or alias)."""
        return self.get(kind, name).preamble.id

    def name(self, kind: str, ident: int) -> str:
        """Full name of the object of ``kind`` with id ``ident``."""
        return self.get(kind, ident).preamble.name

    def kind_of(self, ident: int) -> str:
        """Which kind of object carries this id."""
        try:
            return self._kind_of_id[ident]
        except KeyError:
            raise P4InfoLookupError(f"P4Info has no object with id {ident}") from None

    def names(self, kind: str) -> list[str]:
        """Full names of every object of ``kind`` in P4Info order."""
        self._check_kind(kind)
        return [obj.preamble.name for obj in getattr(self.p4info, kind)]

    # Convenience for the common kinds.
    def table(self, key: Union[str, int]) -> Any:
        return self.get("tables", key)

    def action(self, key: Union[str, int]) -> Any:
        return self.get("actions", key)

    def table_id(self, name: str) -> int:
        return self.id("tables", name)

    def action_id(self, name: str) -> int:
        return self.id("actions", name)

    def match_field(self, table: Union[str, int], key: Union[str, int]) -> Any:
        """Match field of a table by field name or id."""
        t = self.table(table)
        for mf in t.match_fields:
            if (mf.id == key) if isinstance(key, int) else (mf.name == key):
                return mf
        raise P4InfoLookupError(f"table '{t.preamble.name}' has no match field {key!r}")

    def param(self, action: Union[str, int], key: Union[str, int]) -> Any:
        """Parameter of an action by name or id."""
        a = self.action(action)
        for p in a.params:
            if (p.id == key) if isinstance(key, int) else (p.name == key):
                return p
        raise P4InfoLookupError(f"action '{a.preamble.name}' has no parameter {key!r}")

    def controller_metadata(self, header: Union[str, int], key: Union[str, int]) -> Any:
        """Metadata field of a controller header (``packet_in``/``packet_out``) by name or id."""
        h = self.get("controller_packet_metadata", header)
        for md in h.metadata:
            if (md.id == key) if isinstance(key, int) else (md.name == key):
                return md
        raise P4InfoLookupError(f"controller header '{h.preamble.name}' has no metadata {key!r}")

    def table_actions(self, table: Union[str, int]) -> list[str]:
        """Names of the actions a table may run (its action_refs, in order)."""
        return [self.name("actions", ref.id) for ref in self.table(table).action_refs]
