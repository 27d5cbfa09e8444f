"""P4Runtime over TLS (simple_switch_grpc's --grpc-server-ssl/-cert/-key/-cacert flags)."""
import shutil
import subprocess

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4target.switch.options import TlsFiles
from p4target.switch.p4runtime import start_p4runtime_server
from p4target.switch.p4runtime.errors import ListenError
from p4target.switch.target import SwitchTarget


@pytest.fixture
def certs(tmp_path):
    """A self-signed certificate for 'localhost' and its key (made with openssl)."""
    openssl = shutil.which("openssl")
    assert openssl, "openssl is part of the Debian base system"
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True, timeout=60)
    return key, cert


def test_tls_server_answers_a_tls_client_and_refuses_plain_text(certs):
    key, cert = certs
    target = SwitchTarget(device_id=0, transmit=lambda port, frame: None)
    server = start_p4runtime_server(target, "127.0.0.1:0", TlsFiles(cert=str(cert), key=str(key)))
    try:
        creds = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        with grpc.secure_channel(f"localhost:{server.port}", creds) as channel:
            reply = p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(
                p4runtime_pb2.CapabilitiesRequest(), timeout=10)
            assert reply.p4runtime_api_version
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            with pytest.raises(grpc.RpcError):
                p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(
                    p4runtime_pb2.CapabilitiesRequest(), timeout=3)
    finally:
        server.stop()
        target.stop()


def test_unreadable_certificate_is_a_listen_error_naming_the_flag(tmp_path):
    (tmp_path / "k.pem").write_text("not read further")
    target = SwitchTarget(device_id=0, transmit=lambda port, frame: None)
    try:
        with pytest.raises(ListenError, match="--grpc-server-cert"):
            start_p4runtime_server(target, "127.0.0.1:0", TlsFiles(cert=str(tmp_path / "none.pem"),
                                                                  key=str(tmp_path / "k.pem")))
    finally:
        target.stop()
