"""Fixtures for switch-process tests on real network namespaces (root only).

`two_hosts` builds two namespaces, each with one veth link to the root namespace; the
switch runs in the root namespace on the root-side ends. `ns_socket` opens a raw
AF_PACKET socket inside a namespace (from a short-lived thread that entered it with
setns), so the test process sends and receives "as the host" without extra processes.
"""
import ctypes
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

import pytest

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
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SwitchProcess:
    """`python -m p4target switch ARGS` in the root namespace; stopped by PID."""

    def __init__(self, args: list[str]) -> None:
        self.grpc_addr = f"127.0.0.1:{free_port()}"
        self.proc = subprocess.Popen([PY, "-m", "p4target", "switch", *args, "--", "--grpc-server-addr",
                                      self.grpc_addr], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.lines: list[str] = []
        self._q: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.thrift_port = int(self.wait_for("Thrift server listening on port").rsplit(" ", 1)[1])
        self.wait_for("switch ready")

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._q.put(line)
        self._q.put(None)

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            for line in self.lines:
                if text in line:
                    return line
            try:
                line = self._q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                err = self.proc.stderr.read() if self.proc.poll() is not None else ""
                raise AssertionError(f"switch never printed {text!r}: {self.lines} {err}")
            self.lines.append(line)

    def cli(self, commands: str) -> str:
        r = subprocess.run([os.path.join(os.path.dirname(PY), "simple_switch_CLI"), "--thrift-port",
                            str(self.thrift_port)], input=commands, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
        return r.stdout

    def stop(self) -> int:
        """SIGTERM by PID; returns the exit code (SIGKILL if it does not exit)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return -9
        finally:
            self._reader.join(timeout=5)
            self.proc.stdout.close()
            self.proc.stderr.close()


@pytest.fixture
def start_switch():
    """start_switch(args) -> SwitchProcess; every process started is stopped afterwards."""
    started: list[SwitchProcess] = []

    def start(args: list[str]) -> SwitchProcess:
        sw = SwitchProcess(args)
        started.append(sw)
        return sw

    yield start
    for sw in started:
        sw.stop()
