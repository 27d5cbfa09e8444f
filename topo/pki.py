"""The run's certificate authority: the certificates that authenticate the control plane.

Each run (`make run`, `topo.run`, the topology tests) makes a fresh CA and issues two
certificates with it, all in `<log_dir>/pki/` (a 0700 folder, every file 0600):

- `switch.pem` / `switch.key`: every switch's P4Runtime server certificate (names 127.0.0.1,
  ::1 and localhost, where the servers listen);
- `client.pem` / `client.key`: the controller's and `gradctl --direct`'s client certificate;
- `ca.pem`: the CA certificate both sides verify the other against.

The CA's private key is never written: once the two certificates are issued nobody, the run's
owner included, can issue another, so a switch started with `--grpc-server-with-client-auth`
talks only to holders of `client.key`. The files are written through the atomic writer (a fresh
temporary created exclusively, fchmod'ed, renamed into place), so a file or symlink planted in
the folder is replaced, never written through or trusted.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from controller.tls import CA_FILE, CLIENT_CERT_FILE, CLIENT_KEY_FILE, PKI_FOLDER, SERVER_CERT_FILE, SERVER_KEY_FILE
from p4target.atomic_files import AtomicWriteError, write_files
from topo.errors import RunError

VALIDITY = datetime.timedelta(days=365)
CLOCK_SKEW = datetime.timedelta(hours=1)
SERVER_NAMES = ("localhost",)
SERVER_IPS = ("127.0.0.1", "::1")
CLIENT_NAME = "gradlane-controller"


@dataclass(frozen=True)
class RunPki:
    """Where a run's certificates are."""

    folder: Path

    @property
    def ca(self) -> str:
        return str(self.folder / CA_FILE)

    @property
    def server_cert(self) -> str:
        return str(self.folder / SERVER_CERT_FILE)

    @property
    def server_key(self) -> str:
        return str(self.folder / SERVER_KEY_FILE)

    @property
    def client_cert(self) -> str:
        return str(self.folder / CLIENT_CERT_FILE)

    @property
    def client_key(self) -> str:
        return str(self.folder / CLIENT_KEY_FILE)

    def switch_flags(self) -> list[str]:
        """simple_switch_grpc's target flags (after `--`) for TLS with client authentication;
        the embedded switch takes the same."""
        return ["--grpc-server-ssl", "--grpc-server-cacert", self.ca, "--grpc-server-cert", self.server_cert,
                "--grpc-server-key", self.server_key, "--grpc-server-with-client-auth"]


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "gradlane run"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _issue(ca_key: ec.EllipticCurvePrivateKey, ca_name: x509.Name, subject: x509.Name,
           public_key: ec.EllipticCurvePublicKey, now: datetime.datetime, *, is_ca: bool = False,
           usage: x509.ObjectIdentifier | None = None,
           alt_names: list[x509.GeneralName] | None = None) -> x509.Certificate:
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name).public_key(public_key)
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - CLOCK_SKEW).not_valid_after(now + VALIDITY)
               .add_extension(x509.BasicConstraints(ca=is_ca, path_length=0 if is_ca else None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=not is_ca, content_commitment=False,
                                            key_encipherment=False, data_encipherment=False, key_agreement=False,
                                            key_cert_sign=is_ca, crl_sign=is_ca, encipher_only=False,
                                            decipher_only=False), critical=True))
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if alt_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def _private_folder(folder: Path) -> None:
    """`folder` as a 0700 directory of the effective user (created if missing); RunError when
    something else sits there (a symlink, a file, another user's folder)."""
    try:
        folder.mkdir(mode=0o700, parents=False, exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        raise RunError(f"cannot create {folder}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise RunError(f"{folder} is not a directory (a symlink or file is in its place): remove it")
    if info.st_uid != os.geteuid():
        raise RunError(f"{folder} belongs to uid {info.st_uid}, not to this user: remove it")
    os.chmod(folder, 0o700)


def create_run_pki(log_dir: str | Path) -> RunPki:
    """A fresh CA and the switch and client certificates of one run, in `<log_dir>/pki/`
    (replacing any earlier run's); RunError when the folder cannot be made private."""
    folder = Path(log_dir) / PKI_FOLDER
    Path(log_dir).mkdir(parents=True, exist_ok=True)
    _private_folder(folder)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("gradlane run CA")
    ca = _issue(ca_key, ca_name, ca_name, ca_key.public_key(), now, is_ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    alt: list[x509.GeneralName] = [x509.DNSName(n) for n in SERVER_NAMES]
    alt += [x509.IPAddress(ipaddress.ip_address(a)) for a in SERVER_IPS]
    server = _issue(ca_key, ca_name, _name("gradlane switch"), server_key.public_key(), now,
                    usage=ExtendedKeyUsageOID.SERVER_AUTH, alt_names=alt)
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = _issue(ca_key, ca_name, _name(CLIENT_NAME), client_key.public_key(), now,
                    usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    pem = serialization.Encoding.PEM
    pki = RunPki(folder)
    try:
        write_files([(pki.ca, ca.public_bytes(pem)),
                     (pki.server_cert, server.public_bytes(pem)), (pki.server_key, _pem_key(server_key)),
                     (pki.client_cert, client.public_bytes(pem)), (pki.client_key, _pem_key(client_key))],
                    mode=0o600)
    except AtomicWriteError as exc:
        raise RunError(str(exc)) from None
    return pki
