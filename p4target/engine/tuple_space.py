"""Ternary/range/optional table lookup by tuple space search, with BMv2's winner.

Entries are grouped by their key masks (range fields count as mask 0); each group is a hash map
from the masked key to its entries in (priority, handle) order, so a lookup costs one hash probe
per distinct mask combination, not one test per entry. Groups are visited best-priority first
and the search stops as soon as no later group can beat the entry found: the winner is the
matching entry with the lowest priority value, the one added first among equals (BMv2).
Range fields are checked inside the bucket the hash probe selects.
"""
from __future__ import annotations

import bisect
import heapq
from operator import and_
from typing import Any


class _Group:
    __slots__ = ("masks", "index", "heap", "removed", "size")

    def __init__(self, masks: tuple) -> None:
        self.masks = masks
        self.index: dict[tuple, list[Any]] = {}  # masked key -> entries by (priority, handle)
        self.heap: list[tuple[int, int]] = []  # (priority, handle); removed ones popped lazily
        self.removed: set[int] = set()
        self.size = 0


def _rank(entry: Any) -> tuple[int, int]:
    return entry.priority, entry.handle


class TupleSpace:
    """The entries of one ternary-kind table, indexed by mask combination."""

    def __init__(self, range_positions: list[int]) -> None:
        self._ranges = list(range_positions)
        self._groups: dict[tuple, _Group] = {}
        self._plan: list[tuple[tuple[int, int], tuple, dict]] = []
        self._dirty = False

    def add(self, entry: Any) -> None:
        """Index an entry (its `_m` is ((mask, masked value, low, high), ...) per key field)."""
        masks = tuple(mk for mk, _, _, _ in entry._m)
        group = self._groups.get(masks)
        if group is None:
            group = self._groups[masks] = _Group(masks)
        bucket = group.index.setdefault(tuple(v for _, v, _, _ in entry._m), [])
        bisect.insort(bucket, entry, key=_rank)
        heapq.heappush(group.heap, _rank(entry))
        group.size += 1
        self._dirty = True

    def remove(self, entry: Any) -> None:
        """Forget an indexed entry."""
        masks = tuple(mk for mk, _, _, _ in entry._m)
        group = self._groups[masks]
        key = tuple(v for _, v, _, _ in entry._m)
        bucket = group.index[key]
        bucket.remove(entry)
        if not bucket:
            del group.index[key]
        group.size -= 1
        if group.size == 0:
            del self._groups[masks]
        else:
            group.removed.add(entry.handle)
        self._dirty = True

    def clear(self) -> None:
        self._groups.clear()
        self._plan = []
        self._dirty = False

    def _refresh(self) -> None:
        for group in self._groups.values():
            heap, removed = group.heap, group.removed
            while heap[0][1] in removed:
                removed.discard(heapq.heappop(heap)[1])
        groups = sorted(self._groups.values(), key=lambda g: g.heap[0])
        self._plan = [(g.heap[0], g.masks, g.index) for g in groups]
        self._dirty = False

    def lookup(self, values: tuple) -> Any:
        """The winning entry for the key field values, or None."""
        if self._dirty:
            self._refresh()
        best = None
        best_rank = None
        ranges = self._ranges
        for group_best, masks, index in self._plan:
            if best_rank is not None and group_best >= best_rank:
                break  # groups come best-first: none further can win
            bucket = index.get(tuple(map(and_, values, masks)))
            if bucket is None:
                continue
            for entry in bucket:
                if ranges:
                    m = entry._m
                    if not all(m[i][2] <= values[i] <= m[i][3] for i in ranges):
                        continue
                rank = (entry.priority, entry.handle)
                if best_rank is None or rank < best_rank:
                    best, best_rank = entry, rank
                break
        return best
