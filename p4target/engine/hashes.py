"""BMv2's hash / checksum algorithms over a byte string, returning an unsigned int."""
from __future__ import annotations

import binascii
import random as _random
import sys
from typing import Callable


_LITTLE = sys.byteorder == "little"


def _crc16_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC16 = _crc16_table()


def crc16(data: bytes) -> int:
    """CRC-16 with polynomial 0x8005, reflected, init 0, no final xor (BMv2 `crc16`)."""
    crc = 0
    for b in data:
        crc = (crc >> 8) ^ _CRC16[(crc ^ b) & 0xFF]
    return crc


def crc32(data: bytes) -> int:
    """IEEE CRC-32 as in zlib (BMv2 `crc32`)."""
    return binascii.crc32(data) & 0xFFFFFFFF


def csum16(data: bytes) -> int:
    """Internet checksum: one's complement of the one's-complement sum of 16-bit words."""
    if len(data) % 2:
        data += b"\x00"
    # the one's-complement sum is byte-order independent: sum native words, swap at the end
    total = sum(memoryview(data).cast("H"))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    if _LITTLE:
        total = ((total & 0xFF) << 8) | (total >> 8)
    return ~total & 0xFFFF


def xor16(data: bytes) -> int:
    """XOR of all 16-bit words (BMv2 `xor16`)."""
    if len(data) % 2:
        data += b"\x00"
    acc = 0
    for i in range(0, len(data), 2):
        acc ^= (data[i] << 8) | data[i + 1]
    return acc


def identity(data: bytes) -> int:
    """The first (at most) 8 input bytes as a big-endian integer (BMv2 `identity`)."""
    return int.from_bytes(data[:8], "big")


def random_hash(data: bytes) -> int:
    """A random value, ignoring the input (BMv2 `random`)."""
    return _random.getrandbits(64)


ALGORITHMS: dict[str, Callable[[bytes], int]] = {
    "crc16": crc16,
    "crc32": crc32,
    "csum16": csum16,
    "xor16": xor16,
    "identity": identity,
    "random": random_hash,
    "cksum16": csum16,
    # v1model's *_custom algorithms start from the standard parameters in BMv2
    "crc16_custom": crc16,
    "crc32_custom": crc32,
}


def pack_bits(values: list[tuple[int, int]]) -> bytes:
    """Concatenate (value, width) pairs MSB-first; pad with zero bits at the end to a byte."""
    acc = 0
    bits = 0
    for value, width in values:
        acc = (acc << width) | (value & ((1 << width) - 1))
        bits += width
    pad = (-bits) % 8
    acc <<= pad
    return acc.to_bytes((bits + pad) // 8, "big")
