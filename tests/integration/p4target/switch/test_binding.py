"""Where the switch's servers listen: loopback when started as `topo` starts it, every address
only when asked (BMv2's defaults, kept for users who want them)."""
from __future__ import annotations

import ipaddress
import os
import socket
import sys

from support.switch_process import SwitchProcess, free_tcp_port

from controller.topology import Switch
from topo.switch_node import switch_command
from topo.toolchain import Tool

EMBEDDED = Tool((sys.executable, "-m", "p4target", "switch"), "embedded")


def _hex_addr(text: str) -> str:
    """An address of /proc/net/tcp{,6} ('0100007F:1F90') as text ('127.0.0.1')."""
    raw = bytes.fromhex(text.split(":")[0])
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)


def _is_loopback(text: str) -> bool:
    addr = ipaddress.ip_address(text)
    mapped = getattr(addr, "ipv4_mapped", None)  # gRPC listens on ::ffff:127.0.0.1 for 127.0.0.1
    return (mapped or addr).is_loopback


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state that process `pid` holds."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as handle:
            next(handle)
            for line in handle:
                cols = line.split()
                local, state, inode = cols[1], cols[3], cols[9]
                if state == "0A" and inode in inodes:  # 0A: TCP_LISTEN
                    found.add((_hex_addr(local), int(local.rsplit(":", 1)[1], 16)))
    return found


def _desc(tmp_path) -> Switch:
    return Switch(name="s1", device_id=1, grpc_addr=f"127.0.0.1:{free_tcp_port()}", thrift_port=free_tcp_port(),
                      router_mac="00:00:00:00:01:00", log=str(tmp_path / "s1.log"))


def test_switch_started_as_topo_starts_it_listens_on_loopback_only(tmp_path):
    desc = _desc(tmp_path)
    argv = switch_command(EMBEDDED, desc, {}, None)
    assert "--thrift-ip" in argv
    sw = SwitchProcess(argv[4:])  # the flags, after `python -m p4target switch`
    try:
        sw.wait_for("switch ready")
        listening = listening_addresses(sw.proc.pid)
    finally:
        sw.stop()
    assert {port for _, port in listening} == {desc.thrift_port, desc.grpc_port}
    assert all(_is_loopback(addr) for addr, _ in listening), listening


def test_bmv2_default_thrift_address_is_kept_when_asked(tmp_path):
    port = free_tcp_port()
    sw = SwitchProcess(["--no-p4", "--thrift-port", str(port), "--thrift-ip", "0.0.0.0"])
    try:
        sw.wait_for("switch ready")
        listening = listening_addresses(sw.proc.pid)
    finally:
        sw.stop()
    assert ("0.0.0.0", port) in listening
