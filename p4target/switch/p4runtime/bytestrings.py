"""P4Runtime binary strings: big-endian unsigned values, canonical (shortest) on output."""
from __future__ import annotations

from .errors import invalid


def decode(data: bytes, bitwidth: int, what: str) -> int:
    """The unsigned value of `data`, checked to fit in `bitwidth` bits (INVALID_ARGUMENT if not).

    Leading zero bytes are accepted (non-canonical input) up to the field's byte width; an
    empty or longer string is not."""
    if not data:
        raise invalid(f"{what}: empty bytestring")
    if len(data) > (bitwidth + 7) // 8:
        raise invalid(f"{what}: {len(data)}-byte string is longer than a {bitwidth}-bit field")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise invalid(f"{what}: value 0x{data.hex()} does not fit in {bitwidth} bits")
    return value


def encode(value: int) -> bytes:
    """Canonical bytestring of an unsigned value (no leading zero bytes; 0 is one zero byte)."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def pack_fields(values: list[tuple[int, int]]) -> bytes:
    """Concatenate (value, bitwidth) fields MSB-first into bytes, zero-padding the last byte."""
    acc, bits = 0, 0
    for value, width in values:
        acc = (acc << width) | (value & ((1 << width) - 1))
        bits += width
    pad = -bits % 8
    return (acc << pad).to_bytes((bits + pad) // 8, "big")


def unpack_fields(data: bytes, widths: list[int]) -> tuple[list[int], bytes]:
    """Split the leading bit-packed fields off `data`: (field values, remaining bytes).

    Raises ValueError when `data` is shorter than the fields."""
    bits = sum(widths)
    nbytes = (bits + 7) // 8
    if len(data) < nbytes:
        raise ValueError(f"frame of {len(data)} bytes is shorter than the {nbytes}-byte controller header")
    acc = int.from_bytes(data[:nbytes], "big") >> (nbytes * 8 - bits)
    out = []
    for width in reversed(widths):
        out.append(acc & ((1 << width) - 1))
        acc >>= width
    return out[::-1], data[nbytes:]
