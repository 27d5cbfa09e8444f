"""simple_switch_CLI over Thrift (127.0.0.1) adds table entries by action name to a switch
running older JSON (split from tests/unit/p4target/engine/test_older_json.py: it opens a
socket), and the switch forwards with them."""
import json
import os
import subprocess
import sys

import pytest

from p4target.switch.target import SwitchTarget
from p4target.switch.thrift.server import ThriftServer
from support.older_json import check_forwarded, older_router, packet

CLI = os.path.join(os.path.dirname(sys.executable), "simple_switch_CLI")


@pytest.fixture
def thrift_switch():
    sent = []
    target = SwitchTarget(transmit=lambda port, data: sent.append((port, data)))
    prog = older_router()
    target.set_pipeline(prog)
    server = ThriftServer(target, 0, config_text=json.dumps(prog), ports={}, host="127.0.0.1")
    server.start()
    target.sent = sent
    yield target, server
    server.stop()
    target.stop()


def test_simple_switch_cli_table_add_on_older_json(thrift_switch):
    target, server = thrift_switch
    commands = ("table_add ipv4_lpm set_nhop 10.0.1.0/24 => 10.0.1.1 3\n"
                "table_add forward set_dmac 10.0.1.1 => 00:00:00:00:00:cc\n"
                "table_add send_frame rewrite_mac 3 => 00:00:00:00:00:dd\n")
    r = subprocess.run([CLI, "--thrift-port", str(server.port)], input=commands, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert r.stdout.count("Entry has been added with handle 0") == 3, r.stdout
    assert "INVALID_ACTION_NAME" not in r.stdout
    check_forwarded(target.engine.process(1, packet()))
