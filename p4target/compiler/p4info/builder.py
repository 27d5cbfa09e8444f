"""P4Info of a BMv2 JSON program (our compiler's or p4c's) plus hints for what the JSON lacks,
with p4c's ids and aliases."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from p4.config.v1 import p4info_pb2

from p4target.compiler.p4info.annotations import annotation_int, annotation_name, apply_annotations
from p4target.compiler.p4info.hints import PKG_INFO_KEYS, P4InfoHints, TableHints
from p4target.compiler.p4info.ids import (PREFIX_ACTION, PREFIX_ACTION_PROFILE, PREFIX_CONTROLLER_HEADER,
                                          PREFIX_COUNTER, PREFIX_DIGEST, PREFIX_DIRECT_COUNTER,
                                          PREFIX_DIRECT_METER, PREFIX_METER, PREFIX_REGISTER, PREFIX_TABLE,
                                          PREFIX_VALUE_SET, SymbolIds)
from p4target.compiler.p4info.new_types import NewTypes
from p4target.errors import P4TargetError

DEFAULT_TABLE_SIZE = 1024

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

_METER_UNITS = {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}


class _FieldWidths:
    """Bit widths of BMv2 fields, found through ``headers`` -> ``header_types``."""

    def __init__(self, bmv2: dict) -> None:
        types = {ht["name"]: {f[0]: int(f[1]) for f in ht.get("fields", []) if f[1] != "*"}
                 for ht in bmv2.get("header_types", [])}
        self._by_header: dict[str, dict[str, int]] = {}
        for hdr in bmv2.get("headers", []):
            self._by_header[hdr["name"]] = types.get(hdr.get("header_type", ""), {})

    def width(self, target: Any) -> int | None:
        if isinstance(target, str):  # a header (validity match)
            return 1
        if not isinstance(target, (list, tuple)) or len(target) != 2:
            return None
        header, fname = target
        if fname == "$valid$":
            return 1
        return self._by_header.get(header, {}).get(fname)


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


@dataclass
class _Objects:
    """The objects of a BMv2 JSON program that P4Info describes (hidden ones included)."""
    tables: list[dict]
    profiles: list[dict]
    actions: list[dict]  # with the actions only an apply block calls, without params
    counters: list[dict]
    meters: list[dict]
    registers: list[dict]
    value_sets: list[dict]
    digests: list[tuple[str, list[tuple[str, int]]]]
    action_by_id: dict[int, str]
    param_widths: dict[int, list[int]]


def build_p4info(bmv2_json: dict, hints: P4InfoHints | None = None) -> p4info_pb2.P4Info:
    """Derive the P4Info of a BMv2 JSON program (our compiler's or p4c's) with p4c's ids.

    Raises :class:`P4TargetError` when the JSON and the hints disagree (an unknown action
    profile, a bad ``@id``) so that a broken P4Info never reaches a switch.
    """
    hints = hints or P4InfoHints()
    if hints.arch != "v1model":
        raise P4TargetError(f"architecture '{hints.arch}' is not supported (only v1model)")
    widths = _FieldWidths(bmv2_json)
    new_types = NewTypes(hints.new_types)
    objs = _objects(bmv2_json, hints, widths)
    symbols = _symbol_ids(objs, hints)
    visible_actions = _visible_actions(objs, hints)

    info = p4info_pb2.P4Info()
    _add_pkg_info(info, hints)
    implementation_of = _add_tables(info, symbols, objs, visible_actions, hints, widths, new_types)
    _add_actions(info, symbols, visible_actions, hints, new_types)
    _add_action_profiles(info, symbols, objs.profiles, implementation_of, hints)
    _add_counters(info, symbols, objs, hints)
    _add_meters(info, symbols, objs, hints)
    _add_controller_headers(info, symbols, hints, new_types)
    _add_value_sets(info, symbols, objs.value_sets, hints)
    _add_registers(info, symbols, objs.registers, hints, new_types)
    _add_digests(info, symbols, objs.digests, hints, new_types)
    _add_serializable_enums(info, hints)
    new_types.write(info.type_info)
    return info


def _objects(bmv2_json: dict, hints: P4InfoHints, widths: _FieldWidths) -> _Objects:
    actions = _unique_by_name(bmv2_json.get("actions", []))
    listed = {a["name"] for a in actions}
    # An action only an apply block calls has no control-plane parameters: p4c turns them into
    # locals (its RemoveActionParameters pass), so P4Info lists the action without params.
    actions += [{"name": name, "runtime_data": []}
                for name in hints.direct_actions if name not in listed]
    return _Objects(
        tables=_pipeline_objects(bmv2_json, "tables"),
        profiles=_unique_by_name(_pipeline_objects(bmv2_json, "action_profiles")),
        actions=actions,
        counters=bmv2_json.get("counter_arrays", []) or [],
        meters=bmv2_json.get("meter_arrays", []) or [],
        registers=bmv2_json.get("register_arrays", []) or [],
        value_sets=bmv2_json.get("parse_vsets", []) or [],
        digests=_digest_specs(bmv2_json, hints, widths),
        action_by_id={a["id"]: a["name"] for a in bmv2_json.get("actions", [])},
        param_widths={a["id"]: [int(rd["bitwidth"]) for rd in a.get("runtime_data", [])]
                      for a in bmv2_json.get("actions", [])})


def _visible_actions(objs: _Objects, hints: P4InfoHints) -> list[dict]:
    """As in p4c: the actions a table lists or an apply block calls (in p4c's JSON, through a
    synthesized table; its dot-less synthesized actions stay out); never an unused one."""
    referenced = {a for t in objs.tables for a in t.get("actions", [])
                  if "." in a or _table_is_visible(t["name"], hints)}
    return [a for a in objs.actions if a["name"] not in hints.hidden
            and (a["name"] in referenced or a["name"] in hints.direct_actions)]


def _symbol_ids(objs: _Objects, hints: P4InfoHints) -> SymbolIds:
    """The ids of every symbol of the program: all take part in id probing and alias
    uniqueness, hidden ones included, as in p4c."""
    symbols = SymbolIds(hints.explicit_ids)
    for t in objs.tables:
        symbols.add(PREFIX_TABLE, t["name"])
    for a in objs.actions:
        symbols.add(PREFIX_ACTION, a["name"])
    for p in objs.profiles:
        symbols.add(PREFIX_ACTION_PROFILE, p["name"])
    for c in objs.counters:
        symbols.add(PREFIX_DIRECT_COUNTER if c.get("is_direct") else PREFIX_COUNTER, c["name"])
    for m in objs.meters:
        symbols.add(PREFIX_DIRECT_METER if m.get("is_direct") else PREFIX_METER, m["name"])
    for r in objs.registers:
        symbols.add(PREFIX_REGISTER, r["name"])
    for vs in objs.value_sets:
        symbols.add(PREFIX_VALUE_SET, vs["name"])
    for d in objs.digests:
        symbols.add(PREFIX_DIGEST, d[0])
    for ch in hints.controller_headers:
        symbols.add(PREFIX_CONTROLLER_HEADER, ch.name)
    symbols.assign()
    return symbols


def _add_pkg_info(info: p4info_pb2.P4Info, hints: P4InfoHints) -> None:
    info.pkg_info.arch = hints.arch
    for key, value in hints.pkg_info.items():
        if key not in PKG_INFO_KEYS:
            raise P4TargetError(f"@pkginfo: unknown key '{key}' (one of {', '.join(PKG_INFO_KEYS)})")
        setattr(info.pkg_info, key, value)
    apply_annotations(info.pkg_info, hints.pkg_annotations)


def _add_tables(info: p4info_pb2.P4Info, symbols: SymbolIds, objs: _Objects, visible_actions: list[dict],
                hints: P4InfoHints, widths: _FieldWidths, new_types: NewTypes) -> dict[str, str]:
    """The visible tables, after checking what they refer to; returns each one's action
    profile (table name -> profile name)."""
    direct_counter_of = {c.get("binding"): c["name"] for c in objs.counters if c.get("is_direct")}
    direct_meter_of = {m.get("binding"): m["name"] for m in objs.meters if m.get("is_direct")}
    profile_names = {p["name"] for p in objs.profiles}
    implementation_of: dict[str, str] = {}

    action_names = {a["name"] for a in objs.actions}
    visible_action_names = {a["name"] for a in visible_actions}
    direct_counters = {c["name"] for c in objs.counters if c.get("is_direct")}
    direct_meters = {m["name"] for m in objs.meters if m.get("is_direct")}
    for t in objs.tables:
        if not _table_is_visible(t["name"], hints):
            continue
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
        _add_table(info, symbols, t, th, widths, new_types, objs.action_by_id, objs.param_widths, impl,
                   th.direct_counter or direct_counter_of.get(t["name"]),
                   th.direct_meter or direct_meter_of.get(t["name"]))
    return implementation_of


def _add_actions(info: p4info_pb2.P4Info, symbols: SymbolIds, visible_actions: list[dict],
                 hints: P4InfoHints, new_types: NewTypes) -> None:
    for a in visible_actions:
        pa = info.actions.add()
        _preamble(pa.preamble, symbols, PREFIX_ACTION, a["name"],
                  hints.action_annotations.get(a["name"], []))
        param_types = hints.action_param_types.get(a["name"], [])
        param_annotations = hints.action_param_annotations.get(a["name"], [])
        for i, rd in enumerate(a.get("runtime_data", []), start=1):
            param = pa.params.add()
            param.id = i
            param.name = rd["name"]
            new_types.describe(param, param_types[i - 1] if i <= len(param_types) else None, rd["bitwidth"])
            if i <= len(param_annotations):
                apply_annotations(param, param_annotations[i - 1])


def _add_action_profiles(info: p4info_pb2.P4Info, symbols: SymbolIds, profiles: list[dict],
                         implementation_of: dict[str, str], hints: P4InfoHints) -> None:
    for p in profiles:
        ap = info.action_profiles.add()
        annotations = hints.extern_annotations.get(p["name"], [])
        _preamble(ap.preamble, symbols, PREFIX_ACTION_PROFILE, p["name"], annotations)
        ap.with_selector = bool(p.get("selector"))
        ap.size = int(p.get("max_size", 0))
        for tname in sorted(n for n, impl in implementation_of.items() if impl == p["name"]):
            ap.table_ids.append(symbols.id(PREFIX_TABLE, tname))
        max_group = annotation_int(annotations, "max_group_size")
        if max_group is not None and ap.with_selector:
            ap.max_group_size = max_group


def _add_counters(info: p4info_pb2.P4Info, symbols: SymbolIds, objs: _Objects, hints: P4InfoHints) -> None:
    for c in objs.counters:
        annotations = hints.extern_annotations.get(c["name"], [])
        unit_name = hints.counter_units.get(c["name"], "packets_and_bytes")
        if unit_name not in _COUNTER_UNITS:
            raise P4TargetError(f"counter '{c['name']}': unknown unit '{unit_name}'")
        if c.get("is_direct"):
            dc = info.direct_counters.add()
            _preamble(dc.preamble, symbols, PREFIX_DIRECT_COUNTER, c["name"], annotations)
            dc.spec.unit = _COUNTER_UNITS[unit_name]
            if c.get("binding") in {t["name"] for t in objs.tables}:
                dc.direct_table_id = symbols.id(PREFIX_TABLE, c["binding"])
        else:
            ic = info.counters.add()
            _preamble(ic.preamble, symbols, PREFIX_COUNTER, c["name"], annotations)
            ic.spec.unit = _COUNTER_UNITS[unit_name]
            ic.size = int(c.get("size", 0))


def _add_meters(info: p4info_pb2.P4Info, symbols: SymbolIds, objs: _Objects, hints: P4InfoHints) -> None:
    for m in objs.meters:
        annotations = hints.extern_annotations.get(m["name"], [])
        unit = _METER_UNITS.get(str(m.get("type", "")).lower(), p4info_pb2.MeterSpec.UNSPECIFIED)
        if m.get("is_direct"):
            dm = info.direct_meters.add()
            _preamble(dm.preamble, symbols, PREFIX_DIRECT_METER, m["name"], annotations)
            dm.spec.unit = unit
            if m.get("binding") in {t["name"] for t in objs.tables}:
                dm.direct_table_id = symbols.id(PREFIX_TABLE, m["binding"])
        else:
            im = info.meters.add()
            _preamble(im.preamble, symbols, PREFIX_METER, m["name"], annotations)
            im.spec.unit = unit
            im.size = int(m.get("size", 0))


def _add_controller_headers(info: p4info_pb2.P4Info, symbols: SymbolIds, hints: P4InfoHints,
                            new_types: NewTypes) -> None:
    for ch in hints.controller_headers:
        cpm = info.controller_packet_metadata.add()
        cpm.preamble.id = symbols.id(PREFIX_CONTROLLER_HEADER, ch.name)
        cpm.preamble.name = ch.controller_header
        cpm.preamble.alias = ch.controller_header
        annotations = list(ch.annotations)
        if not any(annotation_name(a) == "controller_header" for a in annotations):
            annotations.insert(0, f'@controller_header("{ch.controller_header}")')
        apply_annotations(cpm.preamble, annotations)
        for i, (fname, width) in enumerate(ch.fields, start=1):
            md = cpm.metadata.add()
            md.id = i
            md.name = fname
            new_types.describe(md, ch.type_names[i - 1] if i <= len(ch.type_names) else None, width)
            if i <= len(ch.field_annotations):
                apply_annotations(md, ch.field_annotations[i - 1])


def _add_value_sets(info: p4info_pb2.P4Info, symbols: SymbolIds, value_sets: list[dict],
                    hints: P4InfoHints) -> None:
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


def _add_registers(info: p4info_pb2.P4Info, symbols: SymbolIds, registers: list[dict], hints: P4InfoHints,
                   new_types: NewTypes) -> None:
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


def _add_digests(info: p4info_pb2.P4Info, symbols: SymbolIds, digests: list[tuple[str, list[tuple[str, int]]]],
                 hints: P4InfoHints, new_types: NewTypes) -> None:
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


def _add_serializable_enums(info: p4info_pb2.P4Info, hints: P4InfoHints) -> None:
    for enum_name, (width, members) in hints.serializable_enums.items():
        spec = info.type_info.serializable_enums[enum_name]
        spec.underlying_type.bitwidth = int(width)
        for member_name, value in members:
            m = spec.members.add()
            m.name = member_name
            m.value = _param_bytes(value & ((1 << width) - 1), width)


def _preamble(pre: Any, symbols: SymbolIds, prefix: int, name: str, annotations: Iterable[str]) -> None:
    pre.id = symbols.id(prefix, name)
    pre.name = name
    pre.alias = symbols.alias(name)
    apply_annotations(pre, annotations)


def _add_table(info: p4info_pb2.P4Info, symbols: SymbolIds, t: dict, th: TableHints,
               widths: _FieldWidths, new_types: NewTypes, action_by_id: dict[int, str],
               param_widths: dict[int, list[int]], impl: str | None,
               direct_counter: str | None, direct_meter: str | None) -> None:
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
        if th.key_match_kinds and i < len(th.key_match_kinds):
            match_type = th.key_match_kinds[i]
        if match_type in _MATCH_TYPES:
            mf.match_type = _MATCH_TYPES[match_type]
        else:
            mf.other_match_type = match_type
        if i < len(th.key_annotations):
            apply_annotations(mf, th.key_annotations[i])

    for aname in t.get("actions", []):
        ref = pt.action_refs.add()
        ref.id = symbols.id(PREFIX_ACTION, aname)
        scope_name = th.action_scopes.get(aname, "TABLE_AND_DEFAULT")
        if scope_name not in _SCOPES:
            raise P4TargetError(f"table '{name}': unknown action scope '{scope_name}' for '{aname}'")
        scope, annotation = _SCOPES[scope_name]
        ref_annotations = th.action_ref_annotations.get(aname, [])
        # the reference's own annotations in source order, @defaultonly/@tableonly among them
        apply_annotations(ref, ref_annotations)
        if annotation and annotation not in ref_annotations:
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
