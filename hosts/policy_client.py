"""The host agents' client of the controller's job policy (docs/contracts.md, Job policy).

One JSON line per unix-socket connection, as the controller's API speaks it. ``job.policy``
gives the view a host follows (bounds, drop-eligible magnitude classes, hole filling, regime,
policy epoch) and, while a change is pending, the previous view for the rounds before its
``effective_round``; the parameter server's ``job.report`` of each round answers with the same.
The hosts never import the controller: this module is their whole side of the protocol.
"""
from __future__ import annotations

import json
import math
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hosts.errors import ControllerUnreachable
from hosts.transport.bounds import LayerBounds
from hosts.transport.deadline import MODES as DEADLINE_MODES

MAX_ANSWER = 4 << 20
MAG_CLASSES = 8


@dataclass(frozen=True)
class HostPolicy:
    """One policy generation of a job, as its hosts apply it."""

    epoch: int
    wire_epoch: int
    bounds: LayerBounds
    droppable: tuple[frozenset[int], ...]
    hole_fill: str | None
    regime: str
    set_by: str
    early_close: str | None = None   # the Early Close law the policy names (None = the flag's)

    def summary(self) -> dict[str, Any]:
        """The generation for a JSON log record."""
        return {"epoch": self.epoch, "wire_epoch": self.wire_epoch,
                "push_bounds": list(self.bounds.push), "pull_bounds": list(self.bounds.pull),
                "droppable": [sorted(d) for d in self.droppable], "hole_fill": self.hole_fill,
                "early_close": self.early_close,
                "regime": self.regime, "set_by": self.set_by}


@dataclass(frozen=True)
class PolicyView:
    """The job's current generation, the round it applies from, and the one before it."""

    current: HostPolicy
    effective_round: int
    previous: HostPolicy | None
    switch_push: dict[str, int] | None = None

    def at(self, round_: int) -> HostPolicy:
        """The generation in effect in ``round_``."""
        if self.previous is not None and round_ < self.effective_round:
            return self.previous
        return self.current


class PolicyClient:
    """Talks to the controller's unix socket ``path`` on behalf of job ``job``."""

    def __init__(self, path: str | Path, job: int, layers: int, timeout: float = 10.0) -> None:
        self.path = Path(path)
        self.job = job
        self.layers = layers
        self.timeout = timeout

    def call(self, cmd: str, args: dict[str, Any]) -> Any:
        """One request; ControllerUnreachable (one line) when nothing answers or it refuses."""
        where = f"controller at {self.path}"
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(self.timeout)
                _connect(sock, self.path)
                sock.sendall(json.dumps({"cmd": cmd, "args": args}).encode() + b"\n")
                data = b""
                while not data.endswith(b"\n") and len(data) <= MAX_ANSWER:
                    chunk = sock.recv(1 << 16)
                    if not chunk:
                        break
                    data += chunk
        except FileNotFoundError:
            raise ControllerUnreachable(f"no {where} (is the controller daemon running? "
                                        "drop --controller to use the flags)") from None
        except ConnectionRefusedError:
            raise ControllerUnreachable(f"{where} is not running (stale socket)") from None
        except socket.timeout:
            raise ControllerUnreachable(f"{where} did not answer within {self.timeout:g} s") from None
        except OSError as exc:
            raise ControllerUnreachable(f"cannot reach {where}: {exc.strerror or exc}") from None
        try:
            answer = json.loads(data)
        except ValueError:
            raise ControllerUnreachable(f"{where} sent a malformed answer") from None
        if not isinstance(answer, dict) or not answer.get("ok"):
            error = answer.get("error", "unknown error") if isinstance(answer, dict) else "bad answer"
            raise ControllerUnreachable(f"{where} refused {cmd} for job {self.job}: {error}")
        return answer.get("result")

    def fetch(self) -> PolicyView:
        """The job's view now (``job.policy``)."""
        return self._view(self.call("job.policy", {"job": self.job, "layers": self.layers}))

    def report(self, round_: int, **stats: Any) -> PolicyView:
        """The PS's report of ``round_`` (``job.report``); the view it answers with."""
        return self._view(self.call("job.report", {"job": self.job, "layers": self.layers,
                                                   "round": round_, **stats}))

    def _view(self, result: Any) -> PolicyView:
        try:
            current = self._generation(result)
            previous = self._generation(result["previous"]) if result.get("previous") else None
            effective = result["effective_round"]
            if isinstance(effective, bool) or not isinstance(effective, int) or effective < 0:
                raise ValueError("effective_round")
            switch = result.get("switch_push")
            return PolicyView(current, effective, previous,
                              switch if isinstance(switch, dict) else None)
        except (KeyError, TypeError, ValueError) as exc:
            raise ControllerUnreachable(f"controller at {self.path} sent a malformed job view "
                                        f"({exc})") from None

    def _generation(self, v: dict[str, Any]) -> HostPolicy:
        push = _bounds(v["push_bounds"], self.layers)
        pull = _bounds(v["pull_bounds"], self.layers)
        droppable = tuple(frozenset(int(m) for m in mags if 0 <= int(m) < MAG_CLASSES)
                          for mags in v["droppable"])
        if len(droppable) != self.layers:
            raise ValueError("droppable")
        phase = v.get("phase") or {}
        return HostPolicy(int(v["epoch"]), int(v["wire_epoch"]) & 0xFF, LayerBounds(push, pull),
                          droppable, v.get("hole_fill"), str(phase.get("regime", "normal")),
                          str(phase.get("set_by", "policy")), _early_close(v.get("early_close")))


def _early_close(value: Any) -> str | None:
    if value is None:
        return None
    if value not in DEADLINE_MODES:
        raise ValueError(f"early_close {value!r}")
    return str(value)


def _bounds(values: Any, layers: int) -> tuple[float, ...]:
    out = tuple(float(b) for b in values)
    if len(out) != layers or not all(math.isfinite(b) and 0.0 <= b <= 1.0 for b in out):
        raise ValueError(f"bounds {values!r}")
    return out


def _connect(sock: socket.socket, path: Path) -> None:
    """Connect, through the folder when the path is longer than a socket address allows."""
    if len(os.fsencode(str(path))) <= 100:
        sock.connect(str(path))
        return
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        sock.connect(path.name)
    finally:
        os.chdir(cwd)
