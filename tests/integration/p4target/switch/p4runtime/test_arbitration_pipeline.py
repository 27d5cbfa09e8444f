"""Client arbitration and forwarding pipeline configs over a real gRPC connection."""
import json
import time

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4target.engine.sample_programs import l3_router

Req = p4runtime_pb2.SetForwardingPipelineConfigRequest
Get = p4runtime_pb2.GetForwardingPipelineConfigRequest


def eid(arb):
    return (arb.election_id.high, arb.election_id.low)


def test_capabilities(switch):
    c = switch.client(election_id=None)
    assert c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version.startswith("1.")


def test_highest_election_id_is_primary_and_everyone_is_told(switch):
    a = switch.client(election_id=None)
    arb = a.arbitrate((0, 5))
    assert arb.status.code == code_pb2.OK and eid(arb) == (0, 5)
    b = switch.client(election_id=None)
    arb = b.arbitrate((0, 3))
    assert arb.status.code == code_pb2.ALREADY_EXISTS and eid(arb) == (0, 5)
    assert a.none("arbitration")  # primary unchanged: only the newcomer is answered
    c = switch.client(election_id=None)
    arb = c.arbitrate((1, 0))
    assert arb.status.code == code_pb2.OK and eid(arb) == (1, 0)
    for old in (a, b):
        arb = old.get("arbitration").arbitration
        assert arb.status.code == code_pb2.ALREADY_EXISTS and eid(arb) == (1, 0)
    c.close()
    for old, code in ((a, code_pb2.OK), (b, code_pb2.ALREADY_EXISTS)):
        arb = old.get("arbitration").arbitration
        assert arb.status.code == code and eid(arb) == (0, 5)


def test_no_primary_is_not_found_and_duplicate_election_id_closes_stream(switch):
    a = switch.client(election_id=None)
    req = p4runtime_pb2.StreamMessageRequest()
    req.arbitration.device_id = 0  # no election id: a backup that never becomes primary
    a.send(req)
    assert a.get("arbitration").arbitration.status.code == code_pb2.NOT_FOUND
    b = switch.client((0, 7))
    d = switch.client(election_id=None)
    d.send(_arb((0, 7)))
    end = d.get("end")
    assert end.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert b.none("arbitration")


def _arb(election, device=0):
    req = p4runtime_pb2.StreamMessageRequest()
    req.arbitration.device_id = device
    req.arbitration.election_id.high, req.arbitration.election_id.low = election
    return req


def test_wrong_device_id_closes_stream(switch):
    c = switch.client(election_id=None)
    c.send(_arb((0, 1), device=9))
    assert c.get("end").code() == grpc.StatusCode.NOT_FOUND


def test_roles_are_arbitrated_separately(switch, program):
    a = switch.client(election_id=None)
    assert a.arbitrate((0, 5)).status.code == code_pb2.OK
    b = switch.client(election_id=None)
    arb = b.arbitrate((0, 1), role="other")
    assert arb.status.code == code_pb2.OK and arb.role.name == "other"  # primary of its own role
    assert a.none("arbitration")
    b.set_pipeline(*program)
    a.set_pipeline(*program)


def test_backup_cannot_write_or_push_pipeline(switch, program):
    primary = switch.client((0, 10))
    backup = switch.client((0, 2))
    with pytest.raises(grpc.RpcError) as e:
        backup.set_pipeline(*program)
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    primary.set_pipeline(*program)
    with pytest.raises(grpc.RpcError) as e:
        backup.write(p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT))
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    # a stale election id (not the primary's) is rejected even from the primary's channel
    primary.election_id = (0, 9)
    with pytest.raises(grpc.RpcError) as e:
        primary.write()
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    # reads need no arbitration
    assert backup.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())) == []


def test_no_pipeline_is_failed_precondition(switch):
    c = switch.client()
    for call in (lambda: c.write(), lambda: c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())),
                 lambda: c.stub.GetForwardingPipelineConfig(Get(device_id=0))):
        with pytest.raises(grpc.RpcError) as e:
            call()
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_push_and_get_pipeline_by_response_type(switch, program):
    bmv2, p4info = program
    c = switch.client()
    c.set_pipeline(bmv2, p4info, cookie=42)
    assert switch.target.engine is not None and switch.target.p4info == p4info
    full = c.stub.GetForwardingPipelineConfig(Get(device_id=0, response_type=Get.ALL)).config
    assert full.p4info == p4info and json.loads(full.p4_device_config) == bmv2 and full.cookie.cookie == 42
    only = c.stub.GetForwardingPipelineConfig(Get(device_id=0, response_type=Get.COOKIE_ONLY)).config
    assert only.cookie.cookie == 42 and not only.HasField("p4info") and not only.p4_device_config
    pi = c.stub.GetForwardingPipelineConfig(Get(device_id=0, response_type=Get.P4INFO_AND_COOKIE)).config
    assert pi.p4info == p4info and not pi.p4_device_config
    dc = c.stub.GetForwardingPipelineConfig(Get(device_id=0, response_type=Get.DEVICE_CONFIG_AND_COOKIE)).config
    assert dc.p4_device_config == full.p4_device_config and not dc.HasField("p4info")
    with pytest.raises(grpc.RpcError) as e:
        c.stub.GetForwardingPipelineConfig(Get(device_id=3))
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


def test_verify_save_commit(switch, program, p4info_builder):
    bmv2, p4info = program
    c = switch.client()
    c.set_pipeline(bmv2, p4info, action=Req.VERIFY)
    assert switch.target.engine is None
    with pytest.raises(grpc.RpcError) as e:
        c.set_pipeline(None, None, action=Req.COMMIT)
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    c.set_pipeline(bmv2, p4info, action=Req.VERIFY_AND_SAVE, cookie=7)
    assert switch.target.engine is None
    with pytest.raises(grpc.RpcError) as e:
        c.set_pipeline(bmv2, p4info, action=Req.COMMIT)  # COMMIT takes no config
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    c.set_pipeline(None, None, action=Req.COMMIT)
    assert switch.target.p4info == p4info
    got = c.stub.GetForwardingPipelineConfig(Get(device_id=0)).config
    assert got.cookie.cookie == 7
    router = l3_router()
    c.set_pipeline(router, p4info_builder(router), action=Req.VERIFY_AND_COMMIT)
    assert switch.target.bmv2_json == router


@pytest.mark.parametrize("mutate, code", [
    (lambda req: req.config.ClearField("p4info"), grpc.StatusCode.INVALID_ARGUMENT),
    (lambda req: setattr(req.config, "p4_device_config", b"{not json"), grpc.StatusCode.INVALID_ARGUMENT),
    (lambda req: setattr(req.config, "p4_device_config", b"[1, 2]"), grpc.StatusCode.INVALID_ARGUMENT),
    (lambda req: setattr(req.config, "p4_device_config", b'{"actions": 5}'), grpc.StatusCode.INVALID_ARGUMENT),
    (lambda req: setattr(req.config.p4info.tables[0].preamble, "name", "nope"), grpc.StatusCode.INVALID_ARGUMENT),
    (lambda req: req.config.p4info.tables[0].match_fields.add(id=9, name="x", bitwidth=8, match_type=2),
     grpc.StatusCode.INVALID_ARGUMENT),
    (lambda req: setattr(req, "action", Req.UNSPECIFIED), grpc.StatusCode.INVALID_ARGUMENT),
])
def test_bad_configs_are_rejected_and_keep_the_running_pipeline(switch, program, mutate, code):
    bmv2, p4info = program
    c = switch.client()
    c.set_pipeline(bmv2, p4info)
    engine = switch.target.engine
    req = Req(device_id=0, action=Req.VERIFY_AND_COMMIT)
    req.election_id.low = 1
    req.config.p4_device_config = json.dumps(bmv2).encode()
    req.config.p4info.CopyFrom(p4info)
    mutate(req)
    with pytest.raises(grpc.RpcError) as e:
        c.stub.SetForwardingPipelineConfig(req)
    assert e.value.code() == code
    assert switch.target.engine is engine


def test_a_client_may_change_its_election_id(switch):
    a = switch.client((0, 5))
    b = switch.client((0, 3))
    assert a.arbitrate((0, 2)).status.code == code_pb2.ALREADY_EXISTS  # a steps down below b
    arb = b.get("arbitration").arbitration
    assert arb.status.code == code_pb2.OK and eid(arb) == (0, 3)
    assert a.arbitrate((0, 9)).status.code == code_pb2.OK
    assert b.get("arbitration").arbitration.status.code == code_pb2.ALREADY_EXISTS


def test_packet_out_before_arbitration_is_refused(switch, program):
    c = switch.client()
    c.set_pipeline(*program)
    other = switch.client(election_id=None)
    req = p4runtime_pb2.StreamMessageRequest()
    req.packet.payload = b"\x00" * 8
    other.send(req)
    assert other.get("error").error.canonical_code == code_pb2.PERMISSION_DENIED


def test_pipeline_loaded_by_another_front_door_is_served(switch, program):
    bmv2, p4info = program
    switch.target.set_pipeline(bmv2, p4info)  # e.g. the switch started with --json and a P4Info
    c = switch.client()
    assert c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())) == []
    switch.target.set_pipeline(bmv2)  # a JSON without P4Info (Thrift load): nothing to translate with
    with pytest.raises(grpc.RpcError) as e:
        c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    c.set_pipeline(bmv2, p4info, action=Req.RECONCILE_AND_COMMIT)  # recovers
    assert c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())) == []


def test_clients_that_vanish_leave_no_stale_primary(switch):
    clients = [switch.client((0, 100 + i)) for i in range(12)]
    for c in clients:
        c.close()
    switch.clients.clear()
    deadline = time.monotonic() + 5
    while switch.server.service.open_streams and time.monotonic() < deadline:
        time.sleep(0.02)  # the server notices cancelled streams asynchronously
    assert switch.server.service.open_streams == 0
    late = switch.client(election_id=None)
    arb = late.arbitrate((0, 1))
    assert arb.status.code == code_pb2.OK and eid(arb) == (0, 1)
    assert switch.server.service.arbitration.primaries() != []
    assert switch.server.service.open_streams == 1


def test_without_any_primary_only_requests_without_election_id_may_write(switch, program):
    bmv2, p4info = program
    switch.client((0, 9), role="admin").set_pipeline(bmv2, p4info)  # pipelines need a primary
    tool = switch.client(election_id=None)  # never arbitrates
    tool.election_id = (0, 0)  # (0, 0) reads as "no election id"
    tool.write()
    tool.election_id = (0, 3)
    with pytest.raises(grpc.RpcError) as e:
        tool.write()
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    switch.client((0, 1))  # once a primary exists, anonymous writes are refused
    tool.election_id = (0, 0)
    with pytest.raises(grpc.RpcError) as e:
        tool.write()
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_a_client_may_move_to_another_role(switch):
    a = switch.client(election_id=None)
    assert a.arbitrate((0, 5), role="r1").status.code == code_pb2.OK
    b = switch.client(election_id=None)
    assert b.arbitrate((0, 3), role="r1").status.code == code_pb2.ALREADY_EXISTS
    arb = a.arbitrate((0, 5), role="r2")  # a leaves r1: b becomes r1's primary and is told
    assert arb.status.code == code_pb2.OK and arb.role.name == "r2"
    arb = b.get("arbitration").arbitration
    assert arb.status.code == code_pb2.OK and eid(arb) == (0, 3)
