"""JSON as older compilers wrote it (p4c-bm for P4_14), which BMv2 still reads: tables list their
actions by name without `action_ids` and have no `default_entry`, transitions have no `type`,
checksums no `verify`/`update`, no `__meta__`; P4_14 primitives (`modify_field`, `add_to_field`,
`drop`). table_add by action name and forwarding work in the engine (simple_switch_CLI:
tests/integration/p4target/test_older_json_thrift.py)."""

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.engine import Engine, Exact
from p4target.engine.loader.schema import validate
from support.older_json import check_forwarded, field, hexv, older_router, packet, routes


def test_older_json_is_valid_bmv2_json():
    validate(older_router())


def test_tables_without_action_ids_take_entries_by_action_name():
    eng = Engine(older_router())
    assert sorted(eng.table("ipv4_lpm").actions) == ["_drop", "set_nhop"]
    routes(eng.table_add)
    check_forwarded(eng.process(1, packet()))
    assert eng.counter_read("seen", 1)[0] == 1
    assert eng.process(1, packet(dst="10.0.2.10")) == [(0, packet(dst="10.0.2.10"))]  # miss: no default action
    assert eng.table_get_default("ipv4_lpm") == (None, ())


def test_parser_ops_in_their_older_forms():
    """`shift` by a plain number of bytes (discarded), `verify` with a plain integer error code."""
    j = older_router()
    j["errors"] = [["NoError", 0], ["PacketTooShort", 1], ["BadSource", 7]]
    j["parsers"][0]["parse_states"][0]["parser_ops"] = [{"op": "shift", "parameters": [2]}]
    bad_source = {"type": "expression", "value": {"op": "!=", "left": field("ethernet", "srcAddr"),
                                                  "right": hexv(0x0BAD)}}
    j["parsers"][0]["parse_states"][2]["parser_ops"].insert(0, {"op": "verify", "parameters": [bad_source, 7]})
    validate(j)
    eng = Engine(j)
    routes(eng.table_add)
    check_forwarded(eng.process(1, b"\xee\xee" + packet()))
    # a failed verify stops the parser before ipv4 is extracted: not routed, ipv4 left as payload
    eng.table_add("send_frame", [Exact(0)], "_drop")
    spoofed = bytes(Ether(dst="00:00:00:00:00:aa", src="00:00:00:00:0b:ad") / IP(dst="10.0.1.10") / UDP())
    assert eng.process(1, b"\xee\xee" + spoofed) == []
