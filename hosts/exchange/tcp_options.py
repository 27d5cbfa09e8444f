"""TCP baseline knobs: congestion control per socket, ECN per network namespace, pacing per socket.

- Congestion control: `TCP_CONGESTION` on every socket of the exchange, from the names the
  kernel offers in net.ipv4.tcp_available_congestion_control (no module loading is assumed).
- ECN: Linux has no per-socket switch; net.ipv4.tcp_ecn is per network namespace, and the agent
  never writes it (it may share the machine's namespace). Whoever owns the namespace sets it
  (topo runs `sysctl -w net.ipv4.tcp_ecn=1|0` in each Mininet host of a job); the agent checks
  that it fits --tcp-ecn (on: 1; off: 0 or 2, i.e. never requested) and fails with a one-line
  error otherwise. What each connection negotiated is read back from TCP_INFO.
- Pacing: `SO_MAX_PACING_RATE` (the kernel paces TCP itself when no fq qdisc does) at
  pace_pps x (MSS + 52 bytes of IPv4/TCP headers with timestamps): the same packets per second
  as a paced UDP sender, in full-sized segments.
"""
from __future__ import annotations

import socket
import struct

from hosts.errors import ConfigError

AVAILABLE_CC = "/proc/sys/net/ipv4/tcp_available_congestion_control"
DEFAULT_CC = "/proc/sys/net/ipv4/tcp_congestion_control"
TCP_ECN = "/proc/sys/net/ipv4/tcp_ecn"
SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)
_TCPI_OPT_ECN = 8
_TCPI_OPTIONS_OFFSET = 5
_IP_TCP_HEADERS = 52


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def available_congestion_controls() -> list[str]:
    """The congestion controls this kernel offers (empty if unknown)."""
    return _read(AVAILABLE_CC).split()


def check_congestion_control(name: str) -> str:
    """`name` if the kernel offers it, else ConfigError naming what is available."""
    have = available_congestion_controls()
    if name not in have:
        raise ConfigError(f"--tcp-cc {name} is not available here: "
                          f"net.ipv4.tcp_available_congestion_control offers "
                          f"{' '.join(have) or 'nothing readable'}")
    return name


def default_congestion_control() -> str:
    return _read(DEFAULT_CC)


def check_ecn(ecn: bool | None) -> str:
    """Check that this namespace's net.ipv4.tcp_ecn fits `ecn` (None: anything); what it is."""
    current = _read(TCP_ECN)
    if ecn is not None and not (current == "1" if ecn else current in ("0", "2")):
        raise ConfigError(f"--tcp-ecn {'on' if ecn else 'off'} but net.ipv4.tcp_ecn is "
                          f"{current or 'unreadable'} in this network namespace; set it to "
                          f"{'1' if ecn else '0'} there first (topo does so in each host)")
    return f"net.ipv4.tcp_ecn={current or '?'}"


def tune(sock: socket.socket, cc: str | None) -> None:
    """Set the congestion control of `sock` (before connect, or on a listener / accepted socket)."""
    if cc:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        except OSError as exc:
            raise ConfigError(f"--tcp-cc {cc}: the kernel refused it ({exc.strerror})") from None


def pace(sock: socket.socket, pace_pps: float) -> int:
    """Cap the connected socket's sending rate at `pace_pps` full segments per second; the
    rate in bytes/s (0 = unpaced)."""
    if pace_pps <= 0:
        return 0
    try:
        mss = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
    except OSError:
        mss = 1448
    rate = int(pace_pps * (mss + _IP_TCP_HEADERS))
    sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, min(rate, 0xFFFFFFFF))
    return rate


def describe(sock: socket.socket) -> dict:
    """What a connected socket really uses: congestion control, negotiated ECN, pacing rate."""
    out: dict = {}
    try:
        out["cc"] = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16) \
            .split(b"\0")[0].decode()
    except OSError:
        out["cc"] = None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        out["ecn"] = bool(info[_TCPI_OPTIONS_OFFSET] & _TCPI_OPT_ECN)
    except (OSError, IndexError):
        out["ecn"] = None
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, 8)
        rate = struct.unpack("Q", raw)[0] if len(raw) == 8 else struct.unpack("I", raw[:4])[0]
        out["max_pacing_bytes_s"] = None if rate >= 0xFFFFFFFF else rate
    except (OSError, struct.error):
        out["max_pacing_bytes_s"] = None
    return out
