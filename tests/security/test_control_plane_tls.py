"""Only the holder of the run's client certificate programs a switch: a switch started as `make run`
starts it (TLS, client authentication, a fresh run CA) answers no client without that
certificate, another local user (uid 65534) cannot read the certificate's key, the controller's
connection with it is primary and writes, and `gradctl --direct` neither runs without it nor
beside a daemon socket it cannot reach."""
from __future__ import annotations

import datetime
import json
import os
import queue
import socket
import stat

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controller.client import SwitchConnection
from controller.tls import load_client_tls
from p4target.compiler import compile_text
from support.controller_daemon import run_gradctl
from support.other_user import as_nobody
from support.switch_process import SwitchProcess, free_tcp_port
from topo.pki import create_run_pki

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
    table l2 { key = { hdr.ethernet.dst : exact; } actions = { fwd; } size = 64; }
    apply { l2.apply(); }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture(scope="module")
def compiled():
    return compile_text(PROGRAM, "l2.p4")


@pytest.fixture
def run_dir(tmp_path):
    """A run's log folder with its certificates, readable up to pki/ by others (as logs/ is)."""
    os.chmod(tmp_path, 0o755)
    return tmp_path


@pytest.fixture
def tls_switch(run_dir):
    pki = create_run_pki(run_dir)
    addr = f"127.0.0.1:{free_tcp_port()}"
    sw = SwitchProcess(["--no-p4", "--thrift-port", "0", "--", "--grpc-server-addr", addr, *pki.switch_flags()])
    sw.grpc_addr = addr
    try:
        yield sw.wait_ready(), pki
    finally:
        sw.stop()


def _foreign_credentials(ca: bytes) -> grpc.ChannelCredentials:
    """A client certificate with the controller's name, self-signed: not of the run's CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gradlane-controller")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    return grpc.ssl_channel_credentials(
        root_certificates=ca, certificate_chain=cert.public_bytes(serialization.Encoding.PEM),
        private_key=key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))


def _take_over(channel: grpc.Channel, compiled) -> str:
    """What an attacker does: arbitrate above the controller, push a pipeline. Its outcome."""
    requests: queue.Queue = queue.Queue()
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    try:
        stream = stub.StreamChannel(iter(requests.get, None))
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = 0
        req.arbitration.election_id.low = 101
        requests.put(req)
        next(iter(stream))
        push = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=0, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        push.election_id.low = 101
        push.config.p4info.CopyFrom(compiled.p4info)
        push.config.p4_device_config = json.dumps(compiled.bmv2_json).encode()
        stub.SetForwardingPipelineConfig(push, timeout=5)
        return "OK"
    except grpc.RpcError as exc:
        return exc.code().name
    finally:
        requests.put(None)
        channel.close()


def test_the_run_pki_is_private(run_dir):
    pki = create_run_pki(run_dir)
    assert stat.S_IMODE(os.stat(pki.folder).st_mode) == 0o700
    for path in (pki.ca, pki.server_cert, pki.server_key, pki.client_cert, pki.client_key):
        info = os.stat(path)
        assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
    done = as_nobody('cat "$1"', pki.client_key)
    assert done.returncode != 0 and "Permission denied" in done.stderr
    before = load_client_tls(pki.folder)
    again = load_client_tls(create_run_pki(run_dir).folder)  # a new run: new CA, new certificates
    assert again.ca != before.ca and again.key != before.key


def test_a_planted_pki_folder_is_refused(run_dir):
    from topo.errors import RunError
    (run_dir / "elsewhere").mkdir()
    (run_dir / "pki").symlink_to(run_dir / "elsewhere")
    with pytest.raises(RunError, match="is not a directory"):
        create_run_pki(run_dir)


def test_no_client_without_the_run_certificate_reaches_the_switch(tls_switch, compiled):
    sw, pki = tls_switch
    client = load_client_tls(pki.folder)
    other = load_client_tls(create_run_pki(pki.folder.parent / "other").folder)  # another run's CA
    attempts = {
        "plaintext": grpc.insecure_channel(sw.grpc_addr),
        "TLS without a client certificate": grpc.secure_channel(
            sw.grpc_addr, grpc.ssl_channel_credentials(root_certificates=client.ca)),
        "a self-signed client certificate": grpc.secure_channel(sw.grpc_addr, _foreign_credentials(client.ca)),
        "another run's client certificate": grpc.secure_channel(
            sw.grpc_addr, grpc.ssl_channel_credentials(root_certificates=client.ca, private_key=other.key,
                                                       certificate_chain=other.cert)),
    }
    outcomes = {name: _take_over(channel, compiled) for name, channel in attempts.items()}
    assert outcomes == {name: "UNAVAILABLE" for name in attempts}
    with SwitchConnection("s1", sw.grpc_addr, 0, election_id=(0, 100), timeout=10,
                          credentials=client.credentials()) as conn:
        assert conn.connect() is True
        assert conn.get_pipeline() is None  # nothing above reached it
        conn.set_pipeline(compiled.p4info, compiled.bmv2_json)
        assert conn.get_pipeline() is not None


def test_the_controller_needs_tls_against_a_tls_switch(tls_switch):
    sw, _ = tls_switch
    from controller import errors
    conn = SwitchConnection("s1", sw.grpc_addr, 0, election_id=(0, 100), timeout=1)
    with pytest.raises(errors.UnreachableError, match="tried in plaintext"):
        conn.connect()


def test_gradctl_direct_needs_the_run_certificate(tmp_path):
    topology = tmp_path / "t.topology.json"
    topology.write_text("{}")
    done = run_gradctl("--socket", str(tmp_path / "none.sock"), "--direct", "--topology", str(topology),
                       "--p4info", str(tmp_path / "x.txtpb"), "switches")
    assert done.code == 1 and done.stderr.count("\n") == 1, done
    assert f"no certificate folder {tmp_path / 'pki'}" in done.stderr and "--plaintext" in done.stderr
    done = run_gradctl("--socket", str(tmp_path / "none.sock"), "--direct", "--topology", str(topology),
                       "--p4info", "x", "--pki", str(tmp_path), "--plaintext", "switches")
    assert done.code == 1 and "give either --pki DIR or --plaintext, not both" in done.stderr


def test_gradctl_direct_refuses_beside_a_daemon_socket_it_cannot_reach(tmp_path):
    sock = tmp_path / "controller.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock))
    listener.close()  # the socket file stays; nothing answers (a daemon this user cannot reach)
    done = run_gradctl("--socket", str(sock), "--direct", "--plaintext", "--topology", str(tmp_path / "t.json"),
                       "--p4info", "x", "switches")
    assert done.code == 1 and done.stderr.count("\n") == 1, done
    assert "--direct refuses while that socket exists" in done.stderr
