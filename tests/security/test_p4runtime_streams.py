"""The P4Runtime server of a real `p4target switch` process against clients that hold streams
open or send huge batches: idle StreamChannels never starve Capabilities/Read/Write or a
controller's reconnect, and a large batch's per-update errors arrive whole."""
from __future__ import annotations

import queue
import threading
import time

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controller import errors as controller_errors
from controller.client import SwitchConnection
from p4target.compiler import compile_text
from support.switch_process import SwitchProcess

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { ethernet_t ethernet; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table l2 {
        key = { hdr.ethernet.dst : exact; }
        actions = { fwd; drop; }
        default_action = drop();
        size = 4096;
    }
    apply { l2.apply(); }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

IDLE_STREAMS = 40
ANSWER_DEADLINE_S = 1.0


@pytest.fixture(scope="module")
def compiled():
    return compile_text(PROGRAM, "l2.p4")


@pytest.fixture
def switch(tmp_path, compiled):
    """A `p4target switch --no-p4` process (gRPC and Thrift on loopback) with the program
    pushed over P4Runtime; yields (process, gRPC address)."""
    sw = SwitchProcess(["--no-p4", "--thrift-port", "0", "--thrift-ip", "127.0.0.1"])
    try:
        sw.wait_ready()
        with SwitchConnection("s1", sw.grpc_addr, 0, election_id=(0, 1), timeout=30) as conn:
            assert conn.connect(), "no primary arbitration on a fresh switch"
            conn.set_pipeline(compiled.p4info, compiled.bmv2_json)   # as the primary, as P4Runtime asks
        yield sw, sw.grpc_addr
    finally:
        sw.stop()


class IdleStream:
    """A StreamChannel on its own channel that never sends a message; `ended` holds the
    status it ends with (None while open)."""

    def __init__(self, addr: str) -> None:
        self.channel = grpc.insecure_channel(addr)
        self._requests: queue.Queue = queue.Queue()
        self.call = p4runtime_pb2_grpc.P4RuntimeStub(self.channel).StreamChannel(iter(self._requests.get, None))
        self.ended: grpc.StatusCode | None = None
        self.done = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for _ in self.call:
                pass
            self.ended = grpc.StatusCode.OK
        except grpc.RpcError as exc:
            self.ended = exc.code()
        self.done.set()

    def close(self) -> None:
        self._requests.put(None)
        self.call.cancel()
        self._reader.join(timeout=5)
        self.channel.close()


def _entry(ids, mac: int, port: int) -> p4runtime_pb2.TableEntry:
    table_id, field_id, fwd_id = ids
    te = p4runtime_pb2.TableEntry(table_id=table_id)
    te.match.add(field_id=field_id).exact.value = mac.to_bytes(6, "big")
    te.action.action.action_id = fwd_id
    te.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return te


def _ids(p4info):
    table = p4info.tables[0]
    fwd = next(a for a in p4info.actions if a.preamble.name.endswith("fwd"))
    return table.preamble.id, table.match_fields[0].id, fwd.preamble.id


def _update(kind: str, te: p4runtime_pb2.TableEntry) -> p4runtime_pb2.Update:
    return p4runtime_pb2.Update(type=getattr(p4runtime_pb2.Update, kind), entity=p4runtime_pb2.Entity(table_entry=te))


def test_idle_streams_leave_unary_calls_and_a_controller_answering(switch, compiled):
    _, addr = switch
    ids = _ids(compiled.p4info)
    idle = [IdleStream(addr) for _ in range(IDLE_STREAMS)]
    channel = grpc.insecure_channel(addr)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    controller = SwitchConnection("s1", addr, 0, election_id=(0, 7), timeout=ANSWER_DEADLINE_S)
    try:
        # the streams beyond the server's bound (16) are refused or displace older idle ones
        deadline = time.monotonic() + 10
        while sum(s.done.is_set() for s in idle) < IDLE_STREAMS - 16 and time.monotonic() < deadline:
            time.sleep(0.05)
        settled = time.monotonic()
        refused = [s.ended for s in idle if s.done.is_set()]
        assert refused and set(refused) == {grpc.StatusCode.RESOURCE_EXHAUSTED}
        assert any(not s.done.is_set() for s in idle)  # a bound, not a refusal of every stream

        stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=ANSWER_DEADLINE_S)
        read = p4runtime_pb2.ReadRequest(device_id=0)
        read.entities.add().table_entry.table_id = ids[0]
        assert [e for r in stub.Read(read, timeout=ANSWER_DEADLINE_S) for e in r.entities] == []
        write = p4runtime_pb2.WriteRequest(device_id=0)
        write.updates.append(_update("INSERT", _entry(ids, 0x0A, 1)))
        stub.Write(write, timeout=ANSWER_DEADLINE_S)

        # idle streams past the arbitration grace period make room for a controller
        time.sleep(max(0.0, settled + 1.2 - time.monotonic()))
        assert controller.connect() is True  # primary, within its 1 s timeout
        controller.write([_update("INSERT", _entry(ids, 0x0B, 2))])
        found = {bytes(e.table_entry.match[0].exact.value) for e in controller.read(
            [p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=ids[0]))])}
        assert found == {b"\x0a", b"\x0b"}  # canonical byte strings
        evicted = [s.ended for s in idle if s.done.is_set()]
        assert len(evicted) > len(refused)  # the controller's stream displaced an idle one
    finally:
        controller.close()
        for s in idle:
            s.close()
        channel.close()
    assert all(s.done.is_set() for s in idle)


def test_per_update_errors_of_a_large_batch_reach_the_controller(switch, compiled):
    _, addr = switch
    ids = _ids(compiled.p4info)
    n = 2000
    with SwitchConnection("s1", addr, 0, election_id=(0, 9), timeout=30) as conn:
        conn.connect()
        conn.write([_update("INSERT", _entry(ids, mac, 1)) for mac in range(0, n, 2)])
        # every odd MAC is new, every even one a duplicate: 1000 of 2000 fail, each with its message
        with pytest.raises(controller_errors.WriteError) as err:
            conn.write([_update("INSERT", _entry(ids, mac, 3)) for mac in range(n)])
    updates = err.value.updates
    assert len(updates) == n
    assert [u.index for u in updates if not u.ok] == list(range(0, n, 2))
    assert {u.code for u in updates if not u.ok} == {"ALREADY_EXISTS"}
    assert all(u.message for u in updates if not u.ok)
