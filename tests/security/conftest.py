"""Fixtures of the security tests: an embedded switch's P4Runtime server with a client, and its
Thrift server with a client of the `standard` service."""
from __future__ import annotations

import json
import queue
import threading

import grpc
import pytest
from bm_runtime.standard import Standard
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.transport import TSocket, TTransport

from p4target.engine.sample_programs import l3_router
from p4target.switch.p4runtime import start_p4runtime_server
from p4target.switch.target import SwitchTarget
from p4target.switch.thrift.server import ThriftServer

Req = p4runtime_pb2.SetForwardingPipelineConfigRequest


class _P4RuntimeClient:
    def __init__(self, addr: str) -> None:
        self.channel = grpc.insecure_channel(addr)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._out: queue.Queue = queue.Queue()
        self._in: queue.Queue = queue.Queue()
        self._stream = self.stub.StreamChannel(iter(self._out.get, None))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for msg in self._stream:
                self._in.put(msg)
        except grpc.RpcError:
            pass

    def arbitrate(self, low: int) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = 0
        req.arbitration.election_id.low = low
        self._out.put(req)
        assert self._in.get(timeout=5).arbitration.status.code == 0

    def set_pipeline(self, bmv2: dict, action: int, election_low: int | None) -> grpc.StatusCode:
        req = Req(device_id=0, action=action)
        if election_low is not None:
            req.election_id.low = election_low
        req.config.p4_device_config = json.dumps(bmv2).encode()
        req.config.p4info.SetInParent()
        try:
            self.stub.SetForwardingPipelineConfig(req, timeout=30)
        except grpc.RpcError as exc:
            return exc.code()
        return grpc.StatusCode.OK

    def close(self) -> None:
        self._out.put(None)
        self._stream.cancel()
        self.channel.close()
        self._reader.join(timeout=3)


@pytest.fixture
def p4runtime():
    target = SwitchTarget(device_id=0, transmit=lambda port, data: None)
    server = start_p4runtime_server(target, "127.0.0.1:0")
    client = _P4RuntimeClient(f"127.0.0.1:{server.port}")
    yield target, client
    client.close()
    server.stop()
    target.stop()


@pytest.fixture
def thrift():
    target = SwitchTarget(transmit=lambda port, data: None)
    target.set_pipeline(l3_router())
    server = ThriftServer(target, 0, config_text=json.dumps(l3_router()), host="127.0.0.1")
    server.start()
    sock = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", server.port))
    sock.open()
    std = Standard.Client(TMultiplexedProtocol.TMultiplexedProtocol(TBinaryProtocol.TBinaryProtocol(sock), "standard"))
    yield target, std
    sock.close()
    server.stop()
    target.stop()
