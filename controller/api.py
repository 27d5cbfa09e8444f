"""The controller's local control API: JSON lines over a unix socket.

One request per connection: ``{"cmd": NAME, "args": {...}}`` -> ``{"ok": true, "result": ...}``
or ``{"ok": false, "error": MESSAGE, "type": ERROR_CLASS}``. :func:`handle` executes a command
on a :class:`NetworkController`; the daemon serves it, and ``gradctl --direct`` calls it in
process. Only the daemon holds mastership, so CLI users never fight it over a switch.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import socketserver
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from controller import errors
from controller.manager import NetworkController
from controller.policy import parse_policy, set_features, set_rule

MAX_MESSAGE = 16 << 20
_SUN_PATH_MAX = 100   # AF_UNIX paths are limited to 107 bytes


@contextlib.contextmanager
def _short_path(path: Path) -> Iterator[str]:
    """A name for ``path`` that fits in a unix socket address (relative to its folder if needed).

    Long paths (deep test or log folders) are reached by changing into their folder for the
    duration of the bind/connect; callers do this before starting other threads.
    """
    if len(os.fsencode(str(path))) <= _SUN_PATH_MAX:
        yield str(path)
        return
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        yield path.name
    finally:
        os.chdir(cwd)


def _pair(v: Any, what: str) -> tuple[int, int]:
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise errors.ConfigError(f"{what}: expected [lo, hi]")
    return int(v[0]), int(v[1])


def _policy_show(ctl: NetworkController, args: dict) -> Any:
    return {"policy": dict(ctl.state.policy.document),
            "classes": [{"slot": i.slot, "job": i.job_id, "name": i.job_name,
                         "layers": list(i.layers), "mag_classes": list(i.mag_classes),
                         "loss_bound": i.loss_bound, "pull_bound": i.pull_bound,
                         "priority": i.priority, "drop_eligible": i.drop_eligible}
                        for i in ctl.slot_infos()],
            "jobs": [{"job": j.job_id, "name": j.name, "spray": j.features.spray,
                      "prioritize": j.features.prioritize,
                      "selective_drop": j.features.selective_drop}
                     for j in ctl.state.policy.jobs],
            "job_states": {str(j): {"round": s.round, "critical": s.critical}
                           for j, s in ctl.state.job_states.items()}}


def _policy_apply(ctl: NetworkController, args: dict) -> Any:
    try:
        policy = parse_policy(args.get("document"))
    except errors.PolicyError as exc:
        raise exc.with_source(args["source"]) if args.get("source") else exc
    return ctl.apply_policy(policy)


_RULE_FIELDS = ("loss_bound", "pull_bound", "priority", "drop_eligible", "drop_threshold")
_JOB_SWITCHES = ("spray", "prioritize", "selective_drop")


def _policy_set(ctl: NetworkController, args: dict) -> Any:
    job = int(args["job"])
    switches = {k: args.get(k) for k in _JOB_SWITCHES if args.get(k) is not None}
    for k, v in switches.items():
        if not isinstance(v, bool):
            raise errors.ConfigError(f"{k}: expected true or false, got {v!r}")
    policy = ctl.state.policy
    if args.get("layers") is not None:
        mags = _pair(args["mag_classes"], "mag_classes") if args.get("mag_classes") is not None else None
        fields = {k: args.get(k) for k in _RULE_FIELDS}
        policy = set_rule(policy, job, _pair(args["layers"], "layers"), mags, **fields)
    elif any(args.get(k) is not None for k in (*_RULE_FIELDS, "mag_classes")):
        raise errors.ConfigError("policy.set: rule fields need layers (the rule's layer range)")
    elif not switches:
        raise errors.ConfigError("policy.set: nothing to change (give layers and rule fields, "
                                 "or a job switch: spray, prioritize, selective_drop)")
    if switches:
        policy = set_features(policy, job, **switches)
    return ctl.apply_policy(policy)


def _policy_phase(ctl: NetworkController, args: dict) -> Any:
    rnd = args.get("round")
    return ctl.set_job_state(int(args["job"]), None if rnd is None else int(rnd),
                             bool(args.get("critical", False)))


COMMANDS: dict[str, Callable[[NetworkController, dict], Any]] = {
    "ping": lambda ctl, a: {"pid": os.getpid(), "topology": ctl.topology.name,
                            "ready": ctl.ready.is_set()},
    "switches": lambda ctl, a: ctl.switch_status(),
    "policy.show": _policy_show,
    "policy.apply": _policy_apply,
    "policy.set": _policy_set,
    "policy.phase": _policy_phase,
    "stats": lambda ctl, a: ctl.stats(a.get("switch")),
    "pcn.show": lambda ctl, a: ctl.pcn_table(),
    "pcn.set": lambda ctl, a: ctl.set_pcn(str(a["switch"]), int(a["port"]), a.get("threshold"),
                                          a.get("normal")),
}


def handle(ctl: NetworkController, cmd: str, args: Optional[dict] = None) -> Any:
    """Run one API command; raises ControllerError subclasses on failure."""
    fn = COMMANDS.get(cmd)
    if fn is None:
        raise errors.ConfigError(f"unknown command '{cmd}'")
    try:
        return fn(ctl, dict(args or {}))
    except KeyError as exc:
        raise errors.ConfigError(f"{cmd}: missing argument {exc}") from None
    except (TypeError, ValueError) as exc:
        raise errors.ConfigError(f"{cmd}: bad argument ({exc})") from None


def respond(ctl: NetworkController, request: Any) -> dict[str, Any]:
    """The JSON response to one decoded request (errors become ``ok: false``)."""
    if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
        return {"ok": False, "error": "request must be {\"cmd\": ..., \"args\": {...}}",
                "type": "ConfigError"}
    try:
        return {"ok": True, "result": handle(ctl, request["cmd"], request.get("args"))}
    except errors.ControllerError as exc:
        return {"ok": False, "error": str(exc), "type": type(exc).__name__}


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline(MAX_MESSAGE)
        try:
            request = json.loads(line)
        except ValueError:
            response = {"ok": False, "error": "request is not JSON", "type": "ConfigError"}
        else:
            response = respond(self.server.controller, request)  # type: ignore[attr-defined]
        self.wfile.write(json.dumps(response).encode() + b"\n")


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class ApiServer:
    """Serves :func:`handle` on a unix socket until ``stop()``."""

    def __init__(self, ctl: NetworkController, path: Path) -> None:
        self.path = Path(path)
        if self.path.exists():
            if ping(self.path) is not None:
                raise errors.DaemonError(f"another controller daemon answers on {self.path}")
            self.path.unlink()  # stale socket of a daemon that died
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with _short_path(self.path) as name:
                self._server = _Server(name, _Handler)
        except OSError as exc:
            raise errors.DaemonError(f"cannot listen on {self.path}: {exc.strerror or exc}") from None
        self._server.controller = ctl  # type: ignore[attr-defined]
        os.chmod(self.path, 0o600)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="controller-api")

    def start(self) -> "ApiServer":
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and remove the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def call(path: Path, cmd: str, args: Optional[dict] = None, timeout: float = 60.0) -> Any:
    """Send one command to the daemon on ``path``; raises the daemon's error type on failure."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            with _short_path(Path(path)) as name:
                sock.connect(name)
            sock.sendall(json.dumps({"cmd": cmd, "args": args or {}}).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = sock.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
    except FileNotFoundError:
        raise errors.DaemonError(f"no controller daemon at {path} (start `python -m controller.daemon`, "
                                 "or use --direct)") from None
    except ConnectionRefusedError:
        raise errors.DaemonError(f"controller daemon at {path} is not running (stale socket)") from None
    except socket.timeout:
        raise errors.DaemonError(f"controller daemon at {path} did not answer within {timeout:g}s") from None
    except OSError as exc:
        raise errors.DaemonError(f"cannot reach controller daemon at {path}: {exc.strerror or exc}") from None
    try:
        response = json.loads(data)
    except ValueError:
        raise errors.DaemonError(f"controller daemon at {path} sent a malformed answer") from None
    if not response.get("ok"):
        cls = getattr(errors, str(response.get("type")), None)
        message = str(response.get("error", "unknown error"))
        if isinstance(cls, type) and issubclass(cls, errors.ControllerError):
            raise errors.RemoteError(message, cls.__name__)
        raise errors.RemoteError(message, "ControllerError")
    return response.get("result")


def ping(path: Path) -> Optional[dict]:
    """The daemon's ping answer, or None when nothing answers on ``path``."""
    try:
        return call(path, "ping", timeout=3.0)
    except errors.ControllerError:
        return None
