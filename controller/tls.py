"""TLS on the controller's P4Runtime channels: the run's client certificate, or plaintext when asked.

A run (`topo`) makes its own CA and puts it beside the topology description, in a `pki/` folder
(`topo/pki.py` writes it; the names are defined here, where they are read): `ca.pem`, the switches'
`switch.pem`/`switch.key` and the clients' `client.pem`/`client.key`. Its switches require a
client certificate signed by that CA (`--grpc-server-with-client-auth`), so the daemon and
`gradctl --direct` connect with `client.pem`/`client.key` and verify the switch against `ca.pem`.
Switches started without TLS (a testbed without PKI, most tests) need `--plaintext`: the choice
is always explicit, never a fallback when a file is missing.
"""
from __future__ import annotations

import argparse
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import grpc

from controller.errors import ConfigError

PKI_FOLDER = "pki"
CA_FILE = "ca.pem"
SERVER_CERT_FILE = "switch.pem"
SERVER_KEY_FILE = "switch.key"
CLIENT_CERT_FILE = "client.pem"
CLIENT_KEY_FILE = "client.key"
_MAX_PEM_BYTES = 64 * 1024


@dataclass(frozen=True)
class ClientTls:
    """The PEM material of a TLS client with its certificate."""

    folder: str
    ca: bytes
    cert: bytes
    key: bytes

    def credentials(self) -> grpc.ChannelCredentials:
        """gRPC channel credentials: verify the switch against the CA, present the client cert."""
        return grpc.ssl_channel_credentials(root_certificates=self.ca, private_key=self.key,
                                            certificate_chain=self.cert)


def default_pki_folder(topology: str | os.PathLike[str]) -> Path:
    """Where a run keeps its certificates: `pki/` beside its topology description."""
    return Path(topology).parent / PKI_FOLDER


def _read(path: Path, secret: bool) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        why = "is a symlink" if path.is_symlink() else exc.strerror
        raise ConfigError(f"cannot read {path}: {why}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path} is not a regular file")
        if secret and info.st_uid != os.geteuid():
            raise ConfigError(f"{path} belongs to uid {info.st_uid}, not to this user: refusing a key "
                              "another user could have planted")
        if secret and info.st_mode & 0o077:
            raise ConfigError(f"{path} is accessible to others (mode {stat.S_IMODE(info.st_mode):04o}); "
                              "chmod 600 it")
        data = fh.read(_MAX_PEM_BYTES + 1)
    if len(data) > _MAX_PEM_BYTES or b"-----BEGIN " not in data:
        raise ConfigError(f"{path} does not hold a PEM certificate or key")
    return data


def load_client_tls(folder: str | os.PathLike[str]) -> ClientTls:
    """The client certificate, key and CA of `folder`; ConfigError naming the missing file."""
    base = Path(folder)
    if not base.is_dir():
        raise ConfigError(f"no certificate folder {base}: the run's switches require its client "
                          "certificate (give --pki DIR), or pass --plaintext for switches started "
                          "without TLS")
    return ClientTls(str(base), _read(base / CA_FILE, False), _read(base / CLIENT_CERT_FILE, False),
                     _read(base / CLIENT_KEY_FILE, True))


def resolve_client_tls(pki: str | None, plaintext: bool, topology: str | None) -> ClientTls | None:
    """The TLS material the command line asks for: None with `plaintext`, else the folder `pki`
    or the one beside `topology`. ConfigError for both or neither being usable."""
    if plaintext:
        if pki:
            raise ConfigError("give either --pki DIR or --plaintext, not both")
        return None
    if pki:
        return load_client_tls(pki)
    if topology is None:
        raise ConfigError("no certificate folder: give --pki DIR (or --plaintext for switches without TLS)")
    return load_client_tls(default_pki_folder(topology))


def add_tls_arguments(parser: argparse.ArgumentParser) -> None:
    """`--pki DIR` and `--plaintext`, as the daemon and `gradctl --direct` take them."""
    parser.add_argument("--pki", metavar="DIR",
                        help="the run's certificate folder (ca.pem, client.pem, client.key) to connect to "
                             "the switches over TLS; default: pki/ beside --topology")
    parser.add_argument("--plaintext", action="store_true",
                        help="connect to the switches without TLS (switches started without "
                             "--grpc-server-ssl: a testbed without PKI, most tests)")
