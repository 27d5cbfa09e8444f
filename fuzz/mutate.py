"""Byte and structure mutations shared by the fuzzers (seeded, so a run can be repeated)."""
from __future__ import annotations

import random

INTERESTING = [0, 1, 0x7F, 0x80, 0xFF]


def mutate_bytes(rng: random.Random, data: bytes, max_len: int = 1 << 16) -> bytes:
    """``data`` with a few random edits: flips, interesting bytes, cuts, inserts, duplication."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        if op == 0 and b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1 and b:
            b[rng.randrange(len(b))] = rng.choice(INTERESTING)
        elif op == 2 and b:
            del b[rng.randrange(len(b)):]
        elif op == 3:
            i = rng.randrange(len(b) + 1)
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif op == 4 and b:
            i = rng.randrange(len(b))
            b[i:i] = b[i:i + rng.randint(1, 64)] * rng.randint(1, 8)
        elif op == 5 and len(b) >= 2:
            i = rng.randrange(len(b) - 1)
            b[i:i + 2] = rng.choice([b"\x00\x00", b"\xff\xff", b"\x80\x00", b"\x7f\xff"])
        else:
            b = bytearray(rng.randbytes(rng.randint(0, 128)))
    return bytes(b[:max_len])
