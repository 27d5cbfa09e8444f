"""The control plane of a switch as `make run` starts it: P4Runtime over TLS with client
authentication, Thrift for the switch's own user. Against a local embedded switch process
running gradlane.p4 with a fresh run CA (topo.pki):

- clients without the run's certificate (plaintext, TLS without a client certificate, TLS with a
  certificate of another CA) try Capabilities, Write and a StreamChannel: any answer is a breach;
- authenticated StreamChannels send random arbitration updates (device ids, election ids below
  the controller's, roles), packet-outs, digest acks and mutated raw messages, and stay open or
  close at random; after every few of them a controller with the highest election id must
  connect and be primary (a lockout is a breach);
- Thrift calls of the `standard` service, serialized then mutated, are sent raw by the switch's
  user; as root, another user (uid 65534, through setpriv) must find every connection closed.

A crash is the process gone, a hang a switch that stops answering, a traceback an error line in
its log or an INTERNAL status.
"""
from __future__ import annotations

import datetime
import os
import queue
import random
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import grpc
from bm_runtime.standard import Standard
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.transport import TTransport

from controller.tls import load_client_tls
from fuzz.mutate import mutate_bytes
from fuzz.report import Report
from fuzz.switch import RPC_DEADLINE, LocalSwitch
from topo.pki import create_run_pki

CONTROLLER_ELECTION = 1 << 64  # above every election id the fuzzer sends
MAX_OPEN = 24  # authenticated streams the fuzzer keeps open at most (the switch admits 16)
CHECK_EVERY = 25
NOBODY = 65534


def _stranger_credentials(ca: bytes) -> grpc.ChannelCredentials:
    """TLS credentials with a self-signed client certificate (not the run CA's)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gradlane-controller")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    pem_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return grpc.ssl_channel_credentials(root_certificates=ca, private_key=pem_key,
                                        certificate_chain=cert.public_bytes(serialization.Encoding.PEM))


class _Stream:
    """One authenticated StreamChannel fed from a queue; raw bytes or messages."""

    def __init__(self, channel: grpc.Channel, raw: bool) -> None:
        self._out: queue.Queue = queue.Queue()
        if raw:
            call = channel.stream_stream("/p4.v1.P4Runtime/StreamChannel")(iter(self._out.get, None))
        else:
            call = p4runtime_pb2_grpc.P4RuntimeStub(channel).StreamChannel(iter(self._out.get, None))
        self.call = call
        self.raw = raw
        self.ended: grpc.StatusCode | None = None
        self.done = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        try:
            for _ in self.call:
                pass
            self.ended = grpc.StatusCode.OK
        except grpc.RpcError as exc:
            self.ended = exc.code()
        self.done.set()

    def send(self, msg) -> None:
        self._out.put(msg)

    def close(self) -> None:
        self._out.put(None)
        self.call.cancel()


def _stream_message(rng: random.Random) -> p4runtime_pb2.StreamMessageRequest:
    msg = p4runtime_pb2.StreamMessageRequest()
    pick = rng.random()
    if pick < 0.6:
        arb = msg.arbitration
        arb.device_id = rng.choice([0, 0, 0, 1, rng.randrange(1 << 32)])
        if rng.random() < 0.85:
            arb.election_id.high = 0
            arb.election_id.low = rng.choice([1, 2, 10, rng.randrange(1, 1 << 63)])
        if rng.random() < 0.3:
            arb.role.name = rng.choice(["", "r1", "r2", "x" * rng.randrange(1, 300)])
    elif pick < 0.8:
        msg.packet.payload = rng.randbytes(rng.randrange(0, 200))
        if rng.random() < 0.5:
            msg.packet.metadata.add(metadata_id=rng.randrange(4), value=rng.randbytes(rng.randrange(4)))
    elif pick < 0.9:
        msg.digest_ack.digest_id = rng.randrange(1 << 32)
        msg.digest_ack.list_id = rng.randrange(1 << 64)
    else:
        msg.other.type_url = "type.googleapis.com/x"
    return msg


def _controller_gets_in(address: str, credentials: grpc.ChannelCredentials) -> str | None:
    """None when a controller with the highest election id connects and is primary; else why not."""
    channel = grpc.secure_channel(address, credentials)
    out: queue.Queue = queue.Queue()
    try:
        call = p4runtime_pb2_grpc.P4RuntimeStub(channel).StreamChannel(iter(out.get, None))
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = 0
        req.arbitration.election_id.high = CONTROLLER_ELECTION >> 64
        out.put(req)
        try:
            first = next(iter(call))
        except grpc.RpcError as exc:
            return f"the controller's stream ended: {exc.code().name}: {exc.details()}"
        finally:
            out.put(None)
            call.cancel()
        if first.arbitration.status.code != 0:
            return f"the controller is not primary: {first.arbitration.status.message}"
        return None
    finally:
        channel.close()


def _unauthenticated(rng: random.Random, sw: LocalSwitch, strangers: list, report: Report) -> None:
    """One attempt without the run's client certificate: nothing may answer."""
    name, credentials = rng.choice(strangers)
    channel = grpc.secure_channel(sw.address, credentials) if credentials else grpc.insecure_channel(sw.address)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    try:
        if rng.random() < 0.5:
            stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=RPC_DEADLINE)
        else:
            req = p4runtime_pb2.WriteRequest(device_id=0)
            req.election_id.low = 1 << 62
            stub.Write(req, timeout=RPC_DEADLINE)
        report.fail("breach", f"{name}: a request without the run's client certificate was answered")
    except grpc.RpcError as exc:
        report.outcomes[f"{name} {exc.code().name}"] += 1
    finally:
        channel.close()


def _thrift_seeds() -> list[bytes]:
    """Serialized calls of the `standard` service (the bytes a client writes)."""
    seeds = []
    calls = [("bm_get_config", ()), ("bm_mt_get_num_entries", (0, "GradIngress.ipv4_lpm")),
             ("bm_counter_read", (0, "GradEgress.queue_tx_ctr", 0)), ("bm_load_new_config", ('{"x": 1}',)),
             ("bm_swap_configs", ()), ("bm_mt_clear_entries", (0, "GradIngress.ipv4_lpm", False)),
             ("bm_register_read", (0, "GradEgress.nothing", 3)), ("bm_mgmt_get_info", ())]
    for method, args in calls:
        buf = TTransport.TMemoryBuffer()
        proto = TMultiplexedProtocol.TMultiplexedProtocol(TBinaryProtocol.TBinaryProtocol(buf), "standard")
        getattr(Standard.Client(proto), f"send_{method}")(*args)
        seeds.append(buf.getvalue())
    return seeds


def _thrift_call(port: int, data: bytes) -> str:
    """Send `data` on a fresh connection; what came back (bytes, closed or silent)."""
    with socket.create_connection(("127.0.0.1", port), timeout=RPC_DEADLINE) as sock:
        sock.sendall(data)
        sock.settimeout(0.3)
        try:
            reply = sock.recv(65536)
        except socket.timeout:
            return "waiting for more bytes"
        except ConnectionResetError:
            return "reset"
        return "answered" if reply else "closed"


def _thrift_as_nobody(port: int, data: bytes, folder: str) -> int | None:
    """Reply bytes uid 65534 gets for `data` (0: closed unanswered), through setpriv and bash
    (never a fork of this process, which holds gRPC threads); None when that cannot run."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    path = os.path.join(folder, "call.bin")
    with open(path, "wb") as fh:
        fh.write(data)
    os.chmod(path, 0o644)
    script = ('exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 9; cat "$2" >&3 || exit 8; '
              'timeout 0.5 head -c 1 <&3 | wc -c')
    done = subprocess.run([setpriv, "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups",
                           "/bin/bash", "-c", script, "bash", str(port), path],
                          capture_output=True, text=True, timeout=30, cwd="/")
    try:
        return int(done.stdout.strip())
    except ValueError:
        return None


def run(count: int, seconds: float, seed: int = 1) -> Report:
    """Up to ``count`` control-plane inputs (streams, unauthenticated calls, Thrift calls)."""
    rng = random.Random(seed)
    report = Report("control")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gradlane-fuzz-") as tmp:
        pki = create_run_pki(tmp)
        client = load_client_tls(pki.folder)
        sw = LocalSwitch(Path(tmp), tls=(pki.switch_flags(), client.credentials()))
        port = sw.thrift_port
        strangers = [("plaintext", None), ("no-client-cert", grpc.ssl_channel_credentials(root_certificates=client.ca)),
                     ("foreign-cert", _stranger_credentials(client.ca))]
        channel = grpc.secure_channel(sw.address, client.credentials())
        seeds = _thrift_seeds()
        shared = tempfile.mkdtemp(prefix="gradlane-fuzz-nobody-")  # readable by uid 65534
        os.chmod(shared, 0o755)
        streams: list[_Stream] = []
        try:
            for i in range(count):
                if time.monotonic() - start > seconds:
                    break
                report.tried += 1
                pick = rng.random()
                if pick < 0.15:
                    _unauthenticated(rng, sw, strangers, report)
                elif pick < 0.75:
                    if not streams or (len(streams) < MAX_OPEN and rng.random() < 0.3):
                        streams.append(_Stream(channel, raw=rng.random() < 0.2))
                    s = rng.choice(streams)
                    msg = _stream_message(rng)
                    if rng.random() < 0.2:
                        s.send(mutate_bytes(rng, msg.SerializeToString()))
                        report.outcomes["stream raw"] += 1
                    else:
                        s.send(msg.SerializeToString() if s.raw else msg)
                        report.outcomes["stream message"] += 1
                    if rng.random() < 0.1:
                        s.close()
                    streams = [x for x in streams if not x.done.is_set()]
                elif port is not None:
                    data = mutate_bytes(rng, rng.choice(seeds)) if rng.random() < 0.8 else rng.choice(seeds)
                    if os.geteuid() == 0 and rng.random() < 0.1:
                        got = _thrift_as_nobody(port, data, shared)
                        if got:
                            report.fail("breach", f"uid {NOBODY}'s Thrift call was answered: {data[:48].hex()}")
                        report.outcomes["thrift other user" + (" (could not run)" if got is None else "")] += 1
                    else:
                        report.outcomes[f"thrift {_thrift_call(port, data)}"] += 1
                if i % CHECK_EVERY == CHECK_EVERY - 1:
                    if sw.proc.poll() is not None:
                        report.fail("crash", f"switch exited with {sw.proc.returncode} after input {i}")
                        break
                    why = _controller_gets_in(sw.address, client.credentials())
                    if why is not None:
                        report.fail("breach", f"after input {i}: {why}")
                    report.outcomes["controller checks"] += 1
            for s in streams:
                s.close()
            time.sleep(0.5)
            if sw.proc.poll() is not None:
                report.fail("crash", f"switch exited with {sw.proc.returncode}")
            elif not sw.alive():
                report.fail("hang", "switch stopped answering Capabilities")
            for line in sw.log_errors():
                report.fail("traceback", line)
        finally:
            channel.close()
            sw.stop()
            shutil.rmtree(shared, ignore_errors=True)
    report.seconds = time.monotonic() - start
    return report
