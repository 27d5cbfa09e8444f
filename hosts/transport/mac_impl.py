"""Which code computes the --packet-mac trailer: OpenSSL through the native extension, or the
Python reference.

`hosts.transport.packet_mac` defines the trailer (and stays the reference); the native
`MacKey` (native/packet_mac.cpp) gives the same tags and the same accept/reject decisions
(tests/unit/hosts/test_native_packet_mac.py) in about a third of the CPU per datagram, so it is
the default wherever the extension was built with OpenSSL's headers. Where it was not, the
Python reference signs and verifies; nothing else changes.
"""
from __future__ import annotations

from typing import Protocol

from hosts.transport import packet_mac

IMPLS = ("native", "python")

try:
    from hosts.transport._native import MacKey as _NativeMacKey
except ImportError:   # the extension was not built, or built without OpenSSL
    _NativeMacKey = None


class Mac(Protocol):
    """Signs and verifies datagrams under one key."""

    def sign(self, datagram: bytes) -> bytes: ...

    def verify(self, data: bytes) -> bytes | None: ...


class PythonMac:
    """The reference (hosts/transport/packet_mac.py) behind the `Mac` interface."""

    __slots__ = ("key",)

    def __init__(self, key: bytes) -> None:
        self.key = key

    def sign(self, datagram: bytes) -> bytes:
        """`datagram` with its trailer."""
        return packet_mac.sign(self.key, datagram)

    def verify(self, data: bytes) -> bytes | None:
        """The datagram without its trailer, or None when the trailer is missing or wrong."""
        return packet_mac.verify(self.key, data)


def native_available() -> bool:
    """The native extension was built with the packet MAC (OpenSSL found at build time)."""
    return _NativeMacKey is not None


def is_native(mac: Mac | None) -> bool:
    """`mac` is the native `MacKey` (which the batch send queue can sign with)."""
    return _NativeMacKey is not None and isinstance(mac, _NativeMacKey)


def default_impl() -> str:
    """`native` where it was built, else `python`."""
    return "native" if native_available() else "python"


def make(key: bytes, impl: str | None = None) -> Mac:
    """The `Mac` of `key` computed by `impl` (None: the default). `native` where it was not
    built falls back to the Python reference."""
    if impl is not None and impl not in IMPLS:
        raise ValueError(f"MAC implementation {impl!r} is not one of {IMPLS}")
    if (impl or default_impl()) == "native" and _NativeMacKey is not None:
        return _NativeMacKey(key)
    return PythonMac(key)
