"""Table entries over gRPC: insert/modify/delete/read, wildcards, defaults, priorities, errors."""
import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4target.engine.sample_programs import l3_router

EXACT, TERN = "MyIngress.t_exact", "MyIngress.t_tern"
Entity = p4runtime_pb2.Entity


def pkt(a=1, b=2, c=3, d=4):
    return bytes([a, b]) + c.to_bytes(2, "big") + d.to_bytes(4, "big")


def send(sw, frame, port=0):
    sw.target.receive(port, frame)
    return sw.sink.get()


def all_entries(c, table_id=0):
    return [e.table_entry for e in c.read(Entity(table_entry=p4runtime_pb2.TableEntry(table_id=table_id)))]


def test_exact_insert_modify_delete_drive_the_data_path(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    assert send(sw, pkt(a=1)) == (0, pkt(a=1))  # default NoAction
    entry = ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.fwd", [3])
    c.write(u("INSERT", "table_entry", entry))
    assert send(sw, pkt(a=1)) == (3, pkt(a=1))
    got = all_entries(c, ids.table(EXACT))
    assert got == [entry]
    modified = ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.fwd", [4], controller_metadata=9,
                         metadata=b"cookie")
    c.write(u("MODIFY", "table_entry", modified))
    assert send(sw, pkt(a=1)) == (4, pkt(a=1))
    assert all_entries(c, ids.table(EXACT)) == [modified]
    c.write(u("DELETE", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 1)])))
    assert all_entries(c) == []
    assert send(sw, pkt(a=1)) == (0, pkt(a=1))


def test_read_wildcards_and_exact_match_filter(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    for a in range(1, 6):
        c.write(u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", a)], "MyIngress.fwd", [a])))
    c.write(u("INSERT", "table_entry", ids.entry(TERN, [("hdr.h.b", "ternary", 1, 0xFF)], "MyIngress.setb", [7],
                                                 priority=5)))
    assert len(all_entries(c)) == 6
    assert len(all_entries(c, ids.table(EXACT))) == 5
    one = c.read(Entity(table_entry=ids.entry(EXACT, [("hdr.h.a", "exact", 3)])))
    assert [e.table_entry.action.action.params[0].value for e in one] == [b"\x03"]
    assert c.read(Entity(table_entry=ids.entry(EXACT, [("hdr.h.a", "exact", 9)]))) == []
    # several entities in one request
    got = c.read(Entity(table_entry=p4runtime_pb2.TableEntry(table_id=ids.table(TERN))),
                 Entity(table_entry=ids.entry(EXACT, [("hdr.h.a", "exact", 5)])))
    assert [e.table_entry.table_id for e in got] == [ids.table(TERN), ids.table(EXACT)]


def test_higher_p4runtime_priority_wins_and_dont_care_fields_are_omitted(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    low = ids.entry(TERN, [("hdr.h.b", "ternary", 2, 0xFF)], "MyIngress.setb", [0x11], priority=10)
    high = ids.entry(TERN, [("hdr.h.c", "range", 1, 5), ("hdr.h.d", "optional", 4)], "MyIngress.setb", [0x22],
                     priority=20)
    c.write(u("INSERT", "table_entry", low), u("INSERT", "table_entry", high))
    assert send(sw, pkt()) == (0, pkt(b=0x22))
    assert send(sw, pkt(c=6)) == (0, pkt(b=0x11, c=6))  # outside the range
    assert send(sw, pkt(d=5)) == (0, pkt(b=0x11, d=5))  # optional mismatch
    got = sorted(all_entries(c, ids.table(TERN)), key=lambda e: e.priority)
    assert got == [low, high]
    # the same key at another priority is a different entry
    c.write(u("INSERT", "table_entry", ids.entry(TERN, [("hdr.h.b", "ternary", 2, 0xFF)], "MyIngress.setb", [0x33],
                                                 priority=30)))
    assert send(sw, pkt()) == (0, pkt(b=0x33))
    prio30 = c.read(Entity(table_entry=p4runtime_pb2.TableEntry(table_id=ids.table(TERN), priority=30)))
    assert [e.table_entry.priority for e in prio30] == [30]
    c.write(u("DELETE", "table_entry", ids.entry(TERN, [("hdr.h.b", "ternary", 2, 0xFF)], priority=30)),
            u("DELETE", "table_entry", high))
    assert send(sw, pkt()) == (0, pkt(b=0x11))


def test_default_action_modify_read_and_reset(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    default = ids.entry(EXACT, action="MyIngress.fwd", params=[5], is_default_action=True)
    c.write(u("MODIFY", "table_entry", default))
    assert send(sw, pkt(a=77)) == (5, pkt(a=77))
    got = c.read(Entity(table_entry=p4runtime_pb2.TableEntry(table_id=ids.table(EXACT), is_default_action=True)))
    assert [e.table_entry for e in got] == [default]
    c.write(u("MODIFY", "table_entry", p4runtime_pb2.TableEntry(table_id=ids.table(EXACT), is_default_action=True)))
    assert send(sw, pkt(a=77)) == (0, pkt(a=77))
    got = c.read(Entity(table_entry=p4runtime_pb2.TableEntry(table_id=ids.table(EXACT), is_default_action=True)))
    assert got[0].table_entry.action.action.action_id == ids.action("NoAction")
    with pytest.raises(grpc.RpcError) as e:
        c.write(u("INSERT", "table_entry", default))
    assert helpers.write_errors(e.value)[0][0] == code_pb2.INVALID_ARGUMENT


def test_const_default_action_is_permission_denied(switch, program, helpers):
    bmv2, p4info = program
    ids = helpers.Ids(p4info)
    next(t for t in p4info.tables if t.preamble.name == EXACT).const_default_action_id = ids.action("NoAction")
    c = switch.client()
    c.set_pipeline(bmv2, p4info)
    with pytest.raises(grpc.RpcError) as e:
        c.write(helpers.update("MODIFY", "table_entry",
                               ids.entry(EXACT, action="MyIngress.fwd", params=[5], is_default_action=True)))
    assert helpers.write_errors(e.value)[0][0] == code_pb2.PERMISSION_DENIED


def test_per_update_errors_continue_on_error(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    good = ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.fwd", [3])
    c.write(u("INSERT", "table_entry", good))
    batch = [
        u("INSERT", "table_entry", good),                                                           # duplicate
        u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 2)], "MyIngress.fwd", [2])),  # ok
        u("DELETE", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 9)])),                     # missing
        u("MODIFY", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 8)], "MyIngress.fwd", [1])),  # missing
        u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 0x100)], "MyIngress.fwd", [1])),  # too wide
        u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 3)], "MyIngress.fwd", [0x200])),  # param too wide
        u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 3)], "MyIngress.setb", [1])),  # not its action
        u("INSERT", "table_entry", ids.entry(EXACT, [], "MyIngress.fwd", [1])),                      # exact omitted
        u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 4)], "MyIngress.fwd", [1], priority=3)),
        u("INSERT", "table_entry", p4runtime_pb2.TableEntry(table_id=0x02999999)),                  # unknown table
        u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", b"")], "MyIngress.fwd", [1])),  # empty bytes
        u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 5)])),                     # no action
    ]
    with pytest.raises(grpc.RpcError) as e:
        c.write(*batch)
    codes = [code for code, _ in helpers.write_errors(e.value)]
    I = code_pb2.INVALID_ARGUMENT
    assert codes == [code_pb2.ALREADY_EXISTS, code_pb2.OK, code_pb2.NOT_FOUND, code_pb2.NOT_FOUND, I, I, I, I, I,
                     code_pb2.NOT_FOUND, I, I]
    assert sorted(e.match[0].exact.value for e in all_entries(c)) == [b"\x01", b"\x02"]


@pytest.mark.parametrize("match, priority", [
    ([("hdr.h.b", "ternary", 0x12, 0x0F)], 1),          # value bits outside the mask
    ([("hdr.h.b", "ternary", 0, 0)], 1),                # all-zero mask must be omitted
    ([("hdr.h.c", "range", 5, 4)], 1),                  # low > high
    ([("hdr.h.c", "range", 0, 0xFFFF)], 1),             # full range must be omitted
    ([("hdr.h.b", "ternary", 1, 0xFF)], 0),             # ternary table needs a priority
    ([("hdr.h.b", "exact", 1)], 1),                     # wrong match kind for the field
    ([("hdr.h.b", "ternary", 1, 0xFF), ("hdr.h.b", "ternary", 1, 0xFF)], 1),  # field twice
])
def test_invalid_ternary_range_matches(loaded, ids, helpers, match, priority):
    sw, c, _ = loaded
    with pytest.raises(grpc.RpcError) as e:
        c.write(helpers.update("INSERT", "table_entry", ids.entry(TERN, match, "MyIngress.setb", [1], priority=priority)))
    assert helpers.write_errors(e.value)[0][0] == code_pb2.INVALID_ARGUMENT
    assert all_entries(c) == []


def test_lpm_router_program(switch, helpers):
    router = l3_router()
    p4info = helpers.p4info_for(router)
    ids = helpers.Ids(p4info)
    c = switch.client()
    c.set_pipeline(router, p4info)
    u, LPM = helpers.update, "MyIngress.ipv4_lpm"
    e24 = ids.entry(LPM, [("hdr.ipv4.dstAddr", "lpm", 0x0A000100, 24)], "MyIngress.ipv4_forward", [0x0A0B0C0D0E0F, 2])
    e16 = ids.entry(LPM, [("hdr.ipv4.dstAddr", "lpm", 0x0A000000, 16)], "MyIngress.ipv4_forward", [0x0A0B0C0D0E0F, 3])
    c.write(u("INSERT", "table_entry", e24), u("INSERT", "table_entry", e16))
    assert sorted((e.match[0].lpm.prefix_len for e in all_entries(c))) == [16, 24]
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    for dst, port in (("10.0.1.9", 2), ("10.0.7.9", 3)):
        switch.target.receive(1, bytes(Ether() / IP(dst=dst) / UDP()))
        assert switch.sink.get()[0] == port
    with pytest.raises(grpc.RpcError) as e:
        c.write(u("INSERT", "table_entry", ids.entry(LPM, [("hdr.ipv4.dstAddr", "lpm", 0x0A000001, 24)],
                                                     "MyIngress.drop")),
                u("INSERT", "table_entry", ids.entry(LPM, [("hdr.ipv4.dstAddr", "lpm", 0, 0)], "MyIngress.drop")),
                u("INSERT", "table_entry", ids.entry(LPM, [("hdr.ipv4.dstAddr", "lpm", 0x0A000000, 33)],
                                                     "MyIngress.drop")),
                u("INSERT", "table_entry", ids.entry(LPM, [], "MyIngress.drop")))  # omitted: /0, fine
    codes = [code for code, _ in helpers.write_errors(e.value)]
    assert codes == [code_pb2.INVALID_ARGUMENT] * 3 + [code_pb2.OK]
    wildcard = c.read(Entity(table_entry=ids.entry(LPM, [])))  # an empty match reads every entry
    assert len(wildcard) == 3 and any(not e.table_entry.match for e in wildcard)
