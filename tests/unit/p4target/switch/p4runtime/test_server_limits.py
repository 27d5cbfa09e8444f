"""The P4Runtime server's limits as functions: which StreamChannel admission evicts or refuses,
and a batch's per-update errors always fit in the trailing metadata (the server under load:
tests/integration/p4target/switch/p4runtime/test_server_limits.py)."""
import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from p4target.switch.p4runtime.admission import Standing, StreamAdmission
from p4target.switch.p4runtime.errors import P4RuntimeError, batch_status, fit_batch_status


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


def test_batch_status_that_fits_is_unchanged():
    status = _errors(10, "no such entry")
    assert fit_batch_status(status, 1 << 20) == status


@pytest.mark.slow
def test_batch_status_too_large_keeps_every_code_and_the_first_messages():
    status = _errors(20000, "entry not found in table MyIngress.t_tern: " + "x" * 60)
    fitted = fit_batch_status(status, 1 << 20)
    assert fitted.ByteSize() <= 1 << 20 < status.ByteSize()
    got = _codes(fitted)
    assert [code for code, _ in got] == [code for code, _ in _codes(status)]
    failed_messages = [m for code, m in got if code != code_pb2.OK]
    assert all(failed_messages[:100]) and not any(failed_messages[100:])


@pytest.mark.slow
def test_batch_status_whose_codes_cannot_fit_says_so():
    fitted = fit_batch_status(_errors(20000, "gone"), 4096)
    assert not fitted.details and "do not fit" in fitted.message and fitted.ByteSize() <= 4096


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _admission(members: dict, clock: _Clock, limit: int = 3, per_peer: int = 4) -> StreamAdmission:
    return StreamAdmission(lambda s: members.get(s, Standing(False)), limit=limit, grace=1.0, clock=clock,
                           per_peer=per_peer)


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
