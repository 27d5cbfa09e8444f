"""The ceiling reference for the switch benchmark: a bare Python raw-socket forwarder.

`python benchmarks/_forwarder.py PORT IFACE_IN IFACE_OUT` copies every frame from IFACE_IN to
IFACE_OUT unchanged (one thread, non-blocking drain per epoll event, no P4) and listens on TCP
PORT so a caller can tell it is ready. Stops on SIGTERM.
"""
from __future__ import annotations

import select
import signal
import socket
import sys


def main(argv: list[str]) -> int:
    port, iface_in, iface_out = int(argv[0]), argv[1], argv[2]
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    rx.bind((iface_in, 3))
    rx.setsockopt(socket.SOL_SOCKET, 33, 4 << 20)  # SO_RCVBUFFORCE, as the switch does
    rx.setblocking(False)
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    tx.bind((iface_out, 0))
    ready = socket.create_server(("127.0.0.1", port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    poller = select.epoll()
    poller.register(rx.fileno(), select.EPOLLIN)
    buf = bytearray(65600)
    view = memoryview(buf)
    recv_into, send = rx.recv_into, tx.send
    try:
        while True:
            poller.poll()
            for _ in range(64):
                try:
                    n = recv_into(buf)
                except BlockingIOError:
                    break
                send(view[:n].tobytes())
    finally:
        ready.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
