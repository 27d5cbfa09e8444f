"""P4Runtime against programs compiled by the project compiler (P4Info + BMv2 JSON of
`p4target.compiler.compile_file`): controller headers, digests, and generic entries in every
table of the gradlane data plane and the switch conformance programs."""
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2

from p4target.compiler import compile_file

P = p4runtime_pb2
ROOT = Path(__file__).resolve().parents[5]
LANG = ROOT / "tests" / "conformance" / "language"
MF = p4info_pb2.MatchField


def compiled(path: Path):
    prog = compile_file(str(path), include_dirs=[str(path.parent)])
    return prog.bmv2_json, prog.p4info


def test_compiled_controller_headers_packet_out_and_in(switch):
    bmv2, p4info = compiled(LANG / "controller_header.p4")
    c = switch.client()
    c.set_pipeline(bmv2, p4info)
    out_md = {m.name: m.id for m in next(h for h in p4info.controller_packet_metadata
                                         if h.preamble.name == "packet_out").metadata}
    body = bytes.fromhex("0102030405060708090a0b0c")
    req = P.StreamMessageRequest()
    req.packet.payload = body
    req.packet.metadata.add(metadata_id=out_md["egress_port"], value=b"\x03")
    req.packet.metadata.add(metadata_id=out_md["pad"], value=b"\x00")
    c.send(req)
    assert switch.sink.get() == (3, body)
    switch.target.receive(2, body)
    pin = c.get("packet").packet
    in_md = {m.id: m.name for m in next(h for h in p4info.controller_packet_metadata
                                        if h.preamble.name == "packet_in").metadata}
    assert pin.payload == body
    assert {in_md[m.metadata_id]: m.value for m in pin.metadata} == {"ingress_port": b"\x02", "pad": b"\x00"}


def test_compiled_digest_reaches_the_controller(switch, helpers):
    bmv2, p4info = compiled(LANG / "digest_log_assert.p4")
    c = switch.client()
    c.set_pipeline(bmv2, p4info)
    digest = p4info.digests[0]
    assert digest.preamble.name == "learn_t"
    entry = P.DigestEntry(digest_id=digest.preamble.id)
    entry.config.max_list_size = 1
    c.write(helpers.update("INSERT", "digest_entry", entry))
    switch.target.receive(0, bytes([7, 0]) + (0x1234).to_bytes(2, "big") + bytes(8))  # h = {a, b, c, d, e}
    dl = c.get("digest").digest
    assert [[m.bitstring for m in d.struct.members] for d in dl.data] == [[b"\x07", b"\x12\x34"]]


def _field_match(fm, f):
    top = 1 << (f.bitwidth - 1)
    if f.match_type == MF.EXACT:
        fm.exact.value = b"\x01"
    elif f.match_type == MF.LPM:
        fm.lpm.value, fm.lpm.prefix_len = top.to_bytes((f.bitwidth + 7) // 8, "big").lstrip(b"\x00"), 1
    elif f.match_type == MF.TERNARY:
        fm.ternary.value, fm.ternary.mask = b"\x01", b"\x01"
    elif f.match_type == MF.RANGE:
        fm.range.low, fm.range.high = b"\x01", b"\x01"
    else:
        fm.optional.value = b"\x01"


def _first_action(p4info, table, actions):
    refs = [r for r in table.action_refs if r.scope != p4info_pb2.ActionRef.DEFAULT_ONLY]
    if not refs:
        return None
    action = actions[refs[0].id]
    msg = P.Action(action_id=action.preamble.id)
    for p in action.params:
        msg.params.add(param_id=p.id, value=b"\x01")
    return msg


def generic_entities(p4info) -> tuple[list, list]:
    """(profile members and groups, table entries): one valid entry per non-const table with
    every field set and its first action; indirect tables point at a group (selector) or a
    member of their action profile."""
    actions = {a.preamble.id: a for a in p4info.actions}
    tables = {t.preamble.id: t for t in p4info.tables}
    profile_entities, entries = [], []
    target_of = {}
    for prof in p4info.action_profiles:
        table = tables[prof.table_ids[0]]
        action = _first_action(p4info, table, actions)
        member = P.ActionProfileMember(action_profile_id=prof.preamble.id, member_id=1, action=action)
        profile_entities.append(P.Entity(action_profile_member=member))
        if prof.with_selector:
            group = P.ActionProfileGroup(action_profile_id=prof.preamble.id, group_id=1)
            group.members.add(member_id=1, weight=1)
            profile_entities.append(P.Entity(action_profile_group=group))
            target_of[prof.preamble.id] = ("group", 1)
        else:
            target_of[prof.preamble.id] = ("member", 1)
    for t in p4info.tables:
        if t.is_const_table:
            continue
        action = _first_action(p4info, t, actions)
        if action is None:
            continue
        te = P.TableEntry(table_id=t.preamble.id)
        for f in t.match_fields:
            _field_match(te.match.add(field_id=f.id), f)
        if any(f.match_type in (MF.TERNARY, MF.RANGE, MF.OPTIONAL) for f in t.match_fields):
            te.priority = 10
        if t.implementation_id:
            kind, ident = target_of[t.implementation_id]
            setattr(te.action, f"action_profile_{kind}_id", ident)
        else:
            te.action.action.CopyFrom(action)
        entries.append(te)
    return profile_entities, entries


PROGRAMS = [ROOT / "p4src" / "gradlane.p4"] + sorted((ROOT / "tests" / "conformance" / "switch").glob("*.p4"))


@pytest.mark.parametrize("path", [p for p in PROGRAMS if p.name != "common_h.p4"], ids=lambda p: p.name)
def test_compiled_program_tables_registers_counters_round_trip(switch, helpers, path):
    bmv2, p4info = compiled(path)
    c = switch.client()
    c.set_pipeline(bmv2, p4info)
    profile_entities, entries = generic_entities(p4info)
    for e in profile_entities:
        kind = e.WhichOneof("entity")
        c.write(helpers.update("INSERT", kind, getattr(e, kind)))
    if entries:
        c.write(*[helpers.update("INSERT", "table_entry", e) for e in entries])
    got = [e.table_entry for e in c.read(P.Entity(table_entry=P.TableEntry()))]
    key = lambda e: e.SerializeToString(deterministic=True)  # noqa: E731
    assert sorted(got, key=key) == sorted(entries, key=key)
    read_back = c.read(P.Entity(action_profile_member=P.ActionProfileMember()),
                       P.Entity(action_profile_group=P.ActionProfileGroup()))
    assert sorted(read_back, key=key) == sorted(profile_entities, key=key)
    for reg in p4info.registers:
        cell = P.RegisterEntry(register_id=reg.preamble.id, data=p4data_pb2.P4Data(bitstring=b"\x01"))
        cell.index.index = reg.size - 1
        c.write(helpers.update("MODIFY", "register_entry", cell))
        assert c.read(P.Entity(register_entry=cell))[0].register_entry == cell
    counters = c.read(P.Entity(counter_entry=P.CounterEntry()))
    assert len(counters) == sum(ctr.size for ctr in p4info.counters)
    if entries:
        c.write(*[helpers.update("DELETE", "table_entry", e) for e in entries])
    for e in reversed(profile_entities):
        kind = e.WhichOneof("entity")
        c.write(helpers.update("DELETE", kind, getattr(e, kind)))
    assert c.read(P.Entity(table_entry=P.TableEntry())) == []
    assert c.read(P.Entity(action_profile_member=P.ActionProfileMember())) == []


def test_compiled_initial_entries_read_back_in_priority_order_and_const_ones_are_read_only(switch, helpers):
    bmv2, p4info = compiled(LANG / "const_entries.p4")
    c = switch.client()
    c.set_pipeline(bmv2, p4info)

    def entries(table):
        return [e.table_entry for e in c.read(P.Entity(table_entry=P.TableEntry(table_id=table.preamble.id)))]

    # `entries` with `priority =` (p4c allows priorities in non-const entries only): initial, writable
    table = next(t for t in p4info.tables if t.preamble.name.endswith("prioritized"))
    assert table.has_initial_entries and not table.is_const_table
    got = entries(table)
    by_priority = sorted(got, key=lambda e: -e.priority)
    assert [e.action.action.params[0].value for e in by_priority] == [b"\x14", b"\x0a", b"\x05"]
    assert not by_priority[-1].match  # the `default` keyset reads back as all don't-care
    assert not any(e.is_const for e in got)
    c.write(helpers.update("DELETE", "table_entry", by_priority[0]))
    assert len(entries(table)) == 2
    # `const entries`: read-only
    const = next(t for t in p4info.tables if t.preamble.name.endswith("annotated"))
    assert const.is_const_table
    got = entries(const)
    assert len(got) == 2 and all(e.is_const for e in got)
    with pytest.raises(grpc.RpcError) as e:
        c.write(helpers.update("DELETE", "table_entry", got[0]))
    assert helpers.write_errors(e.value)[0][0] == code_pb2.PERMISSION_DENIED


def test_compiled_value_sets_written_and_read(switch, helpers):
    bmv2, p4info = compiled(LANG / "value_set.p4")
    c = switch.client()
    c.set_pipeline(bmv2, p4info)
    vsets = {v.preamble.name: v for v in p4info.value_sets}
    pairs = vsets["VsParser.pairs"]
    assert [(m.name, m.bitwidth) for m in pairs.match] == [("kind", 8), ("c", 16)]
    entry = P.ValueSetEntry(value_set_id=pairs.preamble.id)
    member = entry.members.add()
    member.match.add(field_id=1).exact.value = b"\x66"
    member.match.add(field_id=2).exact.value = b"\x00\x05"
    c.write(helpers.update("MODIFY", "value_set_entry", entry))
    assert switch.target.engine.parse_vset_get("VsParser.pairs") == [0x660005]
    tagged = P.ValueSetEntry(value_set_id=vsets["VsParser.tagged"].preamble.id)
    tagged.members.add().match.add(field_id=1).exact.value = b"\x20"
    c.write(helpers.update("MODIFY", "value_set_entry", tagged))
    # a = 0x20 is now tagged, and (kind 0x66, c 5) is a pair: h.b = 1, h.e = all ones
    switch.target.receive(0, bytes.fromhex("20000005" "00000003" "00000004" "6655"))
    assert switch.sink.get() == (1, bytes.fromhex("20010005" "00000003" "ffffffff" "6655"))
    read = list(c.read(P.Entity(value_set_entry=P.ValueSetEntry(value_set_id=pairs.preamble.id))))
    got = read[0].value_set_entry.members[0]
    assert [(m.field_id, m.exact.value) for m in got.match] == [(1, b"\x66"), (2, b"\x05")]
    with pytest.raises(grpc.RpcError):
        c.write(helpers.update("INSERT", "value_set_entry", entry))
