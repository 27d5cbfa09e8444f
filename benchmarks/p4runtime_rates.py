"""P4Runtime rates over a real gRPC connection to the embedded switch: table-entry inserts
(per batch size), a wildcard read, packet-out and packet-in.

Run: .venv/bin/python benchmarks/p4runtime_rates.py [--entries N] [--lpm-entries N] [--packets N]
"""
from __future__ import annotations

import argparse
import json
import queue
import threading
import time

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.compiler.p4info import build_p4info
from p4target.engine.sample_programs import l3_router
from p4target.switch.p4runtime import start_p4runtime_server
from p4target.switch.target import SwitchTarget

CPU_PORT = 64
FWD = "MyIngress.ipv4_forward"


def _entry(table_id: int, action_id: int, kind: str, prefix: int, plen: int, port: int) -> p4runtime_pb2.Update:
    u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = u.entity.table_entry
    te.table_id = table_id
    fm = te.match.add(field_id=1)
    if kind == "lpm":
        fm.lpm.value, fm.lpm.prefix_len = prefix.to_bytes(4, "big"), plen
    else:
        fm.exact.value = prefix.to_bytes(4, "big")
    te.action.action.action_id = action_id
    te.action.action.params.add(param_id=1, value=(0x020000000000 + (prefix >> 8 & 0xFFFF)).to_bytes(6, "big"))
    te.action.action.params.add(param_id=2, value=port.to_bytes(2, "big"))
    return u


class Bench:
    """One switch target with its P4Runtime server and one primary client."""

    def __init__(self) -> None:
        self.sent = 0
        self.sent_all = threading.Event()
        self.expect = 0
        self.target = SwitchTarget(cpu_port=CPU_PORT, queue_depth=1 << 20, transmit=self._transmit)
        self.server = start_p4runtime_server(self.target, "127.0.0.1:0")
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.server.port}")
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.out: queue.Queue = queue.Queue()
        self.stream = self.stub.StreamChannel(iter(self.out.get, None))
        arb = p4runtime_pb2.StreamMessageRequest()
        arb.arbitration.election_id.low = 1
        self.out.put(arb)
        next(self.stream)
        self.packet_ins = 0
        self.got_all_in = threading.Event()
        self.expect_in = 0
        self.reader = threading.Thread(target=self._read_stream, daemon=True)
        self.reader.start()

    def _transmit(self, port: int, data: bytes) -> None:
        self.sent += 1
        if self.sent >= self.expect:
            self.sent_all.set()

    def _read_stream(self) -> None:
        try:
            for msg in self.stream:
                if msg.HasField("packet"):
                    self.packet_ins += 1
                    if self.packet_ins >= self.expect_in:
                        self.got_all_in.set()
        except grpc.RpcError:
            pass

    def push(self, prog: dict, p4info) -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=0, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = json.dumps(prog).encode()
        self.stub.SetForwardingPipelineConfig(req)

    def write(self, updates: list) -> None:
        w = p4runtime_pb2.WriteRequest(device_id=0, updates=updates)
        w.election_id.low = 1
        self.stub.Write(w)

    def close(self) -> None:
        self.out.put(None)
        self.stream.cancel()
        self.channel.close()
        self.reader.join(timeout=5)
        self.server.stop()
        self.target.stop()


def _program(kind: str):
    prog = l3_router()
    table = prog["pipelines"][0]["tables"][1]
    table["max_size"] = 1 << 16
    table["match_type"] = table["key"][0]["match_type"] = kind
    info = build_p4info(prog)
    action_id = next(a.preamble.id for a in info.actions if a.preamble.name == FWD)
    return prog, info, info.tables[0].preamble.id, action_id


def _row(name: str, count: int, seconds: float) -> None:
    print(f"{name:<34}{count:>9}{count / seconds:>12.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=2000, help="entries per exact-table row")
    ap.add_argument("--lpm-entries", type=int, default=500,
                    help="entries per LPM row (the engine re-sorts a table on every insert)")
    ap.add_argument("--packets", type=int, default=2000, help="packets per packet-out/in row")
    args = ap.parse_args()
    b = Bench()
    try:
        print(f"{'operation':<34}{'count':>9}{'per second':>12}")
        for kind, batch in (("exact", 1), ("exact", 100), ("exact", 1000), ("lpm", 100)):
            prog, p4info, table_id, action_id = _program(kind)
            b.push(prog, p4info)  # fresh, empty table per row
            n = min(args.entries if kind == "exact" else args.lpm_entries, 1 << 16)
            updates = [_entry(table_id, action_id, kind, 0x0A000000 | (i << 8), 24, 1 + i % 4) for i in range(n)]
            start = time.perf_counter()
            for i in range(0, n, batch):
                b.write(updates[i:i + batch])
            _row(f"insert {kind}, {batch}/Write", n, time.perf_counter() - start)
        read = p4runtime_pb2.ReadRequest(device_id=0)
        read.entities.add().table_entry.table_id = 0
        start = time.perf_counter()
        got = sum(len(r.entities) for r in b.stub.Read(read))
        _row("read all entries (wildcard)", got, time.perf_counter() - start)
        # the LPM table now routes 10.0.x.0/24 to ports 1..4; 10.255/16 goes to the CPU port
        b.write([_entry(table_id, action_id, "lpm", 0x0AFF0000, 16, CPU_PORT)])
        n = args.packets
        frame = bytes(Ether() / IP(dst="10.0.1.7") / UDP() / (b"x" * 64))
        b.sent, b.expect = 0, n
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.payload = frame
        start = time.perf_counter()
        for _ in range(n):
            b.out.put(req)
        b.sent_all.wait(60)
        _row("packet-out -> egress port", b.sent, time.perf_counter() - start)
        to_cpu = bytes(Ether() / IP(dst="10.255.0.7") / UDP() / (b"x" * 64))
        b.expect_in = n
        start = time.perf_counter()
        for _ in range(n):
            b.target.receive(1, to_cpu)
        b.got_all_in.wait(60)
        _row("port -> packet-in", b.packet_ins, time.perf_counter() - start)
    finally:
        b.close()


if __name__ == "__main__":
    main()
