"""The native packet MAC (native/packet_mac.cpp) against the reference
(hosts/transport/packet_mac.py): the same tags and the same accept/reject decisions for random
keys and datagrams, tampered ones (telemetry bytes excepted) and short ones."""
from __future__ import annotations

import random

import pytest

from hosts import wire
from hosts.transport import mac_impl, packet_mac
from hosts.transport.port import Port

pytestmark = pytest.mark.skipif(not mac_impl.native_available(),
                                reason="the native extension was built without OpenSSL")

TAG = packet_mac.TAG_BYTES


def _keys(rng: random.Random) -> list[bytes]:
    """Derived keys as the agents use them, and raw ones of every HMAC key-length case."""
    out = [packet_mac.packet_key(rng.randbytes(32)) for _ in range(8)]
    out += [rng.randbytes(n) for n in (0, 1, 16, 31, 32, 33, 63, 64, 65, 100, 200)]
    return out


def _datagrams(rng: random.Random) -> list[bytes]:
    lengths = [0, 1, 23, 24, 25, 31, 32, 33, 47, 48, 49, 64, 65, 119, 120, 1460, 1476, 1500, 9000]
    return [rng.randbytes(n) for n in lengths] + [rng.randbytes(rng.randrange(0, 2000))
                                                  for _ in range(40)]


def test_native_and_python_give_the_same_tags():
    rng = random.Random(35)
    for key in _keys(rng):
        native = mac_impl.make(key, "native")
        assert not isinstance(native, mac_impl.PythonMac)
        for d in _datagrams(rng):
            assert native.sign(d) == packet_mac.sign(key, d)
            assert native.sign(bytearray(d)) == packet_mac.sign(key, d)   # any bytes-like


def test_native_and_python_accept_and_reject_alike():
    rng = random.Random(36)
    for key in _keys(rng):
        native = mac_impl.make(key, "native")
        other = mac_impl.make(rng.randbytes(32), "native")
        for d in _datagrams(rng):
            signed = packet_mac.sign(key, d)
            cases = [signed, signed[:-1], signed[1:], d, b"", signed[:wire.HEADER_LEN + TAG - 1],
                     other.sign(d)]
            for _ in range(6):                  # one flipped bit anywhere, trailer included
                t = bytearray(signed)
                i = rng.randrange(len(t))
                t[i] ^= 1 << rng.randrange(8)
                cases.append(bytes(t))
            if len(d) >= 32:                    # telemetry rewritten: still valid
                t = bytearray(signed)
                t[24:32] = rng.randbytes(8)
                cases.append(bytes(t))
            for c in cases:
                want = packet_mac.verify(key, c)
                assert native.verify(c) == want
                assert native.verify(memoryview(c)) == want


def test_a_port_signs_natively_and_verifies_python_signatures():
    key = packet_mac.packet_key(b"j" * 32)
    port = Port(3, 0, lambda: 0.0, mac_key=key, mac_mode="control")
    assert not isinstance(port.mac, mac_impl.PythonMac)
    stop = wire.pack_header(wire.KIND_STOP, 0, 3, 0, wire.ALL_LAYERS, 4)
    port.send(stop, ("127.0.0.1", 9), 0)
    assert port.take()[0].data == packet_mac.sign(key, stop)
    got = port.parse(packet_mac.sign(key, stop), ("127.0.0.1", 9))
    assert got is not None and got.header.round == 4
    assert port.parse(stop + b"\0" * TAG, ("127.0.0.1", 9)) is None
    assert port.counters["drop_bad_mac"] == 1


def test_an_unknown_implementation_is_refused():
    with pytest.raises(ValueError, match="not one of"):
        mac_impl.make(b"k", "rust")
