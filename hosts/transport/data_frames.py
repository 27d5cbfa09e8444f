"""The DATA datagrams of one round's sender: a gradient header and a chunk's big-endian float32.

`PyFrames` is the reference: each chunk's payload bytes made once when the session opens and a
header packed per datagram. The native frames (`native/send_frames.cpp`, `_native.DataFrames`)
copy the gradient once, byte-swapped, and build each datagram in native code, either as bytes
(`frame`, for a sans-IO port) or straight into a batch endpoint's send queue
(`Endpoint.send_data`), with no Python object per datagram. Both give the same bytes
(tests/unit/hosts/test_native_send.py). `round_frames` picks one by transport core
(hosts/transport/core.py: `--core native|python`), and with it where the chunks' magnitude
classes come from (ChunkPlan.classes: the same either way).
"""
from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from hosts import wire
from hosts.transport.chunking import Chunk, ChunkPlan

try:
    from hosts.transport import _native
except ImportError:   # not built: the reference only (hosts/transport/core.py says so)
    _native = None


class Frames(Protocol):
    """What a sender asks of its frames."""

    def frame(self, idx: int, flags: int) -> bytes: ...

    def size(self, idx: int) -> int: ...


class PyFrames:
    """The reference frames of `chunks` (ChunkPlan.split's list) for one round."""

    def __init__(self, chunks: Sequence[Chunk], job_id: int, rank: int, round_: int,
                 policy_epoch: int = 0) -> None:
        self._chunks = chunks
        self._payloads = [c.values.astype(">f4").tobytes() for c in chunks]
        self._job, self._rank, self._round, self._epoch = job_id, rank, round_, policy_epoch

    def frame(self, idx: int, flags: int) -> bytes:
        """The DATA datagram of chunk `idx` with header flags `flags` (no MAC trailer)."""
        c = self._chunks[idx]
        payload = self._payloads[idx]
        return wire.pack_header(wire.KIND_DATA, flags, self._job, self._rank, c.layer, self._round,
                                c.mag_class, len(payload), c.seq, c.offset,
                                policy_epoch=self._epoch) + payload

    def size(self, idx: int) -> int:
        """The length of chunk `idx`'s datagram in bytes."""
        return wire.HEADER_LEN + len(self._payloads[idx])

    def __len__(self) -> int:
        return len(self._chunks)


def native_frames(plan: ChunkPlan, layers: list[np.ndarray], mag_classes: bytes, job_id: int,
                  rank: int, round_: int, policy_epoch: int = 0) -> Frames:
    """The native frames of `layers` cut by `plan`, chunk i of class `mag_classes[i]`."""
    return _native.DataFrames(plan.flats(layers), plan.layer_chunk_elems, mag_classes, job_id, rank,
                              round_, policy_epoch)


def round_frames(plan: ChunkPlan, layers: list[np.ndarray], job_id: int, rank: int, round_: int,
                 policy_epoch: int = 0, native: bool = False) -> tuple[Frames, bytes]:
    """The frames of one round and every chunk's magnitude class (one byte per chunk, in
    ChunkPlan.split's order): both native when `native` and the extension was built (no Chunk
    object made), else the reference (ChunkPlan.split, PyFrames)."""
    if native and _native is not None:
        flats = plan.flats(layers)
        classes = _native.mag_classes(flats, plan.layer_chunk_elems)
        return (_native.DataFrames(flats, plan.layer_chunk_elems, classes, job_id, rank, round_,
                                   policy_epoch), classes)
    chunks = plan.split(layers)
    return PyFrames(chunks, job_id, rank, round_, policy_epoch), bytes(c.mag_class for c in chunks)


def is_native(frames: Frames) -> bool:
    """`frames` are the extension's (a batch endpoint can queue them without bytes)."""
    return _native is not None and isinstance(frames, _native.DataFrames)
