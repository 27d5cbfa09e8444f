"""Table-entry write and read rates over a real P4Runtime gRPC connection (embedded switch).

Run: .venv/bin/python benchmarks/p4runtime_write.py [--entries N]
"""
from __future__ import annotations

import argparse
import json
import queue
import time

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4target.compiler.p4info import build_p4info
from p4target.engine.sample_programs import l3_router
from p4target.switch.p4runtime import start_p4runtime_server
from p4target.switch.target import SwitchTarget


def _entry(table_id: int, action_id: int, i: int, kind: str = "lpm") -> p4runtime_pb2.Update:
    u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = u.entity.table_entry
    te.table_id = table_id
    fm = te.match.add(field_id=1)
    if kind == "lpm":
        fm.lpm.value, fm.lpm.prefix_len = (0x0A000000 | (i << 8)).to_bytes(4, "big"), 24
    else:
        fm.exact.value = (0x0A000000 | i).to_bytes(4, "big")
    te.action.action.action_id = action_id
    te.action.action.params.add(param_id=1, value=(0x020000000000 + i).to_bytes(6, "big"))
    te.action.action.params.add(param_id=2, value=(1 + i % 4).to_bytes(2, "big"))
    return u


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=2000, help="entries per exact-table row")
    ap.add_argument("--lpm-entries", type=int, default=500,
                    help="entries per LPM row (the engine re-sorts an LPM table on every insert)")
    args = ap.parse_args()
    target = SwitchTarget(transmit=lambda port, data: None)
    server = start_p4runtime_server(target, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    out: queue.Queue = queue.Queue()
    stream = stub.StreamChannel(iter(out.get, None))
    arb = p4runtime_pb2.StreamMessageRequest()
    arb.arbitration.election_id.low = 1
    out.put(arb)
    next(stream)
    programs = {}
    for kind in ("exact", "lpm"):
        prog = l3_router()
        table = prog["pipelines"][0]["tables"][1]
        table["max_size"] = 1 << 16
        table["match_type"] = table["key"][0]["match_type"] = kind
        info = build_p4info(prog)
        programs[kind] = (prog, info, info.tables[0].preamble.id,
                          next(a.preamble.id for a in info.actions if a.preamble.name == "MyIngress.ipv4_forward"))
    try:
        print(f"{'operation':<34}{'entries':>9}{'entries/s':>12}")
        for kind, batch in (("exact", 1), ("exact", 100), ("exact", 1000), ("lpm", 100)):
            prog, p4info, table_id, action_id = programs[kind]
            req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
                device_id=0, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
            req.election_id.low = 1
            req.config.p4info.CopyFrom(p4info)
            req.config.p4_device_config = json.dumps(prog).encode()
            stub.SetForwardingPipelineConfig(req)  # fresh, empty table per row
            n = min(args.entries if kind == "exact" else args.lpm_entries, 1 << 16)
            updates = [_entry(table_id, action_id, i, kind) for i in range(n)]
            start = time.perf_counter()
            for i in range(0, n, batch):
                w = p4runtime_pb2.WriteRequest(device_id=0, updates=updates[i:i + batch])
                w.election_id.low = 1
                stub.Write(w)
            elapsed = time.perf_counter() - start
            print(f"{f'insert {kind}, {batch}/Write':<34}{n:>9}{n / elapsed:>12.0f}")
        read = p4runtime_pb2.ReadRequest(device_id=0)
        read.entities.add().table_entry.table_id = 0
        start = time.perf_counter()
        got = sum(len(r.entities) for r in stub.Read(read))
        elapsed = time.perf_counter() - start
        print(f"{'read all (wildcard)':<34}{got:>9}{got / elapsed:>12.0f}")
    finally:
        out.put(None)
        stream.cancel()
        channel.close()
        server.stop()
        target.stop()


if __name__ == "__main__":
    main()
