"""What /proc says about one process: resident memory, open file descriptors, threads and its
established TCP connections (a gRPC channel is one such connection). Each reader returns None
when the process is gone or the figure cannot be read.
"""
from __future__ import annotations

import os
from pathlib import Path

TCP_ESTABLISHED = "01"  # the `st` column of /proc/net/tcp


def status_field(pid: int, field: str) -> int | None:
    """The first number of ``field`` (e.g. "VmRSS", "Threads") in /proc/PID/status."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def rss_kib(pid: int) -> int | None:
    """Resident set size of ``pid`` in KiB."""
    return status_field(pid, "VmRSS")


def threads(pid: int) -> int | None:
    """Number of threads of ``pid``."""
    return status_field(pid, "Threads")


def open_fds(pid: int) -> int | None:
    """Number of open file descriptors of ``pid``."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def socket_inodes(pid: int) -> set[str]:
    """The inodes of the sockets ``pid`` holds open (from its fd links `socket:[N]`)."""
    out = set()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[len("socket:["):-1])
    return out


def established_inodes(table: str) -> set[str]:
    """The inodes of the ESTABLISHED connections in the text of a /proc/net/tcp{,6} table."""
    out = set()
    for line in table.splitlines()[1:]:
        cols = line.split()
        if len(cols) > 9 and cols[3] == TCP_ESTABLISHED:
            out.add(cols[9])
    return out


def tcp_established(pid: int) -> int | None:
    """How many established TCP connections ``pid`` holds (in its own network namespace)."""
    mine = socket_inodes(pid)
    if not Path(f"/proc/{pid}").exists():
        return None
    established: set[str] = set()
    for name in ("tcp", "tcp6"):
        try:
            established |= established_inodes(Path(f"/proc/{pid}/net/{name}").read_text())
        except OSError:
            continue
    return len(mine & established)


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) ``pid`` has used so far, in seconds (a zombie not yet reaped
    still reports its total)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()   # after the command name, which may hold spaces
    try:
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (IndexError, ValueError):
        return None


def busy_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat's `cpu` line."""
    cols = [int(c) for c in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = cols[3] + (cols[4] if len(cols) > 4 else 0)   # idle + iowait
    return sum(cols) - idle, sum(cols)
