"""Another local user cannot drive a running switch through its side doors: the embedded switch's
Thrift server closes connections from other users (uid 65534 here) before any call, and backup P4Runtime streams, however many, never lock a restarted controller out."""
from __future__ import annotations

import json
import os
import queue
import shutil
import tempfile
import threading
import time

import grpc
import pytest
from bm_runtime.standard import Standard
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.transport import TSocket, TTransport

from controller.client import SwitchConnection
from p4target.engine.sample_programs import l3_router
from support.other_user import SEND_AND_READ, check_as_nobody
from support.switch_process import SwitchProcess

HOSTILE_STREAMS = 15


def _thrift_client(port: int) -> tuple[TTransport.TTransportBase, Standard.Client]:
    sock = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", port))
    sock.open()
    proto = TMultiplexedProtocol.TMultiplexedProtocol(TBinaryProtocol.TBinaryProtocol(sock), "standard")
    return sock, Standard.Client(proto)


def _load_bytes(config: str) -> bytes:
    """bm_load_new_config(config) then bm_swap_configs, as a client writes them on the wire."""
    buf = TTransport.TMemoryBuffer()
    std = Standard.Client(TMultiplexedProtocol.TMultiplexedProtocol(TBinaryProtocol.TBinaryProtocol(buf), "standard"))
    std.send_bm_load_new_config(config)
    std.send_bm_swap_configs()
    return buf.getvalue()


@pytest.fixture
def load_file():
    """The two calls in a file uid 65534 can read (pytest's tmp_path is private to root)."""
    folder = tempfile.mkdtemp(prefix="gradlane-security-")
    os.chmod(folder, 0o755)
    path = os.path.join(folder, "load.bin")
    with open(path, "wb") as fh:
        fh.write(_load_bytes(json.dumps(l3_router())))
    os.chmod(path, 0o644)
    yield path
    shutil.rmtree(folder, ignore_errors=True)


def _reply_bytes_as_nobody(port: int, path: str) -> int:
    """Reply bytes uid 65534 gets for the calls in `path` (0: closed unanswered)."""
    return int(check_as_nobody(SEND_AND_READ, str(port), path).strip())


@pytest.fixture
def switch():
    sw = SwitchProcess(["--no-p4", "--thrift-port", "0", "-L", "info"])
    try:
        yield sw.wait_ready()
    finally:
        sw.stop()


def test_another_user_cannot_load_a_pipeline_over_thrift(switch, load_file):
    assert _reply_bytes_as_nobody(switch.thrift_port(), load_file) == 0
    sock, std = _thrift_client(switch.thrift_port())
    try:
        assert std.bm_get_config() == ""  # still no pipeline
        std.bm_load_new_config(json.dumps(l3_router()))  # the switch's own user may
        std.bm_swap_configs()
        assert json.loads(std.bm_get_config())["parsers"]
    finally:
        sock.close()


def test_thrift_any_user_serves_everyone_as_bmv2(load_file):
    sw = SwitchProcess(["--no-p4", "--thrift-port", "0", "--thrift-any-user"])
    try:
        sw.wait_ready()
        assert _reply_bytes_as_nobody(sw.thrift_port(), load_file) > 0
        sock, std = _thrift_client(sw.thrift_port())
        try:
            deadline = time.monotonic() + 10  # the swap is answered after the byte the child read
            while not std.bm_get_config() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert json.loads(std.bm_get_config())["parsers"]  # uid 65534 loaded it
        finally:
            sock.close()
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


def test_a_thrift_call_missing_an_argument_is_refused_not_crashed(thrift):
    """Found by `make fuzz` (control): a message without the config field reached the handler
    as None and failed inside it (TypeError) instead of being refused."""
    from thrift.Thrift import TApplicationException
    target, std = thrift
    with pytest.raises(TApplicationException, match="bm_load_new_config: argument 1 is missing") as err:
        std.bm_load_new_config(None)
    assert err.value.type == TApplicationException.PROTOCOL_ERROR
    assert json.loads(std.bm_get_config())["parsers"]  # the running pipeline is untouched
