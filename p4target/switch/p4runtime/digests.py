"""Digest delivery: learn-list values from the data path -> DigestList messages.

A digest id streams only after the controller configured it with a DigestEntry. Digests are
batched per id up to `max_list_size` (0: no limit) or `max_timeout_ns`; while a list is not
acknowledged (and `ack_timeout_ns` has not passed) identical digest data is suppressed.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Iterator

from p4.v1 import p4data_pb2, p4runtime_pb2

from . import bytestrings
from .errors import Code, P4RuntimeError, invalid, not_found
from .translate import DigestInfo, Translator

Update = p4runtime_pb2.Update
SendCallback = Callable[[p4runtime_pb2.StreamMessageResponse], None]


class DigestConfigs:
    """The DigestEntry configurations (digest id -> Config) of one pipeline."""

    def __init__(self, translator: Translator | None = None,
                 configs: dict[int, p4runtime_pb2.DigestEntry.Config] | None = None) -> None:
        self.translator = translator
        self.configs: dict[int, p4runtime_pb2.DigestEntry.Config] = dict(configs or {})

    def copy(self) -> "DigestConfigs":
        """An independent copy (for trial runs of a write batch)."""
        return DigestConfigs(self.translator, self.configs)

    def write(self, op: int, entry: p4runtime_pb2.DigestEntry) -> None:
        tr = self.translator
        if tr is None or entry.digest_id not in tr.digests:
            raise not_found(f"unknown digest id {entry.digest_id}")
        exists = entry.digest_id in self.configs
        if op == Update.INSERT:
            if exists:
                raise P4RuntimeError(Code.ALREADY_EXISTS, f"digest {entry.digest_id} is already configured")
        elif op in (Update.MODIFY, Update.DELETE):
            if not exists:
                raise not_found(f"digest {entry.digest_id} is not configured")
        else:
            raise invalid("update type must be INSERT, MODIFY or DELETE")
        if op == Update.DELETE:
            del self.configs[entry.digest_id]
        else:
            self.configs[entry.digest_id] = p4runtime_pb2.DigestEntry.Config.FromString(
                entry.config.SerializeToString())

    def read(self, entry: p4runtime_pb2.DigestEntry) -> list[p4runtime_pb2.Entity]:
        tr = self.translator
        if entry.digest_id and (tr is None or entry.digest_id not in tr.digests):
            raise not_found(f"unknown digest id {entry.digest_id}")
        ids = [entry.digest_id] if entry.digest_id else sorted(self.configs)
        return [p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry(digest_id=i, config=self.configs[i]))
                for i in ids if i in self.configs]


class DigestDispatcher:
    """Batches the pipeline's digests into DigestLists and hands them to `send`."""

    def __init__(self, send: SendCallback) -> None:
        self._send = send
        self._lock = threading.Lock()
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._translator: Translator | None = None
        self.configs = DigestConfigs()
        self._configs = self.configs.configs
        self._pending: dict[int, list[tuple]] = {}
        self._deadline: dict[int, float] = {}
        self._next_list_id: dict[int, int] = {}
        self._unacked: dict[tuple[int, int], tuple[list[tuple], float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="p4rt-digests", daemon=True)
        self._thread.start()

    def reset(self, translator: Translator | None) -> None:
        """A new pipeline: forget every digest configuration and outstanding list."""
        with self._lock:
            self._translator = translator
            self.configs = DigestConfigs(translator)
            self._configs = self.configs.configs
            self._pending.clear()
            self._deadline.clear()
            self._next_list_id.clear()
            self._unacked.clear()

    # -- DigestEntry entities ------------------------------------------------------------
    def write(self, op: int, entry: p4runtime_pb2.DigestEntry) -> None:
        with self._lock:
            self.configs.write(op, entry)
            if op == Update.DELETE:
                self._pending.pop(entry.digest_id, None)
                self._deadline.pop(entry.digest_id, None)

    def read(self, entry: p4runtime_pb2.DigestEntry) -> Iterator[p4runtime_pb2.Entity]:
        with self._lock:
            found = self.configs.read(entry)
        yield from found

    # -- data path and acks --------------------------------------------------------------
    def on_digest(self, learn_list: str, list_id: int, values: tuple) -> None:
        """Data-path callback (engine lock held): only queue the digest."""
        self._inbox.put((learn_list, tuple(values)))

    def ack(self, ack: p4runtime_pb2.DigestListAck) -> None:
        with self._lock:
            self._unacked.pop((ack.digest_id, ack.list_id), None)

    def stop(self) -> None:
        self._stop.set()
        self._inbox.put(None)
        self._thread.join(timeout=2)

    # -- batching ------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                now = time.monotonic()
                wait = min([d - now for d in self._deadline.values()], default=None)
            try:  # idle: block until a digest (or stop) arrives
                item = self._inbox.get(timeout=None if wait is None else max(0.0, wait))
            except queue.Empty:
                item = None
            if self._stop.is_set():
                return
            lists = []
            with self._lock:
                while item is not None:
                    self._add(*item)
                    try:
                        item = self._inbox.get_nowait()
                    except queue.Empty:
                        item = None
                lists = self._due(time.monotonic())
            for msg in lists:
                try:
                    self._send(msg)
                except Exception:  # a vanished client must not stop digest delivery
                    pass

    def _add(self, learn_list: str, values: tuple) -> None:
        tr = self._translator
        info = tr.digest_by_learn_list(learn_list) if tr is not None else None
        if info is None or info.id not in self._configs:
            return
        now = time.monotonic()
        self._expire(now)
        if any(values in vals for (did, _), (vals, _) in self._unacked.items() if did == info.id):
            return
        pending = self._pending.setdefault(info.id, [])
        if values in pending:
            return
        pending.append(values)
        if info.id not in self._deadline:
            self._deadline[info.id] = now + self._configs[info.id].max_timeout_ns / 1e9

    def _expire(self, now: float) -> None:
        for key in [k for k, (_, exp) in self._unacked.items() if exp <= now]:
            del self._unacked[key]

    def _due(self, now: float) -> list[p4runtime_pb2.StreamMessageResponse]:
        out = []
        for did in list(self._pending):
            cfg = self._configs[did]
            pending = self._pending[did]
            size = cfg.max_list_size
            while pending and (self._deadline.get(did, now) <= now or (size and len(pending) >= size)):
                batch = pending[:size] if size else list(pending)
                del pending[:len(batch)]
                out.append(self._make_list(did, batch, cfg, now))
            if not pending:
                del self._pending[did]
                self._deadline.pop(did, None)
        return out

    def _make_list(self, did: int, batch: list[tuple], cfg, now: float) -> p4runtime_pb2.StreamMessageResponse:
        list_id = self._next_list_id.get(did, 0) + 1
        self._next_list_id[did] = list_id
        if cfg.ack_timeout_ns:
            self._unacked[(did, list_id)] = (batch, now + cfg.ack_timeout_ns / 1e9)
        info = self._translator.digests[did]
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.digest.digest_id, msg.digest.list_id, msg.digest.timestamp = did, list_id, time.time_ns()
        for values in batch:
            msg.digest.data.append(encode_digest(info, values))
        return msg


def encode_digest(info: DigestInfo, values: tuple) -> p4data_pb2.P4Data:
    """P4Data of one digest: a struct of bitstrings (or one bitstring for a bit<W> digest)."""
    if not info.is_struct and len(values) == 1:
        return p4data_pb2.P4Data(bitstring=bytestrings.encode(values[0]))
    data = p4data_pb2.P4Data()
    for v in values:
        data.struct.members.add(bitstring=bytestrings.encode(v))
    return data
