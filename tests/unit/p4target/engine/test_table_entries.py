"""Table entry bookkeeping: duplicates rejected for every match kind, order kept across
inserts and deletes without re-sorting."""
from __future__ import annotations

import pytest

from p4target.engine import DuplicateEntryError, Engine, Lpm
from p4target.engine.sample_programs import l3_router


def _engine() -> Engine:
    j = l3_router()
    for pipe in j["pipelines"]:
        for t in pipe["tables"]:
            t["max_size"] = 10000
    return Engine(j)


def test_duplicate_lpm_entries_are_rejected_and_deletes_free_the_key() -> None:
    e = _engine()
    h = e.table_add("MyIngress.ipv4_lpm", [Lpm(0x0A000000, 8)], "MyIngress.drop")
    with pytest.raises(DuplicateEntryError):
        e.table_add("MyIngress.ipv4_lpm", [Lpm(0x0A000000, 8)], "MyIngress.drop")
    e.table_delete("MyIngress.ipv4_lpm", h)
    e.table_add("MyIngress.ipv4_lpm", [Lpm(0x0A000000, 8)], "MyIngress.drop")


def test_longest_prefix_wins_whatever_the_insertion_order() -> None:
    e = _engine()
    for plen, port in ((8, 1), (24, 3), (16, 2)):
        e.table_add("MyIngress.ipv4_lpm", [Lpm(0x0A010200 & (0xFFFFFFFF << (32 - plen)), plen)],
                    "MyIngress.ipv4_forward", [0x0A, port])
    for i in range(2000):  # many same-length entries inserted afterwards
        e.table_add("MyIngress.ipv4_lpm", [Lpm(0x0B000000 + (i << 8), 24)], "MyIngress.drop")
    frame = bytes(12) + b"\x08\x00" + bytes.fromhex("4500001c0000000040110000" "0a000001" "0a010203")
    (port, _), = e.process(0, frame)
    assert port == 3
    e.table_delete("MyIngress.ipv4_lpm", 1)  # the /24
    (port, _), = e.process(0, frame)
    assert port == 2
