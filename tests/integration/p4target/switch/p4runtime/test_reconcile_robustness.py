"""RECONCILE_AND_COMMIT keeps forwarding state; bad requests never take the server down."""
import copy
import socket

import grpc
import pytest
from p4.v1 import p4data_pb2, p4runtime_pb2

from p4target.engine.sample_programs import l3_router
from p4target.switch.p4runtime import ListenError, start_p4runtime_server

P = p4runtime_pb2
Req = P.SetForwardingPipelineConfigRequest
EXACT, SEL, PROF = "MyIngress.t_exact", "MyIngress.t_sel", "MyIngress.sel"


def pkt(a=1, b=2, c=3, d=4):
    return bytes([a, b]) + c.to_bytes(2, "big") + d.to_bytes(4, "big")


def _program_state(c, ids, u):
    c.write(u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.fwd", [3],
                                                 controller_metadata=5)),
            u("INSERT", "table_entry", ids.entry("MyIngress.t_tern", [("hdr.h.b", "ternary", 2, 0xFF)],
                                                 "MyIngress.setb", [9], priority=4)),
            u("INSERT", "action_profile_member", P.ActionProfileMember(
                action_profile_id=ids.of("action_profiles", PROF), member_id=1, action=ids.act("MyIngress.fwd", 6))),
            u("MODIFY", "table_entry", ids.entry(EXACT, action="MyIngress.fwd", params=[7], is_default_action=True)))
    sel = ids.entry(SEL, [("hdr.h.c", "exact", 3)])
    sel.action.action_profile_member_id = 1
    grp = P.MulticastGroupEntry(multicast_group_id=2)
    grp.replicas.add(egress_port=4, instance=0)
    reg = P.RegisterEntry(register_id=ids.of("registers", "MyIngress.reg"), data=p4data_pb2.P4Data(bitstring=b"\x2a"))
    reg.index.index = 0
    c.write(u("INSERT", "table_entry", sel),
            u("INSERT", "packet_replication_engine_entry", P.PacketReplicationEngineEntry(multicast_group_entry=grp)),
            u("MODIFY", "register_entry", reg))


def _snapshot(c):
    kinds = [P.Entity(table_entry=P.TableEntry()), P.Entity(action_profile_member=P.ActionProfileMember()),
             P.Entity(register_entry=P.RegisterEntry()),
             P.Entity(packet_replication_engine_entry=P.PacketReplicationEngineEntry(
                 multicast_group_entry=P.MulticastGroupEntry()))]
    return [sorted(e.SerializeToString(deterministic=True) for e in c.read(k)) for k in kinds]


def test_reconcile_carries_state_into_a_changed_program(loaded, ids, helpers, program):
    sw, c, p4info = loaded
    _program_state(c, ids, helpers.update)
    before = _snapshot(c)
    engine = sw.target.engine
    c.set_pipeline(program[0], p4info, action=Req.RECONCILE_AND_COMMIT)  # identical: nothing changes
    assert sw.target.engine is engine
    changed = copy.deepcopy(program[0])
    changed["program"] = "v2.p4"
    changed["pipelines"][0]["tables"][1]["max_size"] = 2048
    c.set_pipeline(changed, p4info, action=Req.RECONCILE_AND_COMMIT)
    assert sw.target.engine is not engine and sw.target.bmv2_json == changed
    assert _snapshot(c) == before
    default = c.read(P.Entity(table_entry=P.TableEntry(table_id=ids.table(EXACT), is_default_action=True)))
    assert default[0].table_entry.action.action.params[0].value == b"\x07"
    sw.target.receive(0, pkt())
    assert sw.sink.get() == (3, pkt(b=9))
    sw.target.receive(0, pkt(a=0xEE))
    assert sw.sink.get()[0] == 6
    # a plain commit starts from scratch
    c.set_pipeline(changed, p4info)
    assert c.read(P.Entity(table_entry=P.TableEntry())) == []


def test_reconcile_that_does_not_fit_fails_and_keeps_the_pipeline(loaded, ids, helpers):
    sw, c, _ = loaded
    _program_state(c, ids, helpers.update)
    engine = sw.target.engine
    router = l3_router()
    with pytest.raises(grpc.RpcError) as e:
        c.set_pipeline(router, helpers.p4info_for(router), action=Req.RECONCILE_AND_COMMIT)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert sw.target.engine is engine and len(c.read(P.Entity(table_entry=P.TableEntry()))) == 3


def test_garbage_requests_never_crash_the_server(loaded, ids, helpers):
    sw, c, _ = loaded
    u = helpers.update
    bad = [P.Update(), P.Update(type=P.Update.INSERT),
           u("INSERT", "value_set_entry", P.ValueSetEntry(value_set_id=1)),
           u("MODIFY", "extern_entry", P.ExternEntry(extern_type_id=1)),
           u("INSERT", "packet_replication_engine_entry", P.PacketReplicationEngineEntry()),
           u("INSERT", "action_profile_group", P.ActionProfileGroup(action_profile_id=77)),
           u("INSERT", "digest_entry", P.DigestEntry(digest_id=5)),
           u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.fwd", [b"\x00" * 40]))]
    with pytest.raises(grpc.RpcError) as e:
        c.write(*bad)
    assert len(helpers.write_errors(e.value)) == len(bad)
    for entity in (P.Entity(), P.Entity(value_set_entry=P.ValueSetEntry(value_set_id=12345)),
                   P.Entity(table_entry=P.TableEntry(table_id=12345)),
                   P.Entity(direct_counter_entry=P.DirectCounterEntry(table_entry=P.TableEntry(
                       table_id=ids.table("MyIngress.t_tern"))))):
        with pytest.raises(grpc.RpcError) as e:
            c.read(entity)
        assert e.value.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
                                  grpc.StatusCode.UNIMPLEMENTED)
    with pytest.raises(grpc.RpcError) as e:
        c.write(atomicity=7)
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
    junk = P.StreamMessageRequest()
    junk.other.type_url = "x/y"
    c.send(junk)
    assert c.get("error").error.canonical_code == grpc.StatusCode.UNIMPLEMENTED.value[0]
    # still serving
    c.write(u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.fwd", [3])))
    assert len(c.read(P.Entity(table_entry=P.TableEntry()))) == 1


def test_listen_errors_and_stop_ends_streams(switch):
    with pytest.raises(ListenError):
        start_p4runtime_server(switch.target, f"127.0.0.1:{switch.server.port}")
    with pytest.raises(ListenError):
        start_p4runtime_server(switch.target, "not an address")
    c = switch.client()
    switch.server.stop()
    end = c.get("end")  # the stream ends (cleanly or cancelled) instead of hanging
    assert end is None or end.code() in (grpc.StatusCode.CANCELLED, grpc.StatusCode.UNAVAILABLE)
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", switch.server.port)) != 0


@pytest.mark.parametrize("atomicity", [P.WriteRequest.ROLLBACK_ON_ERROR, P.WriteRequest.DATAPLANE_ATOMIC])
def test_atomic_batches_apply_all_or_nothing(loaded, ids, helpers, atomicity):
    sw, c, _ = loaded
    u = helpers.update
    _program_state(c, ids, u)
    before = _snapshot(c)
    digest = P.DigestEntry(digest_id=ids.of("digests", "learn_t"))
    batch = [u("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 2)], "MyIngress.fwd", [1])),
             u("MODIFY", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", 1)], "MyIngress.fwd", [8])),
             u("DELETE", "action_profile_member", P.ActionProfileMember(
                 action_profile_id=ids.of("action_profiles", PROF), member_id=1)),  # in use: fails
             u("INSERT", "digest_entry", digest)]
    with pytest.raises(grpc.RpcError) as e:
        c.write(*batch, atomicity=atomicity)
    codes = [code for code, _ in helpers.write_errors(e.value)]
    assert codes == [grpc.StatusCode.ABORTED.value[0]] * 2 + [grpc.StatusCode.FAILED_PRECONDITION.value[0],
                                                              grpc.StatusCode.ABORTED.value[0]]
    assert _snapshot(c) == before and c.read(P.Entity(digest_entry=P.DigestEntry())) == []
    sw.target.receive(0, pkt())
    assert sw.sink.get()[0] == 3
    c.write(*(batch[:2] + batch[3:]), atomicity=atomicity)
    sw.target.receive(0, pkt())
    assert sw.sink.get()[0] == 8
    assert len(c.read(P.Entity(digest_entry=P.DigestEntry()))) == 1
    assert len(c.read(P.Entity(table_entry=P.TableEntry(table_id=ids.table(EXACT))))) == 2


def test_concurrent_writes_reads_and_traffic_do_not_deadlock(loaded, ids, helpers):
    import threading
    sw, c, _ = loaded
    reader = sw.client((0, 0))
    stop = threading.Event()
    errors = []

    def traffic():
        while not stop.is_set():
            sw.target.receive(0, pkt(a=7))
            stop.wait(0.001)

    def reads():
        try:
            while not stop.is_set():
                reader.read(P.Entity(table_entry=P.TableEntry()))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=traffic), threading.Thread(target=reads)]
    for t in threads:
        t.start()
    try:
        for base in range(0, 200, 20):
            c.write(*[helpers.update("INSERT", "table_entry", ids.entry(EXACT, [("hdr.h.a", "exact", a)],
                                                                        "MyIngress.fwd", [a % 5 + 1]))
                      for a in range(base + 10, base + 30)])  # a = 10..209; the traffic uses a = 7
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
    assert not errors and not any(t.is_alive() for t in threads)
    assert len(c.read(P.Entity(table_entry=P.TableEntry()))) == 200
    assert sw.sink.drain(first=3)  # the traffic kept flowing
