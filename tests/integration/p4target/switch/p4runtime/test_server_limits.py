"""The P4Runtime server under load: a Write whose deadline passed while it waited is not applied,
a long wildcard Read lets Writes in, StreamChannels are bounded (idle ones evicted, the rest
refused), and a batch's per-update errors always fit in the trailing metadata."""
import queue
import threading
import time

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from p4target.switch.p4runtime.admission import Standing, StreamAdmission
from p4target.switch.p4runtime.errors import P4RuntimeError, batch_status, fit_batch_status

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


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _admission(members: dict, clock: _Clock, limit: int = 3, per_peer: int = 4) -> StreamAdmission:
    return StreamAdmission(lambda s: members.get(s, Standing(False)), limit=limit, grace=1.0, clock=clock,
                           per_peer=per_peer)


def test_admission_evicts_unarbitrated_then_election_less_then_backups_never_the_controller():
    members: dict[str, Standing] = {}
    clock = _Clock()
    adm = _admission(members, clock)
    members.update(a=Standing(True, 5, primary=True), b=Standing(True, None))
    for s in "abc":  # c has not arbitrated
        assert adm.admit(s) is None
    assert adm.admit("d") == "b"  # c is within its grace period; b has no election id
    clock.now = 1.5
    assert adm.admit("e") == "c"  # past its grace period without arbitrating
    members.update(d=Standing(True, 4), e=Standing(True, 3))
    assert adm.admit("f") == "d"  # the oldest backup goes; the primary a stays
    members.update(f=Standing(True, 2))
    assert adm.admit("g") == "e"
    assert adm.streams() == ["a", "f", "g"]
    adm.release("f")
    adm.release("f")
    assert adm.admit("h") is None and len(adm) == 3


def test_admission_refuses_only_when_the_controller_and_young_streams_fill_it():
    members = {"a": Standing(True, 9, primary=True)}
    clock = _Clock()
    adm = _admission(members, clock, limit=2)
    assert adm.admit("a") is None and adm.admit("b") is None  # b: within its grace period
    with pytest.raises(P4RuntimeError) as exc:
        adm.admit("c")
    assert exc.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_admission_takes_backups_from_the_peer_holding_most_then_named_role_primaries():
    members: dict[str, Standing] = {"ctl": Standing(True, 100, primary=True)}
    clock = _Clock()
    adm = _admission(members, clock, limit=4, per_peer=8)
    adm.admit("ctl", "controller")
    adm.admit("x", "other")
    adm.admit("h1", "hostile")
    adm.admit("h2", "hostile")
    members.update(x=Standing(True, 1), h1=Standing(True, 2, primary=True, role="r1"), h2=Standing(True, 3))
    assert adm.admit("new", "controller") == "h2"  # a backup of the peer with the most streams
    members.update(new=Standing(True, 50, primary=True, role="r2"))
    assert adm.admit("n2", "other") == "x"
    members.update(n2=Standing(True, 51, primary=True, role="r3"))
    # no backups left: a named role's primary of the peer holding most streams, never ctl
    assert adm.admit("n3", "other") == "new"
    members.update(n3=Standing(True, 52, primary=True, role="r4"))
    assert adm.admit("n4", "controller") == "n2"  # now "other" holds the most (n2, n3)


def test_admission_caps_backups_per_peer():
    members: dict[str, Standing] = {}
    clock = _Clock()
    adm = _admission(members, clock, limit=16, per_peer=2)
    for s in ("a", "b"):
        adm.admit(s, "p")
        members[s] = Standing(True, ord(s))
    assert adm.admit("c", "q") is None  # another peer is not affected
    assert adm.admit("d", "p") == "a"  # p's third stream replaces its oldest backup
    members["d"] = Standing(True, 99, primary=True)
    assert adm.admit("e", "p") is None  # p holds one backup (b) and the primary


def _errors(n: int, message: str) -> status_pb2.Status:
    return batch_status([P4RuntimeError(grpc.StatusCode.NOT_FOUND, message) if i % 2 else None
                         for i in range(n)])


def _codes(status: status_pb2.Status) -> list[tuple[int, str]]:
    out = []
    for detail in status.details:
        err = p4runtime_pb2.Error()
        assert detail.Unpack(err)
        out.append((err.canonical_code, err.message))
    return out


def test_batch_status_that_fits_is_unchanged():
    status = _errors(10, "no such entry")
    assert fit_batch_status(status, 1 << 20) == status


def test_batch_status_too_large_keeps_every_code_and_the_first_messages():
    status = _errors(20000, "entry not found in table MyIngress.t_tern: " + "x" * 60)
    fitted = fit_batch_status(status, 1 << 20)
    assert fitted.ByteSize() <= 1 << 20 < status.ByteSize()
    got = _codes(fitted)
    assert [code for code, _ in got] == [code for code, _ in _codes(status)]
    failed_messages = [m for code, m in got if code != code_pb2.OK]
    assert all(failed_messages[:100]) and not any(failed_messages[100:])


def test_batch_status_whose_codes_cannot_fit_says_so():
    fitted = fit_batch_status(_errors(20000, "gone"), 4096)
    assert not fitted.details and "do not fit" in fitted.message and fitted.ByteSize() <= 4096
