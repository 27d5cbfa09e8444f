"""Table lookups by hash (LPM per prefix length, ternary by tuple space) pick BMv2's winner."""
from __future__ import annotations

import random

import pytest

from p4target.engine.match import Lpm, Optional, Range, Ternary
from p4target.engine.tables import ActionSpec, KeyField, Table

ACTIONS = {"a": ActionSpec("a", 1, [("x", 16)])}


def _reference(entries: list, values: tuple, ranges: set[int]):
    """BMv2's rule by brute force: lowest priority value among matches, first added on ties."""
    best = None
    for e in entries:
        ok = all(lo <= values[i] <= hi if i in ranges else values[i] & mask == val
                 for i, (mask, val, lo, hi) in enumerate(e._m))
        if ok and (best is None or (e.priority, e.handle) < (best.priority, best.handle)):
            best = e
    return best


@pytest.mark.slow
def test_ternary_range_optional_lookup_agrees_with_brute_force_through_adds_and_deletes():
    rng = random.Random(11)
    keys = [KeyField("ternary", "a", 8), KeyField("range", "b", 8), KeyField("optional", "c", 4)]
    t = Table("t", keys, ACTIONS, 0)
    handles = []
    for i in range(400):
        mask = rng.choice((0xFF, 0xF0, 0x0F, 0x00))
        lo = rng.randrange(256)
        key = [Ternary(rng.randrange(256) & mask, mask), Range(lo, min(255, lo + rng.randrange(64))),
               Optional(rng.randrange(16)) if rng.random() < 0.5 else Optional(0, True)]
        try:
            handles.append(t.add(key, "a", [i], priority=rng.randrange(40)))  # many equal priorities
        except Exception:
            continue  # a duplicate key and priority: BMv2 refuses it too
    for h in rng.sample(handles, len(handles) // 3):
        t.delete(h)
    live = list(t.entries.values())
    for _ in range(3000):
        values = (rng.randrange(256), rng.randrange(256), rng.randrange(16))
        assert t.lookup(values) is _reference(live, values, {1})


def test_ternary_lookup_prefers_lower_priority_value_then_first_added():
    t = Table("t", [KeyField("ternary", "a", 16)], ACTIONS, 0)
    wide = t.add([Ternary(0, 0)], "a", [1], priority=5)
    narrow_late = t.add([Ternary(0x1234, 0xFFFF)], "a", [2], priority=5)
    assert t.lookup((0x1234,)).handle == wide  # same priority: the one added first
    better = t.add([Ternary(0x1200, 0xFF00)], "a", [3], priority=1)
    assert t.lookup((0x1234,)).handle == better
    t.delete(better)
    assert t.lookup((0x1234,)).handle == wide
    t.delete(wide)
    assert t.lookup((0x1234,)).handle == narrow_late
    assert t.lookup((0x9999,)) is None


def test_cleared_tables_miss():
    lpm = Table("l", [KeyField("lpm", "a", 32)], ACTIONS, 0)
    lpm.add([Lpm(0x0A000000, 8)], "a", [1])
    tern = Table("t", [KeyField("ternary", "a", 32)], ACTIONS, 0)
    tern.add([Ternary(0, 0)], "a", [1], priority=1)
    assert lpm.lookup((0x0A010203,)) is not None and tern.lookup((5,)) is not None
    lpm.clear()
    tern.clear()
    assert lpm.lookup((0x0A010203,)) is None  # the per-length maps were left behind before
    assert tern.lookup((5,)) is None
    lpm.add([Lpm(0x0B000000, 8)], "a", [2])
    assert lpm.lookup((0x0B000001,)).action_data == (2,)
    assert lpm.lookup((0x0A010203,)) is None
