"""The switch process keeps forwarding good traffic while it receives a long stream of random
and truncated frames and malformed P4Runtime requests (gradlane's own program, which parses
Ethernet/ARP/IPv4/TCP/UDP/gradient headers, so garbage reaches every parser state)."""
from __future__ import annotations

import json
import random
import struct
import threading
import time
from pathlib import Path

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target.compiler import compile_file
from support.switch_probes import MARK_PORT, is_probe, probe, receive


ROOT = Path(__file__).resolve().parents[3]
ROUTES = ("act_prof_create_member GradIngress.ecmp_selector GradIngress.set_nhop "
          "00:00:00:00:00:fe 00:00:00:00:01:01 1\n"
          "act_prof_create_member GradIngress.ecmp_selector GradIngress.set_nhop "
          "00:00:00:00:00:fe 00:00:00:00:02:02 2\n"
          "table_indirect_add GradIngress.ipv4_lpm 10.0.1.0/24 => 0\n"
          "table_indirect_add GradIngress.ipv4_lpm 10.0.2.0/24 => 1\n")


def _garbage(rng: random.Random) -> bytes:
    """Random frames, and truncations of plausible ones (every header cut at a random byte)."""
    kind = rng.randrange(4)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(14, 200)))
    good = bytes(Ether(dst="00:00:00:00:00:fe") / IP(src="10.0.1.1", dst="10.0.2.2") /
                 UDP(sport=1234, dport=19527) / bytes(rng.randrange(256) for _ in range(40)))
    if kind == 1:
        return good[:rng.randrange(14, len(good))]
    if kind == 2:  # header fields scrambled, length kept
        data = bytearray(good)
        for _ in range(6):
            data[rng.randrange(14, len(data))] = rng.randrange(256)
        return bytes(data)
    return bytes(Ether(dst="00:00:00:00:00:fe", type=rng.choice([0x0806, 0x0800, 0x86DD, 0x1234])) /
                 bytes(rng.randrange(256) for _ in range(rng.randrange(0, 60))))


def _bad_p4runtime(addr: str, stop: threading.Event, errors: list) -> None:
    """Malformed P4Runtime requests until told to stop; collects the status codes seen."""
    rng = random.Random(5)
    with grpc.insecure_channel(addr) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        raw = channel.unary_unary("/p4.v1.P4Runtime/Write")
        while not stop.is_set():
            attempts = [
                lambda: raw(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))), timeout=5),
                lambda: stub.Write(p4runtime_pb2.WriteRequest(device_id=rng.randrange(5), updates=[
                    p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)]), timeout=5),
                lambda: stub.SetForwardingPipelineConfig(p4runtime_pb2.SetForwardingPipelineConfigRequest(
                    device_id=0, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
                    config=p4runtime_pb2.ForwardingPipelineConfig(p4_device_config=b"{not json")), timeout=5),
                lambda: list(stub.Read(p4runtime_pb2.ReadRequest(device_id=0, entities=[
                    p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=rng.randrange(1 << 32)))]),
                    timeout=5)),
            ]
            try:
                rng.choice(attempts)()
            except grpc.RpcError as exc:
                errors.append(exc.code())
            time.sleep(0.005)


def test_good_traffic_survives_garbage_frames_and_bad_requests(two_hosts, start_switch, open_ns_socket, tmp_path):
    h1, h2 = two_hosts
    program = tmp_path / "gradlane.json"
    program.write_text(json.dumps(compile_file(str(ROOT / "p4src" / "gradlane.p4"),
                                               include_dirs=[str(ROOT / "p4src")]).bmv2_json))
    sw = start_switch(["-i", f"1@{h1.switch_iface}", "-i", f"2@{h2.switch_iface}", "--thrift-port", "0",
                       str(program)])
    sw.cli(ROUTES)
    stop = threading.Event()
    codes: list = []
    chaos = threading.Thread(target=_bad_p4runtime, args=(sw.grpc_addr, stop, codes), daemon=True)
    chaos.start()
    rng = random.Random(11)
    s1, s2 = open_ns_socket(h1.ns, h1.iface), open_ns_socket(h2.ns, h2.iface)
    got: list = []
    # receive while sending: routed garbage would otherwise overflow the socket's buffer
    receiver = threading.Thread(target=lambda: got.extend(receive(s2, 300, quiet=4.0, limit=60.0)), daemon=True)
    receiver.start()
    try:
        for i in range(3000):
            s1.send(_garbage(rng))
            if i % 10 == 0:
                s1.send(probe(i // 10))
                # ~1000 frames/s, well below the switch's rate: truncated frames that still route
                # share the probes' queue, and probes must not be tail-dropped behind them
                time.sleep(0.01)
        receiver.join(timeout=60)
    finally:
        stop.set()
        chaos.join(timeout=10)
        s1.close()
        s2.close()
    assert sw.proc.poll() is None, "the switch died"
    assert len(got) == 300, f"{len(got)} of 300 good probes arrived"
    seqs = [struct.unpack("!I", bytes(Ether(d)[UDP].payload)[:4])[0] for _, d in got]
    assert sorted(seqs) == list(range(300))
    assert all(is_probe(d) and Ether(d)[UDP].dport == MARK_PORT for _, d in got)
    assert codes and grpc.StatusCode.UNAVAILABLE not in codes
    assert sw.stop() == 0
