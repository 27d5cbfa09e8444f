"""Another local user cannot drive a running switch through its side doors: the embedded switch's
Thrift server closes connections from other users (uid 65534 here, in a forked child) before
any call, and backup P4Runtime streams, however many, never lock a restarted controller out."""
from __future__ import annotations

import encodings.idna  # noqa: F401 - the uid 65534 child cannot import it (root's Python is 0700)
import json
import os
import queue
import threading

import grpc
import pytest
from bm_runtime.standard import Standard
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.transport import TSocket, TTransport

from controller.client import SwitchConnection
from p4target.engine.sample_programs import l3_router
from support.switch_process import SwitchProcess

NOBODY = 65534
HOSTILE_STREAMS = 15


def _thrift_client(port: int) -> tuple[TTransport.TTransportBase, Standard.Client]:
    sock = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", port))
    sock.open()
    proto = TMultiplexedProtocol.TMultiplexedProtocol(TBinaryProtocol.TBinaryProtocol(sock), "standard")
    return sock, Standard.Client(proto)


def _load_as(uid: int, port: int, config: str) -> int:
    """In a forked child running as `uid`: load and swap `config` over Thrift. Exit status 0:
    both calls went through; 3: the server closed the connection; 4: another failure."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 4
        try:
            os.setgid(uid)
            os.setuid(uid)
            sock, std = _thrift_client(port)
            std.bm_load_new_config(config)
            std.bm_swap_configs()
            sock.close()
            code = 0
        except TTransport.TTransportException:
            code = 3
        except BaseException as exc:
            os.write(2, f"{type(exc).__name__}: {exc}\n".encode())
            code = 4
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WEXITSTATUS(status)


@pytest.fixture
def switch():
    sw = SwitchProcess(["--no-p4", "--thrift-port", "0", "-L", "info"])
    try:
        yield sw.wait_ready()
    finally:
        sw.stop()


def test_another_user_cannot_load_a_pipeline_over_thrift(switch):
    config = json.dumps(l3_router())
    assert _load_as(NOBODY, switch.thrift_port(), config) == 3
    sock, std = _thrift_client(switch.thrift_port())
    try:
        assert std.bm_get_config() == ""  # still no pipeline
    finally:
        sock.close()
    assert _load_as(os.geteuid(), switch.thrift_port(), config) == 0  # the switch's own user may
    sock, std = _thrift_client(switch.thrift_port())
    try:
        assert json.loads(std.bm_get_config())["parsers"]
    finally:
        sock.close()


def test_thrift_any_user_serves_everyone_as_bmv2():
    sw = SwitchProcess(["--no-p4", "--thrift-port", "0", "--thrift-any-user"])
    try:
        sw.wait_ready()
        assert _load_as(NOBODY, sw.thrift_port(), json.dumps(l3_router())) == 0
    finally:
        sw.stop()


class _Backup:
    """A StreamChannel that arbitrates with `election_id` and stays open."""

    def __init__(self, addr: str, election_id: int) -> None:
        self.channel = grpc.insecure_channel(addr)
        self._out: queue.Queue = queue.Queue()
        self.call = p4runtime_pb2_grpc.P4RuntimeStub(self.channel).StreamChannel(iter(self._out.get, None))
        self.first: queue.Queue = queue.Queue()
        self.ended: grpc.StatusCode | None = None
        self.done = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = 0
        req.arbitration.election_id.low = election_id
        self._out.put(req)

    def _read(self) -> None:
        try:
            for msg in self.call:
                self.first.put(msg)
            self.ended = grpc.StatusCode.OK
        except grpc.RpcError as exc:
            self.ended = exc.code()
        self.done.set()

    def close(self) -> None:
        self._out.put(None)
        self.call.cancel()
        self.done.wait(5)
        self.channel.close()


def test_a_restarted_controller_reconnects_past_hostile_backup_streams(switch):
    config = json.dumps(l3_router())
    controller = SwitchConnection("s1", switch.grpc_addr, 0, election_id=(0, 100), timeout=5)
    hostile: list[_Backup] = []
    try:
        assert controller.connect()
        # backups of every election id below the controller's, one beyond the room a restart frees
        for eid in range(1, HOSTILE_STREAMS + 2):
            hostile.append(_Backup(switch.grpc_addr, eid))
            hostile[-1].first.get(timeout=10)  # arbitrated (a backup) or evicted
        controller.close()  # the controller restarts: its stream goes ...
        hostile.append(_Backup(switch.grpc_addr, HOSTILE_STREAMS + 2))  # ... and its place is taken
        hostile[-1].first.get(timeout=10)
        controller = SwitchConnection("s1", switch.grpc_addr, 0, election_id=(0, 100), timeout=5)
        assert controller.connect() is True  # primary again
        sock, std = _thrift_client(switch.thrift_port())
        try:
            std.bm_load_new_config(config)
            std.bm_swap_configs()
        finally:
            sock.close()
        assert controller.is_primary
        evicted = [h.ended for h in hostile if h.done.is_set()]
        assert evicted and set(evicted) == {grpc.StatusCode.RESOURCE_EXHAUSTED}
    finally:
        controller.close()
        for h in hostile:
            h.close()
