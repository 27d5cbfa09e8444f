"""The P4Runtime server under load: a Write whose deadline passed while it waited is not applied,
a long wildcard Read lets Writes in, StreamChannels are bounded (idle ones evicted, the rest
refused). Admission and the batch status as functions: tests/unit/p4target/switch/p4runtime/."""
import queue
import threading
import time

import grpc
import pytest
from p4.v1 import p4runtime_pb2


TERN = "MyIngress.t_tern"
ENTRIES = 2000
Entity = p4runtime_pb2.Entity


@pytest.fixture
def program(program, p4info_builder):
    """conftest's program with room for more than 2000 entries in t_tern."""
    bmv2 = program[0]
    for table in bmv2["pipelines"][0]["tables"]:
        if table["name"] == TERN:
            table["max_size"] = 4096
    return bmv2, p4info_builder(bmv2, {"packet_in": "packet_in", "packet_out": "packet_out"})


def _tern(ids, d: int, priority: int):
    return ids.entry(TERN, [("hdr.h.d", "optional", d)], "MyIngress.setb", [1], priority=priority)


def _present(client, ids, d: int) -> bool:
    return any(e.table_entry.match[0].optional.value == d.to_bytes(max(1, (d.bit_length() + 7) // 8), "big")
               for e in client.read(Entity(table_entry=p4runtime_pb2.TableEntry(table_id=ids.table(TERN)))))


def _write_request(client, *updates):
    req = p4runtime_pb2.WriteRequest()
    client._stamp(req)
    req.updates.extend(updates)
    return req


def test_write_whose_deadline_passed_while_waiting_is_not_applied(loaded, ids, helpers):
    sw, c, _ = loaded
    control = sw.server.service._control  # held here as a long Read would hold it
    outcome: list = []
    req = _write_request(c, helpers.update("INSERT", "table_entry", _tern(ids, 77, 1)))

    def write():
        try:
            c.stub.Write(req, timeout=0.3)
            outcome.append("OK")
        except grpc.RpcError as exc:
            outcome.append(exc.code())

    with control:
        writer = threading.Thread(target=write)
        writer.start()
        writer.join(timeout=10)
    assert outcome == [grpc.StatusCode.DEADLINE_EXCEEDED]
    until = time.monotonic() + 1.0
    while time.monotonic() < until:  # the server-side handler now has the lock: it must give up
        assert not _present(c, ids, 77)
        time.sleep(0.05)


def test_write_during_a_long_wildcard_read_is_not_held_until_the_read_ends(loaded, ids, helpers):
    """The Read's wildcard selections are collected one after another; a Write sent while the
    first is being collected is applied before the last starts, so the last one sees it (a Read
    holding the lock throughout would return identical selections)."""
    sw, c, _ = loaded
    c.write(*[helpers.update("INSERT", "table_entry", _tern(ids, d, d)) for d in range(1, ENTRIES + 1)])
    # ~40k entities: collecting them takes well over the 0.2 s after which the Write is sent
    # (the server collects a Read's answer before it streams it)
    selections = 20
    req = p4runtime_pb2.ReadRequest(device_id=0)
    for _ in range(selections):
        req.entities.add().table_entry.table_id = ids.table(TERN)
    priorities: list[int] = []

    def read():
        priorities.extend(e.table_entry.priority for r in c.stub.Read(req) for e in r.entities)

    service = sw.server.service
    read_started = threading.Event()
    current = service._current

    def current_then_signal():      # the Read has taken its pipeline: it is under way
        try:
            return current()
        finally:
            read_started.set()

    service._current = current_then_signal
    reader = threading.Thread(target=read)
    reader.start()
    assert read_started.wait(30)
    service._current = current
    c.write(helpers.update("INSERT", "table_entry", _tern(ids, ENTRIES + 1, ENTRIES + 1)))
    reader.join(timeout=120)
    assert len(priorities) > selections * ENTRIES
    assert ENTRIES + 1 in priorities[-(ENTRIES + 1):]  # the last selection has the new entry
    assert _present(c, ids, ENTRIES + 1)


def test_read_answers_every_entity_of_a_large_table_in_order(loaded, ids, helpers):
    _, c, _ = loaded
    c.write(*[helpers.update("INSERT", "table_entry", _tern(ids, d, d)) for d in range(1, 251)])
    got = [e.table_entry.priority for e in c.read(Entity(table_entry=p4runtime_pb2.TableEntry(table_id=ids.table(TERN))))]
    assert sorted(got) == list(range(1, 251)) and len(got) == 250


def test_streams_beyond_the_bound_are_refused_and_idle_ones_make_room(switch):
    service = switch.server.service
    limit = service.admission.limit
    assert limit < 32  # below the worker pool: unary calls always have workers
    idle = [switch.client(election_id=None) for _ in range(limit)]
    deadline = time.monotonic() + 5
    while service.open_streams < limit and time.monotonic() < deadline:
        time.sleep(0.02)
    assert service.open_streams == limit
    extra = switch.client(election_id=None)  # all idle ones are younger than the grace period
    assert extra.get("end", timeout=5).code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    time.sleep(service.admission.grace)
    switch.client()  # opens and arbitrates with an election id: evicts one idle stream
    ended = []
    deadline = time.monotonic() + 5
    while not ended and time.monotonic() < deadline:
        for c in idle:
            try:
                ended.append(c.inbox["end"].get(timeout=0.01))
            except queue.Empty:
                pass
    assert [e.code() for e in ended] == [grpc.StatusCode.RESOURCE_EXHAUSTED]
    assert service.open_streams == limit
    assert switch.server.service.arbitration.primaries() != []


