"""Action profiles, counters, meters, registers and the packet replication engine over gRPC."""
import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2

from p4target.engine import GREEN, RED, hashes

P = p4runtime_pb2
EXACT, SEL, PROF = "MyIngress.t_exact", "MyIngress.t_sel", "MyIngress.sel"


def pkt(a=1, b=2, c=3, d=4):
    return bytes([a, b]) + c.to_bytes(2, "big") + d.to_bytes(4, "big")


def send(sw, frame, port=0):
    sw.target.receive(port, frame)
    return sw.sink.get()


def member(ids, mid, port):
    return P.ActionProfileMember(action_profile_id=ids.of("action_profiles", PROF), member_id=mid,
                                 action=ids.act("MyIngress.fwd", port))


def group(ids, gid, members, max_size=0):
    g = P.ActionProfileGroup(action_profile_id=ids.of("action_profiles", PROF), group_id=gid, max_size=max_size)
    for m in members:
        g.members.add(member_id=m, weight=1)
    return g


def test_action_selector_members_and_groups(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    c.write(*[u("INSERT", "action_profile_member", member(ids, 10 + p, p)) for p in (1, 2, 3)])
    c.write(u("INSERT", "action_profile_group", group(ids, 7, [11, 12, 13], max_size=4)))
    by_group = ids.entry(SEL, [("hdr.h.c", "exact", 3)])
    by_group.action.action_profile_group_id = 7
    by_member = ids.entry(SEL, [("hdr.h.c", "exact", 4)])
    by_member.action.action_profile_member_id = 12
    c.write(u("INSERT", "table_entry", by_group), u("INSERT", "table_entry", by_member))
    for d in range(8):
        expect = 1 + hashes.crc16(d.to_bytes(4, "big")) % 3
        assert send(sw, pkt(a=0xEE, d=d))[0] == expect
    assert send(sw, pkt(a=0xEE, c=4))[0] == 2
    # read back members, groups and the indirect entries
    got = c.read(P.Entity(action_profile_member=P.ActionProfileMember()))
    assert [e.action_profile_member for e in got] == [member(ids, 10 + p, p) for p in (1, 2, 3)]
    got = c.read(P.Entity(action_profile_group=P.ActionProfileGroup(action_profile_id=ids.of("action_profiles", PROF))))
    assert [e.action_profile_group for e in got] == [group(ids, 7, [11, 12, 13], max_size=4)]
    entries = sorted((e.table_entry for e in c.read(P.Entity(table_entry=P.TableEntry(table_id=ids.table(SEL))))),
                     key=lambda e: e.match[0].exact.value)
    assert entries == [by_group, by_member]
    # shrink the group: traffic follows; in-use members and groups cannot be deleted
    c.write(u("MODIFY", "action_profile_group", group(ids, 7, [13])))
    assert {send(sw, pkt(a=0xEE, d=d))[0] for d in range(6)} == {3}
    with pytest.raises(grpc.RpcError) as e:
        c.write(u("DELETE", "action_profile_member", member(ids, 13, 3)),
                u("DELETE", "action_profile_member", member(ids, 12, 2)),
                u("DELETE", "action_profile_group", group(ids, 7, [])),
                u("INSERT", "action_profile_member", member(ids, 11, 1)),
                u("INSERT", "action_profile_group", group(ids, 8, [99])),
                u("INSERT", "action_profile_group", group(ids, 9, [11, 12, 13], max_size=2)),
                u("DELETE", "action_profile_member", member(ids, 11, 1)))
    assert [code for code, _ in helpers.write_errors(e.value)] == [
        code_pb2.FAILED_PRECONDITION, code_pb2.FAILED_PRECONDITION, code_pb2.FAILED_PRECONDITION,
        code_pb2.ALREADY_EXISTS, code_pb2.NOT_FOUND, code_pb2.RESOURCE_EXHAUSTED, code_pb2.OK]
    # modify a member's action data: the entry using it follows
    c.write(u("MODIFY", "action_profile_member", member(ids, 12, 6)))
    assert send(sw, pkt(a=0xEE, c=4))[0] == 6
    c.write(u("DELETE", "table_entry", by_group), u("DELETE", "table_entry", by_member),
            u("DELETE", "action_profile_group", group(ids, 7, [])),
            u("DELETE", "action_profile_member", member(ids, 12, 0)),
            u("DELETE", "action_profile_member", member(ids, 13, 0)))
    assert c.read(P.Entity(action_profile_member=P.ActionProfileMember())) == []


def test_indirect_table_rejects_direct_actions_and_vice_versa(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    direct_on_indirect = ids.entry(SEL, [("hdr.h.c", "exact", 3)], "MyIngress.fwd", [1])
    member_on_direct = ids.entry(EXACT, [("hdr.h.a", "exact", 3)])
    member_on_direct.action.action_profile_member_id = 1
    missing_member = ids.entry(SEL, [("hdr.h.c", "exact", 3)])
    missing_member.action.action_profile_member_id = 42
    with pytest.raises(grpc.RpcError) as e:
        c.write(u("INSERT", "table_entry", direct_on_indirect), u("INSERT", "table_entry", member_on_direct),
                u("INSERT", "table_entry", missing_member))
    assert [code for code, _ in helpers.write_errors(e.value)] == [
        code_pb2.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT, code_pb2.NOT_FOUND]


def test_indexed_counter_register_and_meter(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    c.write(u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.stats", [2])))
    cnt, reg, mtr = ids.of("counters", "MyIngress.cnt"), ids.of("registers", "MyIngress.reg"), ids.of("meters", "MyIngress.mtr")
    for _ in range(3):
        assert send(sw, pkt()) == (2, pkt(b=GREEN))
    one = P.CounterEntry(counter_id=cnt)
    one.index.index = 1
    got = c.read(P.Entity(counter_entry=one))
    assert [(e.counter_entry.data.packet_count, e.counter_entry.data.byte_count) for e in got] == [(3, 24)]
    everything = c.read(P.Entity(counter_entry=P.CounterEntry()))  # all counters, all indices
    assert len(everything) == 8 and sum(e.counter_entry.data.packet_count for e in everything) == 3
    one.data.packet_count, one.data.byte_count = 100, 1000
    c.write(u("MODIFY", "counter_entry", one))
    assert c.read(P.Entity(counter_entry=one))[0].counter_entry.data.packet_count == 100
    # registers: read all cells, write one, the data path sees it
    cells = c.read(P.Entity(register_entry=P.RegisterEntry(register_id=reg)))
    assert [e.register_entry.data.bitstring for e in cells] == [b"\x00", b"\x00", b"\x03", b"\x00"]
    cell = P.RegisterEntry(register_id=reg, data=p4data_pb2.P4Data(bitstring=b"\x01\x00"))
    cell.index.index = 2
    c.write(u("MODIFY", "register_entry", cell))
    send(sw, pkt())
    assert c.read(P.Entity(register_entry=P.RegisterEntry(register_id=reg, index=cell.index)))[0] \
        .register_entry.data.bitstring == b"\x01\x01"
    # meters: zero rates colour every packet RED; P4Runtime rates are per second
    m = P.MeterEntry(meter_id=mtr, config=P.MeterConfig(cir=0, cburst=0, pir=0, pburst=0))
    m.index.index = 0
    c.write(u("MODIFY", "meter_entry", m))
    assert send(sw, pkt()) == (2, pkt(b=RED))
    m.config.CopyFrom(P.MeterConfig(cir=1000, cburst=10, pir=2000, pburst=20))
    c.write(u("MODIFY", "meter_entry", m))
    assert sw.target.engine.meter_get_rates("MyIngress.mtr", 0) == [(0.001, 10), (0.002, 20)]
    assert c.read(P.Entity(meter_entry=m))[0].meter_entry == m
    assert send(sw, pkt()) == (2, pkt(b=GREEN))
    reset = P.MeterEntry(meter_id=mtr, index=m.index)
    c.write(u("MODIFY", "meter_entry", reset))
    assert not c.read(P.Entity(meter_entry=reset))[0].meter_entry.HasField("config")
    bad_index = P.CounterEntry(counter_id=cnt)
    bad_index.index.index = 8
    bad_value = P.RegisterEntry(register_id=reg, index=cell.index, data=p4data_pb2.P4Data(bitstring=b"\x01" * 5))
    with pytest.raises(grpc.RpcError) as e:
        c.write(u("MODIFY", "counter_entry", bad_index), u("INSERT", "counter_entry", one),
                u("MODIFY", "register_entry", bad_value), u("MODIFY", "meter_entry", P.MeterEntry(meter_id=123)),
                u("MODIFY", "meter_entry", P.MeterEntry(meter_id=mtr, index=m.index,
                                                        config=P.MeterConfig(cir=5, pir=1))))
    assert [code for code, _ in helpers.write_errors(e.value)] == [code_pb2.INVALID_ARGUMENT] * 3 + [
        code_pb2.NOT_FOUND, code_pb2.INVALID_ARGUMENT]
    with pytest.raises(grpc.RpcError) as e:
        c.read(P.Entity(counter_entry=bad_index))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_direct_counter_and_meter_in_entries(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    entry = ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.fwd", [3])
    entry.counter_data.packet_count = 10
    entry.meter_config.CopyFrom(P.MeterConfig(cir=100, cburst=5, pir=200, pburst=10))
    c.write(u("INSERT", "table_entry", entry))
    send(sw, pkt())
    send(sw, pkt())
    q = ids.entry(EXACT, [("hdr.h.a", "exact", 1)])
    q.counter_data.SetInParent()
    q.meter_config.SetInParent()
    got = c.read(P.Entity(table_entry=q))[0].table_entry
    assert (got.counter_data.packet_count, got.counter_data.byte_count) == (12, 16)
    assert got.meter_config == entry.meter_config
    plain = c.read(P.Entity(table_entry=ids.entry(EXACT, [("hdr.h.a", "exact", 1)])))[0].table_entry
    assert not plain.HasField("counter_data") and not plain.HasField("meter_config")
    # DirectCounterEntry / DirectMeterEntry: read all (wildcard table), write one
    dce = c.read(P.Entity(direct_counter_entry=P.DirectCounterEntry()))
    assert [(e.direct_counter_entry.data.packet_count, e.direct_counter_entry.table_entry.match[0].exact.value)
            for e in dce] == [(12, b"\x01")]
    c.write(u("MODIFY", "direct_counter_entry", P.DirectCounterEntry(table_entry=q, data=P.CounterData(packet_count=0,
                                                                                                    byte_count=0))))
    assert c.read(P.Entity(direct_counter_entry=P.DirectCounterEntry(table_entry=q)))[0] \
        .direct_counter_entry.data.packet_count == 0
    c.write(u("MODIFY", "direct_meter_entry", P.DirectMeterEntry(table_entry=q, config=P.MeterConfig(
        cir=1, cburst=1, pir=2, pburst=2))))
    dme = c.read(P.Entity(direct_meter_entry=P.DirectMeterEntry(table_entry=q)))[0].direct_meter_entry
    assert (dme.config.cir, dme.config.pburst) == (1, 2)
    modify = ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.fwd", [3])
    c.write(u("MODIFY", "table_entry", modify))  # no meter_config: the direct meter is reset
    assert not c.read(P.Entity(table_entry=q))[0].table_entry.HasField("meter_config")
    c.write(u("MODIFY", "direct_meter_entry", P.DirectMeterEntry(table_entry=q, config=P.MeterConfig(
        cir=1, cburst=1, pir=2, pburst=2))))
    c.write(u("MODIFY", "direct_meter_entry", P.DirectMeterEntry(table_entry=q)))
    assert not c.read(P.Entity(direct_meter_entry=P.DirectMeterEntry(table_entry=q)))[0] \
        .direct_meter_entry.HasField("config")
    tern = ids.entry("MyIngress.t_tern", [("hdr.h.b", "ternary", 1, 0xFF)], "MyIngress.setb", [1], priority=1)
    tern.counter_data.packet_count = 1
    missing = ids.entry(EXACT, [("hdr.h.a", "exact", 2)])
    with pytest.raises(grpc.RpcError) as e:
        c.write(u("INSERT", "table_entry", tern),
                u("MODIFY", "direct_counter_entry", P.DirectCounterEntry(table_entry=missing)),
                u("INSERT", "direct_counter_entry", P.DirectCounterEntry(table_entry=q)))
    assert [code for code, _ in helpers.write_errors(e.value)] == [
        code_pb2.INVALID_ARGUMENT, code_pb2.NOT_FOUND, code_pb2.INVALID_ARGUMENT]


def test_multicast_groups(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    c.write(u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.mc", [5])))
    grp = P.MulticastGroupEntry(multicast_group_id=5)
    grp.replicas.add(egress_port=1, instance=1)
    grp.replicas.add(egress_port=2, instance=1)
    grp.replicas.add(port=b"\x03", instance=2)  # P4Runtime 1.4 bytes port
    c.write(u("INSERT", "packet_replication_engine_entry", P.PacketReplicationEngineEntry(multicast_group_entry=grp)))
    sw.target.receive(0, pkt())
    assert sorted(p for p, _ in [sw.sink.get() for _ in range(3)]) == [1, 2, 3]
    got = c.read(P.Entity(packet_replication_engine_entry=P.PacketReplicationEngineEntry(
        multicast_group_entry=P.MulticastGroupEntry())))
    assert [e.packet_replication_engine_entry.multicast_group_entry for e in got] == [grp]
    smaller = P.MulticastGroupEntry(multicast_group_id=5)
    smaller.replicas.add(egress_port=4, instance=0)
    c.write(u("MODIFY", "packet_replication_engine_entry", P.PacketReplicationEngineEntry(multicast_group_entry=smaller)))
    assert send(sw, pkt())[0] == 4
    dup = P.MulticastGroupEntry(multicast_group_id=6)
    dup.replicas.add(egress_port=1, instance=0)
    dup.replicas.add(egress_port=1, instance=0)
    pre = P.PacketReplicationEngineEntry
    with pytest.raises(grpc.RpcError) as e:
        c.write(u("INSERT", "packet_replication_engine_entry", pre(multicast_group_entry=smaller)),
                u("MODIFY", "packet_replication_engine_entry", pre(multicast_group_entry=P.MulticastGroupEntry(
                    multicast_group_id=9))),
                u("INSERT", "packet_replication_engine_entry", pre(multicast_group_entry=dup)),
                u("DELETE", "packet_replication_engine_entry", pre(multicast_group_entry=smaller)))
    assert [code for code, _ in helpers.write_errors(e.value)] == [
        code_pb2.ALREADY_EXISTS, code_pb2.NOT_FOUND, code_pb2.INVALID_ARGUMENT, code_pb2.OK]
    sw.target.receive(0, pkt())
    assert sw.sink.drain() == []


def test_clone_sessions(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    pre = P.PacketReplicationEngineEntry
    c.write(u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.clone5")))
    session = P.CloneSessionEntry(session_id=5, packet_length_bytes=4)
    session.replicas.add(egress_port=7, instance=0)
    c.write(u("INSERT", "packet_replication_engine_entry", pre(clone_session_entry=session)))
    sw.target.receive(0, pkt())
    assert sorted(sw.sink.drain(first=3)) == [(1, pkt()), (7, pkt()[:4])]
    two = P.CloneSessionEntry(session_id=5)
    two.replicas.add(egress_port=8, instance=1)
    two.replicas.add(egress_port=9, instance=1)
    c.write(u("MODIFY", "packet_replication_engine_entry", pre(clone_session_entry=two)))
    sw.target.receive(0, pkt())
    assert sorted(p for p, _ in sw.sink.drain(first=3)) == [1, 8, 9]
    got = c.read(P.Entity(packet_replication_engine_entry=pre(clone_session_entry=P.CloneSessionEntry())))
    assert [e.packet_replication_engine_entry.clone_session_entry for e in got] == [two]
    # the hidden multicast group of a clone session is not a multicast group entry
    assert c.read(P.Entity(packet_replication_engine_entry=pre(multicast_group_entry=P.MulticastGroupEntry()))) == []
    c.write(u("DELETE", "packet_replication_engine_entry", pre(clone_session_entry=two)))
    sw.target.receive(0, pkt())
    assert sw.sink.drain(first=3) == [(1, pkt())]
    with pytest.raises(grpc.RpcError) as e:
        c.write(u("DELETE", "packet_replication_engine_entry", pre(clone_session_entry=two)),
                u("INSERT", "packet_replication_engine_entry", pre(clone_session_entry=P.CloneSessionEntry(session_id=3))))
    assert [code for code, _ in helpers.write_errors(e.value)] == [code_pb2.NOT_FOUND, code_pb2.INVALID_ARGUMENT]


def test_modifying_an_indirect_entry_moves_its_member_reference(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    c.write(u("INSERT", "action_profile_member", member(ids, 1, 1)), u("INSERT", "action_profile_member", member(ids, 2, 2)))
    entry = ids.entry(SEL, [("hdr.h.c", "exact", 3)])
    entry.action.action_profile_member_id = 1
    c.write(u("INSERT", "table_entry", entry))
    entry.action.action_profile_member_id = 2
    c.write(u("MODIFY", "table_entry", entry))
    with pytest.raises(grpc.RpcError) as e:
        c.write(u("DELETE", "action_profile_member", member(ids, 2, 2)),
                u("DELETE", "action_profile_member", member(ids, 1, 1)))
    assert [code for code, _ in helpers.write_errors(e.value)] == [code_pb2.FAILED_PRECONDITION, code_pb2.OK]


def test_a_bad_direct_meter_config_inserts_nothing(loaded, ids, helpers):
    sw, c, _ = loaded
    entry = ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.fwd", [3])
    entry.meter_config.CopyFrom(P.MeterConfig(cir=10, pir=5))
    with pytest.raises(grpc.RpcError) as e:
        c.write(helpers.update("INSERT", "table_entry", entry))
    assert helpers.write_errors(e.value)[0][0] == code_pb2.INVALID_ARGUMENT
    assert c.read(P.Entity(table_entry=P.TableEntry())) == []
