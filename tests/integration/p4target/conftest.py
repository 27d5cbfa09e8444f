"""Fixtures for switch-process tests on real network namespaces (root only).

`two_hosts` builds two namespaces, each with one veth link to the root namespace; the
switch runs in the root namespace on the root-side ends. `ns_socket` opens a raw
AF_PACKET socket inside a namespace (from a short-lived thread that entered it with
setns), so the test process sends and receives "as the host" without extra processes.
"""
import ctypes
import os
import queue
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass

import pytest

from support.switch_process import SwitchProcess

CLONE_NEWNET = 0x40000000
PY = sys.executable


@dataclass
class Host:
    """A namespace `ns` whose interface `iface` is wired to `switch_iface` in the root namespace."""
    ns: str
    iface: str
    switch_iface: str


def _ip(*args: str, check: bool = True) -> None:
    subprocess.run(["ip", *args], check=check, capture_output=True)


@pytest.fixture
def two_hosts():
    tag = f"{os.getpid() % 100000}"
    hosts = [Host(f"glsw{tag}h{i}", "eth0", f"glsw{tag}s{i}") for i in (1, 2)]
    try:
        for h in hosts:
            _ip("netns", "add", h.ns)
            _ip("link", "add", h.switch_iface, "type", "veth", "peer", "name", h.iface, "netns", h.ns)
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{h.switch_iface}.disable_ipv6=1"], check=False)
            subprocess.run(["ip", "netns", "exec", h.ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                           check=False, capture_output=True)
            _ip("link", "set", h.switch_iface, "up")
            _ip("-n", h.ns, "link", "set", h.iface, "up")
            _ip("-n", h.ns, "link", "set", "lo", "up")
        yield hosts
    finally:
        for h in hosts:
            _ip("link", "del", h.switch_iface, check=False)
            _ip("netns", "del", h.ns, check=False)


def ns_socket(ns: str, iface: str, ethertype: int = 0x0003) -> socket.socket:
    """A raw socket bound to `iface` inside namespace `ns` (usable from any thread)."""
    result: queue.Queue = queue.Queue()

    def enter_and_open() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns({ns}) failed")
            finally:
                os.close(fd)
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ethertype))
            sock.bind((iface, ethertype))
            result.put(sock)
        except Exception as exc:  # handed to the caller
            result.put(exc)

    thread = threading.Thread(target=enter_and_open)  # the thread ends, its namespace with it
    thread.start()
    thread.join()
    value = result.get()
    if isinstance(value, Exception):
        raise value
    return value


@pytest.fixture
def open_ns_socket():
    """open_ns_socket(ns, iface) -> raw socket inside the namespace; closed afterwards."""
    opened: list[socket.socket] = []

    def open_(ns: str, iface: str) -> socket.socket:
        sock = ns_socket(ns, iface)
        opened.append(sock)
        return sock

    yield open_
    for sock in opened:
        sock.close()


@pytest.fixture
def start_switch():
    """start_switch(args) -> SwitchProcess; every process started is stopped afterwards."""
    started: list[SwitchProcess] = []

    def start(args: list[str]) -> SwitchProcess:
        sw = SwitchProcess(args)
        started.append(sw)
        return sw.wait_ready()

    yield start
    for sw in started:
        sw.stop()
