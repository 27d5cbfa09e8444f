"""Who is at the other end of a Thrift connection: the user that owns the client's socket.

BMv2's Thrift protocol has no authentication, so the embedded switch keeps its Thrift server to
the user that runs it: a connection is served only when its client socket is on this machine and
belongs to the switch's effective user (or root). The owner of a TCP socket is not in the
connection itself; Linux lists every socket of the network namespace, with its owner's uid, in
/proc/net/tcp and /proc/net/tcp6, and the client's socket is the one whose local end is the
server's peer address and whose remote end is the server's own.
"""
from __future__ import annotations

import os
import socket
import struct

_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")


def _proc_address(host: str, port: int) -> tuple[str, str]:
    """`host`:`port` as /proc/net/tcp{,6} print them: the address's 32-bit words in host byte
    order, in hex (IPv4 in the tcp table; IPv4 as a mapped IPv6 address in the tcp6 one)."""
    packed = socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
    if packed[:12] == b"\0" * 10 + b"\xff\xff":  # an IPv4 client of an IPv6 socket
        packed = packed[12:]
    if len(packed) == 4:
        mapped = b"\0" * 10 + b"\xff\xff" + packed
        v4 = "%08X" % struct.unpack("=I", packed)[0]
    else:
        mapped, v4 = packed, ""
    v6 = "".join("%08X" % word for word in struct.unpack("=4I", mapped))
    return (f"{v4}:{port:04X}" if v4 else ""), f"{v6}:{port:04X}"


def client_uid(conn: socket.socket) -> int | None:
    """The uid owning the client end of the accepted connection `conn`, or None when that socket
    is not in this machine's (namespace's) tables: a client on another host."""
    try:
        peer = conn.getpeername()
        me = conn.getsockname()
    except OSError:
        return None
    peer_v4, peer_v6 = _proc_address(peer[0], peer[1])
    me_v4, me_v6 = _proc_address(me[0], me[1])
    wanted = {(peer_v4, me_v4), (peer_v6, me_v6)}
    for table in _TABLES:
        try:
            with open(table) as fh:
                next(fh, None)
                for line in fh:
                    fields = line.split()
                    if len(fields) > 7 and (fields[1], fields[2]) in wanted:
                        return int(fields[7])
        except OSError:
            continue
    return None


def may_connect(conn: socket.socket, owner: int | None = None) -> bool:
    """Whether the client of `conn` is the switch's effective user (`owner`, default
    os.geteuid()) or root, on this machine."""
    uid = client_uid(conn)
    owner = os.geteuid() if owner is None else owner
    return uid is not None and uid in (owner, 0)
