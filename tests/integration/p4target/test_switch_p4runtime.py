"""The switch process started with --no-p4 gets its program over P4Runtime (compiled by our
compiler), entries written over P4Runtime forward real frames between two namespaces and are
visible through the Thrift front door of the same process."""
import json
import queue
import struct
import threading
import time

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target import compiler

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct headers { ethernet_t ethernet; ipv4_t ipv4; }
struct metadata { }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet);
                  transition select(hdr.ethernet.etherType) { 0x0800: ipv4; default: accept; } }
    state ipv4 { pkt.extract(hdr.ipv4); transition accept; }
}
control V(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action forward(bit<48> dmac, bit<9> port) {
        sm.egress_spec = port;
        hdr.ethernet.dstAddr = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table routes {
        key = { hdr.ipv4.dstAddr : lpm; }
        actions = { forward; drop; }
        default_action = drop();
    }
    apply { if (hdr.ipv4.isValid()) { routes.apply(); } else { drop(); } }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""
MARK = 40406
DEVICE_ID = 3


def named(items, name):
    return next(i for i in items if i.preamble.name == name or i.preamble.name.endswith("." + name))


class Controller:
    """Just enough P4Runtime: arbitration, pipeline push, table writes."""

    def __init__(self, addr: str) -> None:
        self.channel = grpc.insecure_channel(addr)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.election = p4runtime_pb2.Uint128(high=0, low=1)
        self.requests: queue.Queue = queue.Queue()
        self.responses: queue.Queue = queue.Queue()
        self.stream = self.stub.StreamChannel(iter(self.requests.get, None))
        threading.Thread(target=self._read, daemon=True).start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = DEVICE_ID
        req.arbitration.election_id.CopyFrom(self.election)
        self.requests.put(req)
        reply = self.responses.get(timeout=10)
        assert reply.arbitration.status.code == 0, reply

    def _read(self) -> None:
        try:
            for msg in self.stream:
                self.responses.put(msg)
        except grpc.RpcError:
            pass

    def push(self, program) -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=DEVICE_ID, election_id=self.election,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.config.p4info.CopyFrom(program.p4info)
        req.config.p4_device_config = json.dumps(program.bmv2_json).encode()
        self.stub.SetForwardingPipelineConfig(req, timeout=30)

    def add_route(self, p4info, prefix: bytes, plen: int, mac: bytes, port: int) -> None:
        table, action = named(p4info.tables, "routes"), named(p4info.actions, "forward")
        req = p4runtime_pb2.WriteRequest(device_id=DEVICE_ID, election_id=self.election)
        update = req.updates.add()
        update.type = p4runtime_pb2.Update.INSERT
        entry = update.entity.table_entry
        entry.table_id = table.preamble.id
        match = entry.match.add()
        match.field_id = table.match_fields[0].id
        match.lpm.value = prefix
        match.lpm.prefix_len = plen
        entry.action.action.action_id = action.preamble.id
        for param, value in zip(action.params, (mac, bytes([port]))):
            p = entry.action.action.params.add()
            p.param_id = param.id
            p.value = value
        self.stub.Write(req, timeout=10)

    def close(self) -> None:
        self.requests.put(None)
        self.channel.close()


def frame(seq: int) -> bytes:
    return bytes(Ether(src="00:00:00:00:01:aa", dst="00:00:00:00:00:fe") /
                 IP(src="10.0.1.1", dst="10.0.2.2", ttl=20) / UDP(sport=MARK, dport=MARK) / struct.pack("!I", seq))


def test_pipeline_and_entries_over_p4runtime(two_hosts, start_switch, open_ns_socket, tmp_path):
    src = tmp_path / "router.p4"
    src.write_text(PROGRAM)
    program = compiler.compile_file(str(src))
    h1, h2 = two_hosts
    sw = start_switch(["-i", f"1@{h1.switch_iface}", "-i", f"2@{h2.switch_iface}", "--thrift-port", "0",
                       "--no-p4", "--device-id", str(DEVICE_ID)])
    sw.wait_for("P4Runtime gRPC server listening")
    ctl = Controller(sw.grpc_addr)
    try:
        ctl.push(program)
        ctl.add_route(program.p4info, bytes([10, 0, 2, 0]), 24, bytes.fromhex("000000000202"), 2)
    finally:
        ctl.close()
    s1, s2 = open_ns_socket(h1.ns, h1.iface), open_ns_socket(h2.ns, h2.iface)
    for i in range(10):
        s1.send(frame(i))
    got = []
    s2.settimeout(1.0)
    deadline = time.monotonic() + 10
    while len(got) < 10 and time.monotonic() < deadline:
        try:
            data = s2.recv(65536)
        except OSError:
            break
        pkt = Ether(data)
        if UDP in pkt and pkt[UDP].dport == MARK:
            got.append(pkt)
    assert len(got) == 10
    assert got[0].dst == "00:00:00:00:02:02" and got[0][IP].ttl == 19
    dump = sw.cli("table_dump I.routes\n")
    assert "0a000200/24" in dump and "forward - 000000000202, 0002" in dump
    assert sw.stop() == 0
