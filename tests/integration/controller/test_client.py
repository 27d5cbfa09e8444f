"""SwitchConnection against a real in-process P4Runtime gRPC server: arbitration, writes, errors."""
from __future__ import annotations

import socket
import time

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from controller import errors
from controller import p4names as N
from controller.client import SwitchConnection
from controller.entries import Action, Exact, Lpm, Range, TableEntry, Ternary
from controller.policy import assign_slots, load_policy, translate


def connect(server, eid=(0, 10), timeout=2.0):
    conn = SwitchConnection("s1", server.address, 1, eid, timeout)
    conn.connect()
    return conn


def test_primary_and_backup(p4rt_server, p4info_msg):
    low = SwitchConnection("s1", p4rt_server.address, 1, (0, 5), 2.0)
    high = SwitchConnection("s1", p4rt_server.address, 1, (0, 9), 2.0)
    try:
        assert low.connect() is True
        assert high.connect() is True
        deadline = time.monotonic() + 2
        while low.is_primary and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not low.is_primary and low.primary_election_id == (0, 9)
        with pytest.raises(errors.NotPrimaryError, match="not the primary controller"):
            low.set_pipeline(p4info_msg, b"{}")
        high.close()
        deadline = time.monotonic() + 2
        while not low.is_primary and time.monotonic() < deadline:
            time.sleep(0.02)
        assert low.is_primary
    finally:
        low.close()
        high.close()


def test_pipeline_push_and_get(p4rt_server, p4info_msg):
    with connect(p4rt_server) as conn:
        assert conn.get_pipeline() is None
        conn.set_pipeline(p4info_msg, {"program": "x"}, cookie=42)
        info, cookie = conn.get_pipeline()
        assert cookie == 42 and info == p4info_msg
        assert p4rt_server.device_config == b'{"program": "x"}'


def test_unreachable_switch_times_out():
    with socket.socket() as s:          # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conn = SwitchConnection("s9", f"127.0.0.1:{port}", 1, (0, 1), timeout=0.5)
    start = time.monotonic()
    with pytest.raises(errors.UnreachableError, match=r"^s9: no P4Runtime server at 127.0.0.1:\d+ \(timed out after 0.5s; "
                                                         r"tried in plaintext: a switch started with TLS refuses it\)$"):
        conn.connect()
    assert time.monotonic() - start < 5


def test_write_errors_are_decoded_per_update(p4rt_server, p4info_msg, codec):
    entries = translate(load_policy("controller/policies/default.yaml"),
                        assign_slots(load_policy("controller/policies/default.yaml")))
    with connect(p4rt_server) as conn:
        conn.set_pipeline(p4info_msg, b"{}")
        p4rt_server.fail_hook = lambda u: ((code_pb2.RESOURCE_EXHAUSTED, "table full")
                                           if u.entity.table_entry.match[1].range.low == b"\x04"
                                           else None)
        with pytest.raises(errors.WriteError) as info:
            conn.write([codec.update("INSERT", e) for e in entries])
        err = info.value
        assert [u.code for u in err.updates] == ["OK", "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED"]
        assert str(err) == "s1: Write failed: 2 of 3 updates rejected; update 1: RESOURCE_EXHAUSTED: table full"
        assert [u.index for u in err.failed()] == [1, 2]


def test_codec_round_trip_and_canonical_bytes(codec):
    entry = TableEntry(N.CLASS_TABLE, ((N.CLASS_KEY_JOB, Ternary(1, 0xFFFF)),
                                       (N.CLASS_KEY_LAYER, Range(0, 65535)),   # don't care: omitted
                                       (N.CLASS_KEY_MAG, Range(0, 3))),
                       Action.of(N.SET_CLASS, prio=6, drop_eligible=1, slot=0, push_bound_bp=110,
                                 pull_bound_bp=0, drop_threshold=16), priority=1)
    msg = codec.encode(entry)
    assert [m.field_id for m in msg.table_entry.match] == [1, 3]
    assert msg.table_entry.match[0].ternary.value == b"\x01"
    params = {p.param_id: p.value for p in msg.table_entry.action.action.params}
    assert params[5] == b"\x00" and params[4] == b"\x6e"
    assert codec.decode(msg) == codec.normalize(entry)
    route = TableEntry(N.ROUTE_TABLE, ((N.ROUTE_KEY_DST, Lpm(0x0A000101, 32)),), group_id=3)
    assert codec.decode(codec.encode(route)) == route
    arp = TableEntry(N.ARP_TABLE, ((N.ARP_KEY_OPER, Exact(1)), (N.ARP_KEY_TPA, Exact(0x0A000101))),
                     Action.of(N.ARP_REPLY, mac=1 << 48))
    with pytest.raises(errors.ConfigError, match="does not fit in 48 bits"):
        codec.encode(arp)
    with pytest.raises(errors.P4NameError, match="P4Info has no table 'Nope.t'"):
        codec.encode(TableEntry("Nope.t"))


def test_packet_out_reaches_the_server(p4rt_server):
    with connect(p4rt_server) as conn:
        conn.packet_out(b"\x01\x02", [(1, b"\x05")])
        deadline = time.monotonic() + 2
        while not p4rt_server.packets_out and time.monotonic() < deadline:
            time.sleep(0.02)
    assert p4rt_server.packets_out[0].payload == b"\x01\x02"
    assert isinstance(p4rt_server.packets_out[0], p4runtime_pb2.PacketOut)


def test_replication_entities_round_trip(p4rt_server, p4info_msg, codec):
    from controller.entries import CloneSession, MulticastGroup
    mcast = MulticastGroup(5, ((1, 0), (2, 0), (3, 1)))
    clone = CloneSession(100, ((255, 0),), packet_length_bytes=128)
    with connect(p4rt_server) as conn:
        conn.set_pipeline(p4info_msg, b"{}")
        conn.write([codec.update("INSERT", mcast), codec.update("INSERT", clone)])
        stored = [codec.decode(e) for e in p4rt_server.entities("packet_replication_engine_entry")]
    assert stored == [mcast, clone]
