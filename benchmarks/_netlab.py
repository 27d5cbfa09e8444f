"""Network namespaces, veth links and raw sockets for the switch benchmarks (needs root).

Not a benchmark itself (the leading underscore keeps `python -m benchmarks` from running it).
"""
from __future__ import annotations

import ctypes
import os
import queue
import socket
import subprocess
import threading

CLONE_NEWNET = 0x40000000


def sh(*args: str, check: bool = True) -> None:
    """Run a command quietly; CalledProcessError when `check` and it fails."""
    subprocess.run(list(args), check=check, capture_output=True)


def ns_socket(ns: str, iface: str) -> socket.socket:
    """Raw socket bound to `iface` inside namespace `ns`, opened from a thread that entered it."""
    box: queue.Queue = queue.Queue()

    def run() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns {ns}")
            finally:
                os.close(fd)
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
            s.bind((iface, 3))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            box.put(s)
        except Exception as exc:
            box.put(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    value = box.get()
    if isinstance(value, Exception):
        raise value
    return value


def tx_packets(iface: str) -> int:
    """Frames a root-namespace interface has sent (the kernel's counter)."""
    with open(f"/sys/class/net/{iface}/statistics/tx_packets") as f:
        return int(f.read())


class Net:
    """Namespaces and veth links for one run; `close()` deletes them all."""

    def __init__(self, tag: str) -> None:
        self.namespaces: list[str] = []
        self.root_links: list[str] = []
        self.tag = tag

    def namespace(self, name: str) -> str:
        ns = f"glb{self.tag}{name}"
        sh("ip", "netns", "add", ns)
        self.namespaces.append(ns)
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", check=False)
        return ns

    def to_root(self, ns: str, root_iface: str) -> None:
        """veth: `eth0` in `ns` <-> `root_iface` in the root namespace."""
        sh("ip", "link", "add", root_iface, "type", "veth", "peer", "name", "eth0", "netns", ns)
        self.root_links.append(root_iface)
        sh("sysctl", "-qw", f"net.ipv6.conf.{root_iface}.disable_ipv6=1", check=False)
        sh("ip", "link", "set", root_iface, "up")
        sh("ip", "-n", ns, "link", "set", "eth0", "up")

    def direct(self, ns_a: str, ns_b: str) -> None:
        """veth: `eth0` in `ns_a` <-> `eth0` in `ns_b`."""
        tmp_a, tmp_b = f"glb{self.tag}x", f"glb{self.tag}y"
        sh("ip", "link", "add", tmp_a, "type", "veth", "peer", "name", tmp_b)
        sh("ip", "link", "set", tmp_a, "netns", ns_a, "name", "eth0")
        sh("ip", "link", "set", tmp_b, "netns", ns_b, "name", "eth0")
        sh("ip", "-n", ns_a, "link", "set", "eth0", "up")
        sh("ip", "-n", ns_b, "link", "set", "eth0", "up")

    def close(self) -> None:
        for link in self.root_links:
            sh("ip", "link", "del", link, check=False)
        for ns in self.namespaces:
            sh("ip", "netns", "del", ns, check=False)
