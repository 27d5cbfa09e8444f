"""A switch that fails to start is reported with its log's tail, and nothing is left behind."""
import socket
from pathlib import Path

import pytest

from topo.errors import SwitchStartError
from topo.network import GradNetwork, NetworkOptions, root_interfaces
from topo.pidfile import RunRecord, is_same_process
from topo.topologies import TopoParams, build_topology


def _leftovers(record_dir, topo):
    record = RunRecord.load(record_dir)
    alive = [p for p in (record.processes if record else []) if p.kind != "run"
             and is_same_process(p.pid, p.start_time)]
    links = [n for n in root_interfaces(topo) if Path(f"/sys/class/net/{n}").exists()]
    return alive, links


def test_bad_program_shows_log_tail_and_cleans_up(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    topo = build_topology("incast", TopoParams(log_dir=str(tmp_path / "logs"), grpc_base=9800, thrift_base=9900))
    record = RunRecord.create(tmp_path / "logs", topo.name)
    net = GradNetwork(topo, record, NetworkOptions(json_path=str(bad), start_timeout=60))
    with pytest.raises(SwitchStartError) as info:
        net.start()
    message = str(info.value)
    assert "last lines of" in message and str(tmp_path / "logs") in message
    log_text = Path(topo.switches["s1"].log).read_text()
    assert log_text.splitlines()[-1].strip() in message  # the switch's own last words are shown
    assert _leftovers(tmp_path / "logs", topo) == ([], [])


def test_port_in_use_is_named(tmp_path):
    topo = build_topology("incast", TopoParams(log_dir=str(tmp_path / "logs"), grpc_base=9810, thrift_base=9910))
    blocker = socket.socket()
    blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    blocker.bind(("127.0.0.1", topo.switches["s1"].grpc_port))
    blocker.listen()
    try:
        record = RunRecord.create(tmp_path / "logs", topo.name)
        good = tmp_path / "p.json"
        good.write_text("{}")
        with pytest.raises(SwitchStartError, match=f"port {topo.switches['s1'].grpc_port} is already in use"):
            GradNetwork(topo, record, NetworkOptions(json_path=str(good))).start()
        assert _leftovers(tmp_path / "logs", topo) == ([], [])
    finally:
        blocker.close()


def test_missing_program_is_named_before_anything_starts(tmp_path):
    topo = build_topology("incast", TopoParams(log_dir=str(tmp_path / "logs")))
    record = RunRecord.create(tmp_path / "logs", topo.name)
    with pytest.raises(SwitchStartError, match="not found: build it first"):
        GradNetwork(topo, record, NetworkOptions(json_path=str(tmp_path / "nope.json"))).start()
    assert not Path(topo.switches["s1"].log).exists()
