"""Frames and P4Runtime requests against a local embedded switch process.

The switch (``python -m p4target switch``) runs gradlane.p4 with gRPC on loopback, Thrift on a
free port, a CPU port and no interfaces: frames enter its pipeline as PacketOut on the CPU port
(the path every frame takes: parser, checksums, tables, deparser), so nothing leaves this
machine. P4Runtime requests are built from the P4Info with random ids and bytes, or are
mutated serialized requests sent as raw bytes. A crash is the process gone; a hang is an RPC
past its deadline or a switch that no longer answers; a traceback is an error line in its log
or an INTERNAL status.
"""
from __future__ import annotations

import random
import re
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from fuzz.mutate import mutate_bytes
from fuzz.report import Report
from hosts import wire

ROOT = Path(__file__).resolve().parents[1]
CPU_PORT = 64
RPC_DEADLINE = 5.0
ELECTION = p4runtime_pb2.Uint128(high=0, low=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _csum(data: bytes) -> int:
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _frame(rng: random.Random) -> bytes:
    """A well-formed seed: ARP, UDP, TCP or a gradient packet (random fields), maybe options."""
    eth = bytes.fromhex("00000a0001fe080000000101")
    kind = rng.randrange(4)
    if kind == 0:
        return eth + b"\x08\x06" + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + bytes(6) + \
            bytes([10, 0, 1, 1]) + bytes(6) + bytes([10, 0, 1, 254])
    if kind == 3:
        payload = rng.randbytes(4 * rng.randint(0, 16))
        body = wire.pack_header(rng.randrange(10), rng.randrange(256), rng.randrange(4),
                                rng.randrange(8), rng.randrange(16), rng.randrange(8),
                                rng.randrange(8), len(payload), rng.randrange(64)) + payload
        l4 = struct.pack("!HHHH", 40000, wire.GRADLANE_UDP_PORT, 8 + len(body), 0) + body
        proto = 17
    elif kind == 1:
        l4 = struct.pack("!HHHH", 40000, 5000, 16, 0) + rng.randbytes(8)
        proto = 17
    else:
        l4 = struct.pack("!HHIIBBHHH", 40000, 80, 1, 0, 0x50, 0x10, 1024, 0, 0)
        proto = 6
    options = rng.choice([b"", b"\x94\x04\x00\x00", b"\x01" * 39 + b"\x00"])
    ihl = 5 + len(options) // 4
    ip = struct.pack("!BBHHHBBHII", 0x40 | ihl, rng.randrange(256), 4 * ihl + len(l4), 0, 0,
                     rng.choice([1, 64]), proto, 0, 0x0A000101, rng.choice([0x0A000202, 0x0A000303])) + options
    ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    return eth + b"\x08\x00" + ip + l4


class LocalSwitch:
    """An embedded switch process on loopback running gradlane.p4; stop() ends it by PID."""

    def __init__(self, folder: Path, tls: "tuple[list[str], grpc.ChannelCredentials] | None" = None) -> None:
        """`tls`: the switch's TLS target flags and the credentials to connect with (else plaintext)."""
        from p4target.compiler import compile_file
        program = compile_file(str(ROOT / "p4src" / "gradlane.p4"), include_dirs=[str(ROOT / "p4src")])
        self.p4info = program.p4info
        self.json_path = folder / "gradlane.json"
        import json
        self.json_path.write_text(json.dumps(program.bmv2_json))
        self.log_path = folder / "switch.log"
        self.stderr_path = folder / "switch.stderr"
        self._stderr = open(self.stderr_path, "w")
        self.address = f"127.0.0.1:{_free_port()}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "p4target", "switch", str(self.json_path), "--thrift-port", "0",
             "--log-file", str(self.log_path), "-L", "warn", "--",
             "--grpc-server-addr", self.address, "--cpu-port", str(CPU_PORT), "--priority-queues", "8",
             *(tls[0] if tls else [])],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        self.thrift_port: int | None = None
        ready = threading.Event()
        threading.Thread(target=self._watch, args=(ready,), daemon=True).start()
        if not ready.wait(60) or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError(f"the switch did not start (log {self.log_path})")
        self.channel = grpc.secure_channel(self.address, tls[1]) if tls else grpc.insecure_channel(self.address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._requests: "list[p4runtime_pb2.StreamMessageRequest]" = []
        self._cv = threading.Condition()
        self._stream = self.stub.StreamChannel(self._stream_requests())
        self._send(p4runtime_pb2.StreamMessageRequest(
            arbitration=p4runtime_pb2.MasterArbitrationUpdate(device_id=0, election_id=ELECTION)))
        next(self._stream)
        threading.Thread(target=self._drain, daemon=True).start()
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=0, election_id=ELECTION,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.config.p4info.CopyFrom(self.p4info)
        req.config.p4_device_config = self.json_path.read_bytes()
        self.stub.SetForwardingPipelineConfig(req, timeout=60)

    def _watch(self, ready: threading.Event) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if "Thrift server listening on port" in line:
                self.thrift_port = int(line.rsplit(" ", 1)[1])
            if "switch ready" in line:
                ready.set()

    def _stream_requests(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            with self._cv:
                while not self._requests:
                    self._cv.wait()
                msg = self._requests.pop(0)
            if msg is None:
                return
            yield msg

    def _send(self, msg: "p4runtime_pb2.StreamMessageRequest | None") -> None:
        with self._cv:
            self._requests.append(msg)  # type: ignore[arg-type]
            self._cv.notify()

    def _drain(self) -> None:
        try:
            for _ in self._stream:
                pass
        except grpc.RpcError:
            pass

    def packet_out(self, frame: bytes) -> None:
        self._send(p4runtime_pb2.StreamMessageRequest(packet=p4runtime_pb2.PacketOut(payload=frame)))

    def alive(self) -> bool:
        """The process runs and answers a Capabilities call in time."""
        if self.proc.poll() is not None:
            return False
        try:
            self.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=RPC_DEADLINE)
            return True
        except grpc.RpcError:
            return False

    def log_errors(self) -> list[str]:
        """Error lines of the switch log, and tracebacks on its stderr other than gRPC's own
        report of request bytes that are not a protobuf message (answered INTERNAL by grpcio)."""
        out = []
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            text = ""
        out += [l for l in text.splitlines() if "Traceback" in l or "[error]" in l.lower()
                or " error " in l.lower()]
        try:
            err = self.stderr_path.read_text(errors="replace").splitlines()
        except OSError:
            err = []
        for i, line in enumerate(err):
            if not line.startswith("Traceback") or (i and _benign_traceback(err[i - 1], err[i:i + 40])):
                continue
            if i >= 2 and not err[i - 1].strip() and ("During handling" in err[i - 2] or "direct cause" in err[i - 2]):
                continue  # the next link of a chained traceback: its first link was classified
            out.append(" | ".join(err[max(0, i - 1):i + 12])[-400:])
        return out

    def tx_packets(self) -> int:
        """Packets that left the switch's egress queues (GradEgress.queue_tx_ctr, all indexes)."""
        ctr = next(c for c in self.p4info.counters if c.preamble.name == "GradEgress.queue_tx_ctr")
        req = p4runtime_pb2.ReadRequest(device_id=0)
        req.entities.add().counter_entry.counter_id = ctr.preamble.id
        total = 0
        for resp in self.stub.Read(req, timeout=30):
            total += sum(e.counter_entry.data.packet_count for e in resp.entities)
        return total

    def stop(self) -> None:
        try:
            self._send(None)
            self.channel.close()
        except AttributeError:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        self._stderr.close()


def _benign_traceback(before: str, lines: list[str]) -> bool:
    """Tracebacks that report an input refused as it should be: grpcio's own report of request
    bytes that are not a protobuf message (unary or stream; answered INTERNAL or the stream
    closed), and the Thrift library's log of an error it answers the client with (an exception
    of the service, not one of our handler's failures, which it reports as `Name: Error: ...`)."""
    if "Exception deserializing request" in before or "Exception deserializing message" in before:
        return True
    if "TApplication exception in handler" in before:
        last = next((line for line in lines[1:] if not line.startswith(" ")), "")
        return re.search(r": \w+(Error|Exception): ", last) is None
    return False


def _install_routes(sw: LocalSwitch) -> None:
    """Two routes so fuzzed frames reach tables, egress and the deparser."""
    names = {t.preamble.name: t for t in sw.p4info.tables}
    acts = {a.preamble.name: a for a in sw.p4info.actions}
    lpm, nhop = names["GradIngress.ipv4_lpm"], acts["GradIngress.set_nhop"]
    profile = next(p for p in sw.p4info.action_profiles if p.preamble.name == "GradIngress.ecmp_selector")
    members = p4runtime_pb2.WriteRequest(device_id=0, election_id=ELECTION)
    routes = p4runtime_pb2.WriteRequest(device_id=0, election_id=ELECTION)
    for member, (dst, port) in enumerate(((0x0A000202, 2), (0x0A000303, 3)), start=1):
        m = members.updates.add(type=p4runtime_pb2.Update.INSERT).entity.action_profile_member
        m.action_profile_id, m.member_id = profile.preamble.id, member
        m.action.action_id = nhop.preamble.id
        for p, v in zip(nhop.params, (b"\x00\x00\x0a\x00\x01\xfe", b"\x08\x00\x00\x00\x02\x02",
                                      bytes([0, port]))):
            m.action.params.add(param_id=p.id, value=v)
        te = routes.updates.add(type=p4runtime_pb2.Update.INSERT).entity.table_entry
        te.table_id = lpm.preamble.id
        fm = te.match.add(field_id=lpm.match_fields[0].id)
        fm.lpm.value, fm.lpm.prefix_len = dst.to_bytes(4, "big"), 32
        te.action.action_profile_member_id = member
    sw.stub.Write(members, timeout=RPC_DEADLINE)
    sw.stub.Write(routes, timeout=RPC_DEADLINE)


def fuzz_frames(count: int, seconds: float, seed: int = 1) -> Report:
    """Up to ``count`` mutated frames through the switch's pipeline (PacketOut, CPU port)."""
    rng = random.Random(seed)
    report = Report("frames")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gradlane-fuzz-") as tmp:
        sw = LocalSwitch(Path(tmp))
        try:
            _install_routes(sw)
            for i in range(count):
                if time.monotonic() - start > seconds:
                    break
                frame = _frame(rng)
                if rng.random() < 0.8:
                    frame = mutate_bytes(rng, frame, max_len=9000)
                sw.packet_out(frame)
                report.tried += 1
                if i % 500 == 499:
                    time.sleep(0.05)
                if i % 2000 == 1999:
                    time.sleep(0.05)          # let the switch keep up; check it still answers
                    if not sw.alive():
                        report.fail("crash" if sw.proc.poll() is not None else "hang",
                                    f"after frame {i}: {frame[:64].hex()}")
                        break
            time.sleep(1.0)
            if sw.proc.poll() is not None:
                report.fail("crash", f"switch exited with {sw.proc.returncode}")
            elif not sw.alive():
                report.fail("hang", "switch stopped answering Capabilities")
            for line in sw.log_errors():
                report.fail("traceback", line)
            if sw.alive():
                report.outcomes["forwarded"] = sw.tx_packets()
        finally:
            sw.stop()
    report.seconds = time.monotonic() - start
    return report


def _random_write(rng: random.Random, sw: LocalSwitch) -> p4runtime_pb2.WriteRequest:
    req = p4runtime_pb2.WriteRequest(device_id=rng.choice([0, 0, 0, 1]),
                                     election_id=rng.choice([ELECTION, ELECTION, p4runtime_pb2.Uint128(low=1)]),
                                     atomicity=rng.randrange(3))
    tables = list(sw.p4info.tables)
    actions = list(sw.p4info.actions)
    for _ in range(rng.randint(1, 8)):
        u = req.updates.add(type=rng.randrange(4))
        te = u.entity.table_entry
        t = rng.choice(tables)
        te.table_id = t.preamble.id if rng.random() < 0.9 else rng.randrange(1 << 32)
        for mf in t.match_fields:
            if rng.random() < 0.8:
                fm = te.match.add(field_id=mf.id if rng.random() < 0.9 else rng.randrange(8))
                value = rng.randbytes(rng.choice([0, 1, (mf.bitwidth + 7) // 8, 16]))
                kind = rng.randrange(5)
                if kind == 0:
                    fm.exact.value = value
                elif kind == 1:
                    fm.lpm.value, fm.lpm.prefix_len = value, rng.randrange(-1, 70)
                elif kind == 2:
                    fm.ternary.value, fm.ternary.mask = value, rng.randbytes(len(value))
                elif kind == 3:
                    fm.range.low, fm.range.high = value, rng.randbytes(len(value))
                else:
                    fm.optional.value = value
        te.priority = rng.choice([0, 1, 10, -1, (1 << 31) - 1])
        a = rng.choice(actions)
        te.action.action.action_id = a.preamble.id if rng.random() < 0.9 else rng.randrange(1 << 32)
        for p in a.params:
            if rng.random() < 0.9:
                te.action.action.params.add(param_id=p.id, value=rng.randbytes(rng.choice([1, (p.bitwidth + 7) // 8, 9])))
        if rng.random() < 0.1:
            te.is_default_action = True
    return req


def fuzz_p4runtime(count: int, seconds: float, seed: int = 1) -> Report:
    """Up to ``count`` Write/Read/Get requests, structured or mutated as raw bytes."""
    rng = random.Random(seed)
    report = Report("p4runtime")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gradlane-fuzz-") as tmp:
        sw = LocalSwitch(Path(tmp))
        raw_write = sw.channel.unary_unary("/p4.v1.P4Runtime/Write")
        raw_read = sw.channel.unary_stream("/p4.v1.P4Runtime/Read")
        try:
            for i in range(count):
                if time.monotonic() - start > seconds:
                    break
                report.tried += 1
                pick = rng.random()
                try:
                    if pick < 0.5:
                        sw.stub.Write(_random_write(rng, sw), timeout=RPC_DEADLINE)
                    elif pick < 0.7:
                        raw_write(mutate_bytes(rng, _random_write(rng, sw).SerializeToString()),
                                  timeout=RPC_DEADLINE)
                    elif pick < 0.85:
                        w = _random_write(rng, sw)
                        rd = p4runtime_pb2.ReadRequest(device_id=0)
                        rd.entities.extend(u.entity for u in w.updates)
                        data = rd.SerializeToString()
                        list(raw_read(mutate_bytes(rng, data) if rng.random() < 0.5 else data,
                                      timeout=RPC_DEADLINE))
                    else:
                        sw.stub.GetForwardingPipelineConfig(p4runtime_pb2.GetForwardingPipelineConfigRequest(
                            device_id=rng.choice([0, 5]), response_type=rng.randrange(5)), timeout=RPC_DEADLINE)
                    report.outcomes["OK"] += 1
                except grpc.RpcError as exc:
                    code = exc.code()
                    report.outcomes[code.name] += 1
                    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                        report.fail("hang", f"request {i}: {exc.details()}")
                    elif code == grpc.StatusCode.UNAVAILABLE and sw.proc.poll() is not None:
                        report.fail("crash", f"switch exited with {sw.proc.returncode} at request {i}")
                        break
                    elif code == grpc.StatusCode.INTERNAL and \
                            exc.details() == "Exception deserializing request!":
                        report.outcomes["INTERNAL (grpcio: not a protobuf)"] += 1
                        report.outcomes[code.name] -= 1
                    elif code == grpc.StatusCode.INTERNAL:
                        report.fail("traceback", f"INTERNAL at request {i}: {(exc.details() or '')[:200]}")
            if not sw.alive():
                report.fail("crash" if sw.proc.poll() is not None else "hang", "switch gone at the end")
            for line in sw.log_errors():
                report.fail("traceback", line)
        finally:
            sw.stop()
    report.seconds = time.monotonic() - start
    return report
