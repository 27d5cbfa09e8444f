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
from typing import Any, Callable, Iterator

from controller import errors
from controller import p4names as N
from controller.jobs import REGIMES
from controller.documents import DocumentError, check_depth, loads_json, one_line, short
from controller.manager import NetworkController
from controller.policy import empty_policy, parse_policy, set_features, set_rule

MAX_MESSAGE = 4 << 20
REQUEST_TIMEOUT = 30.0   # seconds a client has to send its request line
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


U32_MAX = 0xFFFFFFFF


def _int(args: dict, name: str, lo: int, hi: int, *, optional: bool = False) -> int | None:
    """Argument ``name`` as an integer in [lo, hi] (a JSON integer: no floats, strings or booleans)."""
    if name not in args or args[name] is None:
        if optional:
            return None
        raise KeyError(name)
    v = args[name]
    if isinstance(v, bool) or not isinstance(v, int):
        raise errors.ConfigError(f"{name}: must be an integer in [{lo}, {hi}], got {short(v)}")
    if not lo <= v <= hi:
        raise errors.ConfigError(f"{name}: must be in [{lo}, {hi}], got {short(v)}")
    return v


def _bool(args: dict, name: str, default: bool) -> bool:
    v = args.get(name, default)
    if not isinstance(v, bool):
        raise errors.ConfigError(f"{name}: must be true or false, got {short(v)}")
    return v


def _name(args: dict, name: str, *, optional: bool = False) -> str | None:
    """Argument ``name`` as a non-empty string (a switch name)."""
    if name not in args or args[name] is None:
        if optional:
            return None
        raise KeyError(name)
    v = args[name]
    if not isinstance(v, str) or not v:
        raise errors.ConfigError(f"{name}: must be a non-empty string, got {short(v)}")
    return v


def _pair(args: dict, name: str, hi: int) -> tuple[int, int] | None:
    v = args.get(name)
    if v is None:
        return None
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise errors.ConfigError(f"{name}: expected [lo, hi], got {short(v)}")
    pair = {f"{name}[0]": v[0], f"{name}[1]": v[1]}
    lo, hi_ = _int(pair, f"{name}[0]", 0, hi), _int(pair, f"{name}[1]", 0, hi)
    if lo > hi_:   # type: ignore[operator]
        raise errors.ConfigError(f"{name}: lo {lo} is greater than hi {hi_}")
    return lo, hi_   # type: ignore[return-value]


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
    source = args.get("source")
    try:
        check_depth(args.get("document"))
        policy = parse_policy(args.get("document"))
    except DocumentError as exc:
        raise errors.PolicyError("document", str(exc), source if isinstance(source, str) else None)
    except errors.PolicyError as exc:
        raise exc.with_source(source) if isinstance(source, str) and source else exc
    return ctl.apply_policy(policy)


def _policy_clear(ctl: NetworkController, args: dict) -> Any:
    """Delete every class: only on an explicit ``{"confirm": true}``."""
    if args.get("confirm") is not True:
        raise errors.ConfigError("policy.clear deletes every installed class; "
                                 "send {\"confirm\": true} to do so")
    return ctl.apply_policy(empty_policy(), {})


_RULE_FIELDS = ("loss_bound", "pull_bound", "priority", "drop_eligible", "drop_threshold")
_JOB_SWITCHES = ("spray", "prioritize", "selective_drop")


def _policy_set(ctl: NetworkController, args: dict) -> Any:
    job = _int(args, "job", 0, (1 << N.JOB_ID_BITS) - 1)
    switches = {k: args[k] for k in _JOB_SWITCHES if args.get(k) is not None}
    for k, v in switches.items():
        if not isinstance(v, bool):
            raise errors.ConfigError(f"{k}: must be true or false, got {short(v)}")
    policy = ctl.state.policy
    layers = _pair(args, "layers", N.LAYER_ID_MAX)
    if layers is not None:
        fields = {k: args.get(k) for k in _RULE_FIELDS}
        policy = set_rule(policy, job, layers, _pair(args, "mag_classes", N.MAG_CLASS_MAX), **fields)
    elif any(args.get(k) is not None for k in (*_RULE_FIELDS, "mag_classes")):
        raise errors.ConfigError("policy.set: rule fields need layers (the rule's layer range)")
    elif not switches:
        raise errors.ConfigError("policy.set: nothing to change (give layers and rule fields, "
                                 "or a job switch: spray, prioritize, selective_drop)")
    if switches:
        policy = set_features(policy, job, **switches)
    return ctl.apply_policy(policy)


def _policy_phase(ctl: NetworkController, args: dict) -> Any:
    return ctl.set_job_state(_int(args, "job", 0, (1 << N.JOB_ID_BITS) - 1),  # type: ignore[arg-type]
                             _int(args, "round", 0, U32_MAX, optional=True),
                             _bool(args, "critical", False))


MAX_LAYERS = N.LAYER_ID_MAX + 1
_JOB_ID_MAX = (1 << N.JOB_ID_BITS) - 1


def _number(v: Any, name: str) -> float | None:
    """A finite non-negative JSON number, or None."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf"):
        raise errors.ConfigError(f"{name}: must be a non-negative number, got {short(v)}")
    return v


def _numbers(args: dict, name: str, layers: int, *, integers: bool = False) -> list | None:
    """A per-layer list of non-negative numbers (at most ``layers``), or None."""
    v = args.get(name)
    if v is None:
        return None
    if not isinstance(v, list) or len(v) > layers:
        raise errors.ConfigError(f"{name}: must be a list of at most {layers} numbers, got {short(v)}")
    out = [_number(x, f"{name}[{i}]") for i, x in enumerate(v)]
    if integers and any(not isinstance(x, int) for x in out):
        raise errors.ConfigError(f"{name}: must be integers, got {short(v)}")
    return out


def _job_policy(ctl: NetworkController, args: dict) -> Any:
    return ctl.job_view(_int(args, "job", 0, _JOB_ID_MAX),  # type: ignore[arg-type]
                        _int(args, "layers", 1, MAX_LAYERS))  # type: ignore[arg-type]


def _job_report(ctl: NetworkController, args: dict) -> Any:
    job = _int(args, "job", 0, _JOB_ID_MAX)
    layers = _int(args, "layers", 1, MAX_LAYERS)
    regime = args.get("regime")
    if regime is not None and regime not in REGIMES:
        raise errors.ConfigError(f"regime: must be one of {', '.join(REGIMES)} or null, got {short(regime)}")
    report = {"round": _int(args, "round", 0, U32_MAX), "regime": regime,
              "epoch": _int(args, "epoch", 0, U32_MAX, optional=True),
              "tele_max_qdepth": _int(args, "tele_max_qdepth", 0, U32_MAX, optional=True)}
    for name in ("push_s", "round_time_s", "deadline_s"):
        report[name] = _number(args.get(name), name)
    for name in ("delivered", "bounds"):
        report[name] = _numbers(args, name, layers)  # type: ignore[arg-type]
    report["violations"] = _numbers(args, "violations", layers, integers=True)  # type: ignore[arg-type]
    report["tele_qdelay_us"] = _int(args, "tele_qdelay_us", 0, U32_MAX, optional=True)
    report["deadline_adaptation"] = _adaptation(args.get("deadline_adaptation"))
    return ctl.job_report(job, layers, report)  # type: ignore[arg-type]


def _adaptation(value: Any) -> dict[str, Any] | None:
    """A PS's report of its Early Close deadline change: {round, deadline_ms, previous_ms, reason}."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"round", "deadline_ms", "previous_ms", "reason"}:
        raise errors.ConfigError("deadline_adaptation: must be {round, deadline_ms, previous_ms, "
                                 f"reason}} or null, got {short(value)}")
    out = {"round": _int(value, "round", 0, U32_MAX)}
    for name in ("deadline_ms", "previous_ms"):
        out[name] = _number(value.get(name), name)
    if not isinstance(value["reason"], str) or len(value["reason"]) > 200:
        raise errors.ConfigError("deadline_adaptation.reason: must be a short string")
    out["reason"] = value["reason"]
    return out


def _phase_show(ctl: NetworkController, args: dict) -> Any:
    return ctl.phase_status(_int(args, "job", 0, _JOB_ID_MAX, optional=True))


def _pcn_set(ctl: NetworkController, args: dict) -> Any:
    return ctl.set_pcn(_name(args, "switch"), _int(args, "port", 0, 511),  # type: ignore[arg-type]
                       _int(args, "threshold", 0, U32_MAX, optional=True),
                       _int(args, "normal", 0, U32_MAX, optional=True))


COMMANDS: dict[str, Callable[[NetworkController, dict], Any]] = {
    "ping": lambda ctl, a: {"pid": os.getpid(), "topology": ctl.topology.name,
                            "ready": ctl.ready.is_set()},
    "switches": lambda ctl, a: ctl.switch_status(),
    "policy.show": _policy_show,
    "policy.apply": _policy_apply,
    "policy.clear": _policy_clear,
    "policy.set": _policy_set,
    "policy.phase": _policy_phase,
    "policy.phase.show": _phase_show,
    "job.policy": _job_policy,
    "job.report": _job_report,
    "jobs": lambda ctl, a: ctl.jobs_status(),
    "stats": lambda ctl, a: ctl.stats(_name(a, "switch", optional=True)),
    "pcn.show": lambda ctl, a: ctl.pcn_table(),
    "pcn.set": _pcn_set,
    "pcn.jobs": lambda ctl, a: ctl.pcn_jobs(),
    "pcn.adapt": lambda ctl, a: ctl.adapt_pcn(),
}


def handle(ctl: NetworkController, cmd: str, args: dict | None = None) -> Any:
    """Run one API command; raises ControllerError subclasses on failure."""
    fn = COMMANDS.get(cmd)
    if fn is None:
        raise errors.ConfigError(f"unknown command '{cmd if len(cmd) <= 40 else cmd[:37] + '...'}'")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise errors.ConfigError(f"{cmd}: args must be a mapping, got {short(args)}")
    try:
        return fn(ctl, dict(args))
    except KeyError as exc:
        raise errors.ConfigError(f"{cmd}: missing argument {exc}") from None
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise errors.ConfigError(f"{cmd}: bad argument ({one_line(str(exc))})") from None


def respond(ctl: NetworkController, request: Any) -> dict[str, Any]:
    """The JSON response to one decoded request (errors become ``ok: false``)."""
    if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
        return {"ok": False, "error": "request must be {\"cmd\": ..., \"args\": {...}}",
                "type": "ConfigError"}
    try:
        return {"ok": True, "result": handle(ctl, request["cmd"], request.get("args"))}
    except errors.ControllerError as exc:
        return {"ok": False, "error": one_line(str(exc), 1000), "type": type(exc).__name__}
    except Exception as exc:  # noqa: BLE001 - every request gets an answer, never a dead handler
        return {"ok": False, "error": f"internal error: {type(exc).__name__}: {one_line(str(exc))}",
                "type": "ControllerError"}


class _Handler(socketserver.StreamRequestHandler):
    timeout = REQUEST_TIMEOUT   # a client that never finishes its line does not keep a thread

    def handle(self) -> None:
        try:
            line = self.rfile.readline(MAX_MESSAGE + 1)
        except OSError:         # timed out or reset before a whole request arrived
            return
        if len(line) > MAX_MESSAGE:
            response = {"ok": False, "error": f"request larger than {MAX_MESSAGE} bytes",
                        "type": "ConfigError"}
        else:
            try:
                request = loads_json(line)
            except DocumentError as exc:
                response = {"ok": False, "error": f"request is not JSON within bounds: {exc}",
                            "type": "ConfigError"}
            else:
                response = respond(self.server.controller, request)  # type: ignore[attr-defined]
        try:
            self.wfile.write(json.dumps(response).encode() + b"\n")
        except OSError:
            pass   # the client went away


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


def call(path: Path, cmd: str, args: dict | None = None, timeout: float = 60.0) -> Any:
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


def ping(path: Path) -> dict | None:
    """The daemon's ping answer, or None when nothing answers on ``path``."""
    try:
        return call(path, "ping", timeout=3.0)
    except errors.ControllerError:
        return None
