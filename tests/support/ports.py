"""Free local ports for the processes a test starts.

A port found by binding port 0 comes from the kernel's ephemeral range: between the test
closing it and the child process binding it, any socket bound to port 0 (a relay's upstream
socket, a client's source port) may take it, and the child fails to bind. These ports come from
below that range, where the kernel never hands out a port on its own, and never twice in one
test session."""
import random
import socket

_LOWEST = 10000   # above the well-known and registered ports the tests use (9090, 9559)
_given: set[int] = set()


def _ephemeral_start() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def free_port() -> int:
    """A port of 127.0.0.1 free for both UDP and TCP, outside the ephemeral range."""
    top = _ephemeral_start()
    if top - _LOWEST < 1000:
        raise RuntimeError(f"ephemeral ports start at {top}: no room below them for test ports")
    for _ in range(200):
        port = random.randrange(_LOWEST, top)
        if port not in _given and _bindable(port):
            _given.add(port)
            return port
    raise RuntimeError("no free port below the ephemeral range")
