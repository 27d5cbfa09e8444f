"""The BMv2 Thrift runtime server, driven by the real `simple_switch_CLI` client (and, for the
calls that CLI version lacks, by Thrift clients over the same multiplexed protocol)."""
import hashlib
import json
import os
import queue
import struct
import subprocess
import sys

import pytest
from bm_runtime.standard import Standard
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from sswitch_runtime import SimpleSwitch
from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.transport import TSocket, TTransport

from p4target.engine import Lpm
from p4target.engine.sample_programs import l3_router
from p4target.switch.target import SwitchTarget
from p4target.switch.thrift.priority import PriorityQueueClient
from p4target.switch.thrift.server import ThriftPortInUseError, ThriftServer

CLI = os.path.join(os.path.dirname(sys.executable), "simple_switch_CLI")
LPM = "MyIngress.ipv4_lpm"


def program() -> dict:
    prog = l3_router()
    prog["register_arrays"] = [{"name": "MyIngress.reg", "id": 0, "size": 8, "bitwidth": 16}]
    prog["parse_vsets"] = [{"name": "MyParser.tpids", "id": 0, "compressed_bitwidth": 16, "max_size": 2}]
    return prog


@pytest.fixture
def switch():
    sent = queue.Queue()
    target = SwitchTarget(transmit=lambda port, data: sent.put((port, data)), priority_queues=4)
    prog = program()
    text = json.dumps(prog, indent=1)
    target.set_pipeline(prog)
    server = ThriftServer(target, 0, config_text=text, ports={1: "veth1", 2: "veth2"}, host="127.0.0.1")
    server.start()
    target.sent = sent
    target.config_text = text
    yield target, server
    server.stop()
    target.stop()


def cli(server: ThriftServer, commands: str) -> str:
    """Run simple_switch_CLI against the server with `commands` on stdin; returns stdout."""
    r = subprocess.run([CLI, "--thrift-port", str(server.port)], input=commands, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    return r.stdout


def packet(dst: str) -> bytes:
    return bytes(Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02") / IP(src="10.0.0.1", dst=dst) /
                 UDP(sport=1, dport=2) / b"payload")


def test_table_add_forwards_traffic_and_dump_shows_the_entry(switch):
    target, server = switch
    out = cli(server, f"table_add {LPM} MyIngress.ipv4_forward 10.0.7.0/24 => 00:00:00:00:07:07 3\n"
                      f"table_dump {LPM}\ntable_num_entries {LPM}\n")
    assert "Entry has been added with handle 0" in out
    assert "0a000700/24" in out and "MyIngress.ipv4_forward - 000000000707, 0003" in out
    assert "Dumping default entry" in out and "MyIngress.drop" in out
    target.receive(1, packet("10.0.7.9"))
    port, data = target.sent.get(timeout=3)
    assert port == 3 and Ether(data).dst == "00:00:00:00:07:07" and Ether(data)[IP].ttl == 63


def test_table_errors_come_back_as_bmv2_error_codes(switch):
    _, server = switch
    out = cli(server, f"table_add {LPM} MyIngress.ipv4_forward 10.0.7.0/24 => 00:00:00:00:07:07 3\n"
                      f"table_add {LPM} MyIngress.ipv4_forward 10.0.7.0/24 => 00:00:00:00:07:07 4\n"
                      f"table_delete {LPM} 42\n"
                      f"table_modify {LPM} MyIngress.ipv4_forward 9 00:00:00:00:07:07 4\n")
    assert "Invalid table operation (DUPLICATE_ENTRY)" in out
    assert out.count("Invalid table operation (INVALID_HANDLE)") == 2


def test_delete_modify_and_default_entry(switch):
    target, server = switch
    cli(server, f"table_add {LPM} MyIngress.ipv4_forward 10.0.7.0/24 => 00:00:00:00:07:07 3\n"
                f"table_modify {LPM} MyIngress.ipv4_forward 0 00:00:00:00:08:08 4\n"
                f"table_set_default {LPM} NoAction\n")
    entry = target.engine.table_entries(LPM)[0]
    assert entry.action == "MyIngress.ipv4_forward" and entry.action_data == (0x0808, 4)
    assert target.engine.table_get_default(LPM) == ("NoAction", ())
    cli(server, f"table_delete {LPM} 0\ntable_reset_default {LPM}\n")
    assert target.engine.table_entries(LPM) == []
    assert target.engine.table_get_default(LPM)[0] == "MyIngress.drop"


def test_counters_read_and_reset(switch):
    target, server = switch
    target.engine.table_add(LPM, [Lpm(0x0A000700, 24)], "MyIngress.ipv4_forward", [0x070707, 3])
    for _ in range(3):
        target.receive(2, packet("10.0.7.1"))
    for _ in range(3):
        target.sent.get(timeout=3)
    out = cli(server, "counter_read MyIngress.rx 2\ncounter_reset MyIngress.rx\ncounter_read MyIngress.rx 2\n"
                      "counter_read MyIngress.rx 4096\n")
    assert "MyIngress.rx[2]= (" in out and "3 packets)" in out
    assert "MyIngress.rx[2]= (0 bytes, 0 packets)" in out
    assert "Invalid counter operation (INVALID_INDEX)" in out


def test_parser_value_sets(switch):
    target, server = switch
    out = cli(server, "pvs_add MyParser.tpids 0x8100\npvs_add MyParser.tpids 0x88a8\npvs_get MyParser.tpids\n")
    assert "8100\n88a8\n" in out
    assert target.engine.parse_vset_get("MyParser.tpids") == [0x8100, 0x88a8]
    out = cli(server, "pvs_add MyParser.tpids 0x9100\npvs_remove MyParser.tpids 0x8100\n")
    assert "Invalid" in out or "ERROR" in out
    assert target.engine.parse_vset_get("MyParser.tpids") == [0x88a8]
    cli(server, "pvs_clear MyParser.tpids\n")
    assert target.engine.parse_vset_get("MyParser.tpids") == []


def test_registers_write_read_reset(switch):
    target, server = switch
    out = cli(server, "register_write MyIngress.reg 3 4660\nregister_read MyIngress.reg 3\n")
    assert "MyIngress.reg[3]= 4660" in out
    assert target.engine.register_read("MyIngress.reg", 3) == 4660
    out = cli(server, "register_reset MyIngress.reg\nregister_read MyIngress.reg 3\nregister_read MyIngress.reg 99\n")
    assert "MyIngress.reg[3]= 0" in out
    assert "Invalid register operation (INVALID_INDEX)" in out


def test_multicast_groups(switch):
    target, server = switch
    out = cli(server, "mc_mgrp_create 7\nmc_node_create 5 1 3 4\nmc_node_associate 7 0\nmc_dump\n")
    assert "node was created with handle 0" in out
    assert "mgrp(7)" in out and "ports=[1, 3, 4]" in out
    assert sorted(target.engine.mc_group_replicas(7)) == [(1, 5), (3, 5), (4, 5)]
    out = cli(server, "mc_node_dissociate 7 0\nmc_node_destroy 0\nmc_mgrp_destroy 7\nmc_mgrp_destroy 7\n")
    assert 7 not in target.engine.mc_groups
    assert "Invalid PRE operation (INVALID_MGRP_HANDLE)" in out


def test_mirroring_sessions(switch):
    target, server = switch
    out = cli(server, "mirroring_add 4 9\nmirroring_get 4\nmirroring_add_mc 5 7\n")
    assert "MirroringSessionConfig(port=9, mgid=None)" in out
    assert target.engine.mirroring_get(4).port == 9 and target.engine.mirroring_get(5).mgrp == 7
    out = cli(server, "mirroring_delete 4\nmirroring_get 4\n")
    assert "Invalid mirroring operation (SESSION_NOT_FOUND)" in out


def test_queue_depth_and_rate_reach_the_traffic_manager(switch):
    target, server = switch
    cli(server, "set_queue_depth 17 2\nset_queue_rate 1000 2\nset_queue_depth 33\n")
    queues = target.engine.tm._port(2)
    assert all(q.depth == 33 for q in queues)  # the later switch-wide setting wins, as in BMv2
    assert all(q.pps == 1000 for q in queues)
    cli(server, "set_queue_rate 50\n")
    assert all(q.pps == 50 for q in target.engine.tm._port(5))


def thrift_clients(port: int):
    sock = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", port))
    proto = TBinaryProtocol.TBinaryProtocol(sock)
    sock.open()
    std = Standard.Client(TMultiplexedProtocol.TMultiplexedProtocol(proto, "standard"))
    ss_proto = TMultiplexedProtocol.TMultiplexedProtocol(proto, "simple_switch")
    return sock, std, SimpleSwitch.Client(ss_proto), PriorityQueueClient(ss_proto)


def test_per_priority_queue_calls(switch):
    target, server = switch
    sock, _, _, prio = thrift_clients(server.port)
    try:
        assert prio.set_egress_priority_queue_depth(2, 3, 5) == 0
        assert prio.set_egress_priority_queue_rate(2, 1, 250) == 0
        assert prio.set_egress_priority_queue_depth(2, 9, 5) == 1  # no such priority queue
    finally:
        sock.close()
    queues = target.engine.tm._port(2)
    assert queues[3].depth == 5 and queues[0].depth != 5
    assert queues[1].pps == 250 and queues[2].pps is None


def test_config_text_and_md5_are_the_loaded_file(switch):
    target, server = switch
    sock, std, ss, _ = thrift_clients(server.port)
    try:
        assert std.bm_get_config() == target.config_text
        assert std.bm_get_config_md5() == hashlib.md5(target.config_text.encode()).digest()
        assert ss.get_time_elapsed_us() > 0
        assert std.bm_mgmt_get_info().thrift_port == server.port
        assert [(p.port_num, p.iface_name) for p in std.bm_dev_mgr_show_ports()] == [(1, "veth1"), (2, "veth2")]
        assert std.bm_get_id_from_name(0, 0, LPM) == 1
    finally:
        sock.close()


def test_load_new_config_and_swap(switch, tmp_path):
    target, server = switch
    target.engine.table_add(LPM, [Lpm(0x0A000700, 24)], "MyIngress.ipv4_forward", [1, 3])
    new = l3_router()
    new["program"] = "second.p4"
    path = tmp_path / "second.json"
    path.write_text(json.dumps(new))
    out = cli(server, f"load_new_config_file {path}\nswap_configs\n")
    assert "Invalid" not in out
    assert target.bmv2_json["program"] == "second.p4"
    assert target.engine.table_entries(LPM) == []
    sock, std, _, _ = thrift_clients(server.port)
    try:
        assert json.loads(std.bm_get_config())["program"] == "second.p4"
    finally:
        sock.close()


def test_reset_state_clears_tables_keeps_program(switch):
    target, server = switch
    target.engine.table_add(LPM, [Lpm(0x0A000700, 24)], "MyIngress.ipv4_forward", [1, 3])
    cli(server, "reset_state\n")
    assert target.engine.table_entries(LPM) == [] and target.bmv2_json["program"] == "l3_router.p4"


def test_no_pipeline_reports_errors_not_crashes():
    target = SwitchTarget(transmit=lambda p, d: None)
    server = ThriftServer(target, 0, host="127.0.0.1")
    server.start()
    try:
        sock, std, _, _ = thrift_clients(server.port)
        try:
            assert std.bm_get_config() == ""
            with pytest.raises(Exception) as info:
                std.bm_mt_get_num_entries(0, LPM)
            assert type(info.value).__name__ == "InvalidTableOperation"
        finally:
            sock.close()
    finally:
        server.stop()
        target.stop()


def test_port_in_use_is_reported():
    target = SwitchTarget(transmit=lambda p, d: None)
    first = ThriftServer(target, 0, host="127.0.0.1")
    try:
        with pytest.raises(ThriftPortInUseError, match=str(first.port)):
            ThriftServer(target, first.port, host="127.0.0.1")
    finally:
        first.stop()


SELECTOR_PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<16> a; bit<8> b; bit<32> c; }
struct headers { h_t h; }
struct metadata { }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action to_port(bit<9> port) { sm.egress_spec = port; }
    action mark(bit<8> v) { hdr.h.b = v; }
    action_selector(HashAlgorithm.crc16, 32w64, 32w14) sel;
    table spread {
        key = { hdr.h.c : lpm; hdr.h.a : selector; }
        actions = { to_port; }
        implementation = sel;
    }
    table classify {
        key = { hdr.h.a : ternary; hdr.h.b : range; }
        actions = { mark; NoAction; }
        default_action = NoAction();
    }
    apply { classify.apply(); spread.apply(); }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_action_selector_and_ternary_range_tables_via_cli(tmp_path):
    from p4target import compiler
    src = tmp_path / "sel.p4"
    src.write_text(SELECTOR_PROGRAM)
    prog = compiler.compile_file(str(src))
    sent = queue.Queue()
    target = SwitchTarget(transmit=lambda port, data: sent.put((port, data)))
    target.set_pipeline(prog.bmv2_json)
    server = ThriftServer(target, 0, host="127.0.0.1")
    server.start()
    try:
        out = cli(server, "act_prof_create_member I.sel I.to_port 5\n"
                          "act_prof_create_member I.sel I.to_port 6\n"
                          "act_prof_create_group I.sel\n"
                          "act_prof_add_member_to_group I.sel 0 0\n"
                          "act_prof_add_member_to_group I.sel 1 0\n"
                          "table_indirect_add_with_group I.spread 10.0.0.0/8 => 0\n"
                          "table_add I.classify I.mark 0x0001&&&0x00ff 3->7 => 0x42 10\n"
                          "table_dump I.classify\nact_prof_dump I.sel\n"
                          "act_prof_delete_member I.sel 0\n")
        assert "Group has been created with handle 0" in out
        assert "Priority: 10" in out and "RANGE     03 -> 07" in out
        assert "Members: [0, 1]" in out
        assert "Invalid table operation (MBR_STILL_USED)" in out
        target.receive(1, struct.pack("!HBI", 0x0101, 5, 0x0A000001))
        port, data = sent.get(timeout=3)
        assert port in (5, 6) and data[2] == 0x42
    finally:
        server.stop()
        target.stop()


def test_garbage_on_the_thrift_port_drops_that_client_only(switch):
    import socket

    target, server = switch
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as bad:
        bad.sendall(b"\x80\x01\x00\x01" + b"\xff" * 64)
        bad.settimeout(5)
        try:
            bad.recv(100)
        except OSError:
            pass
    out = cli(server, f"table_num_entries {LPM}\n")
    assert "RuntimeCmd: 0" in out
