"""The control channel between the DDP hook of each rank and the parameter server: one TCP
connection per rank, JSON objects one per line, for what is not gradients.

rank -> PS: {"type": "register", "rank", "world", "layout"} once, {"type": "bye"} at the end.
PS -> rank: {"type": "ready", "port"} (the exchange's UDP or TCP port) once every rank
registered the same layout; {"type": "abort", "message"} when the job cannot go on (a rank
left without its goodbye, a layout differs); then it closes the connection.
A rank whose connection closes without its goodbye has left the job.
"""
from __future__ import annotations

import json
import socket

from hosts.errors import ConfigError

MAX_LINE = 1 << 20    # a layout of a few thousand parameter names fits


def send(sock: socket.socket, message: dict) -> bool:
    """Send one message; False when the peer is gone."""
    try:
        sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        return True
    except OSError:
        return False


class Reader:
    """Messages from one connection, one line at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buf = b""

    def next(self) -> dict | None:
        """The next message, or None when the peer closed the connection (or it broke).
        ConfigError on a line that is not a JSON object or is longer than MAX_LINE."""
        while b"\n" not in self._buf:
            if len(self._buf) > MAX_LINE:
                raise ConfigError(f"control message longer than {MAX_LINE} bytes")
            try:
                data = self.sock.recv(65536)
            except OSError:
                return None
            if not data:
                return None
            self._buf += data
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:
            raise ConfigError("control message is not JSON") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise ConfigError("control message is not a JSON object with a type")
        return message
