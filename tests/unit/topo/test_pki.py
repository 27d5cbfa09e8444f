"""A run's certificates and the flags `topo` starts a switch with: TLS with client
authentication after `--`, for BMv2 and the embedded switch alike, which parses them as BMv2."""
from __future__ import annotations

import sys

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from controller.topology import Switch
from p4target.switch.options import parse_options
from topo.pki import create_run_pki
from topo.switch_node import switch_command
from topo.toolchain import Tool

EMBEDDED = Tool((sys.executable, "-m", "p4target", "switch"), "embedded")
BMV2 = Tool(("/usr/local/bin/simple_switch_grpc",), "real")
DESC = Switch(name="s1", device_id=1, grpc_addr="127.0.0.1:50001", thrift_port=9091,
              router_mac="00:00:0a:00:01:fe", log="logs/s1.log")


def _cert(path: str) -> x509.Certificate:
    with open(path, "rb") as fh:
        return x509.load_pem_x509_certificate(fh.read())


def test_the_certificates_chain_to_the_run_ca_and_name_loopback(tmp_path):
    pki = create_run_pki(tmp_path)
    ca, server, client = _cert(pki.ca), _cert(pki.server_cert), _cert(pki.client_cert)
    for cert in (server, client):
        assert cert.issuer == ca.subject
        cert.verify_directly_issued_by(ca)
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "::1"}
    usage = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not any(p.name.startswith("ca.key") for p in pki.folder.iterdir())  # never written


def test_both_switches_get_the_same_tls_flags_and_the_embedded_one_reads_them(tmp_path):
    pki = create_run_pki(tmp_path)
    flags = tuple(pki.switch_flags())
    for tool in (EMBEDDED, BMV2):
        argv = switch_command(tool, DESC, {1: "s1-eth1"}, "build/gradlane.json", tls=flags)
        after = argv[argv.index("--") + 1:]
        assert after[-len(flags):] == list(flags)
    argv = switch_command(EMBEDDED, DESC, {1: "s1-eth1"}, "build/gradlane.json", tls=flags)
    tls = parse_options(argv[len(EMBEDDED.argv):]).grpc_tls
    assert tls is not None and tls.with_client_auth
    assert (tls.cacert, tls.cert, tls.key) == (pki.ca, pki.server_cert, pki.server_key)
    plain = switch_command(EMBEDDED, DESC, {}, None)
    assert parse_options(plain[len(EMBEDDED.argv):]).grpc_tls is None
