"""simple_switch / simple_switch_grpc command-line flags parsed into a `SwitchOptions` value.

Every flag `simple_switch --help` and `simple_switch_grpc --help` list is read with BMv2's
syntax (`program_options`) and rules: general flags first, target flags after `--`. Flags that
only shape BMv2's logging are accepted and have no effect; the few whose effect this switch
cannot provide are refused with a message saying so. `--thrift-ip` is ours (BMv2 has no way to
choose the Thrift address; it listens on all of them, our default too), and so is
`--thrift-any-user`: without it the Thrift server serves only clients on this machine that run
as the switch's user or root (BMv2 serves anyone who reaches the port).
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any

from p4target.switch.errors import OptionError
from p4target.switch.links.impairments import parse_impairment
from p4target.switch.program_options import OptionSyntax, Spec

DEFAULT_THRIFT_PORT = 9090
DEFAULT_THRIFT_IP = "0.0.0.0"  # BMv2's Thrift server listens on every address and has no flag for it
DEFAULT_GRPC_ADDR = "0.0.0.0:9559"
LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")
DEFAULT_LOG_FILE_MAX_SIZE = 5 * 1024 * 1024  # BMv2: a log file rotates at 5 MB ...
DEFAULT_LOG_FILE_MAX_FILES = 3  # ... and 3 rotated files are kept
DEFAULT_MAX_PORT_COUNT = 512
DEFAULT_DROP_PORT = 511
INT_MAX = 2**31 - 1
JSON_VERSION = "2.24"  # the highest BMv2 JSON version BMv2 1.15 reads, as `--json-version` prints
VERSION = "1.15.5-p4target"


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of `--grpc-server-ssl` (simple_switch_grpc's TLS flags)."""

    cert: str
    key: str
    cacert: str | None = None
    with_client_auth: bool = False


@dataclass(frozen=True)
class SwitchOptions:
    """Everything the switch process needs from its command line."""

    interfaces: dict[int, str] = field(default_factory=dict)
    device_id: int = 0
    json_path: str | None = None
    no_p4: bool = False
    pcap_dir: str | None = None
    log_file: str | None = None
    log_console: bool = False
    log_level: str = "trace"  # BMv2's default: every packet is logged unless -L says otherwise
    log_file_max_size: int = DEFAULT_LOG_FILE_MAX_SIZE
    log_file_max_files: int = DEFAULT_LOG_FILE_MAX_FILES
    thrift_port: int = DEFAULT_THRIFT_PORT
    thrift_ip: str = DEFAULT_THRIFT_IP
    thrift_any_user: bool = False  # ours: serve Thrift clients of every user and host (BMv2 does)
    use_files_wait: int | None = None
    grpc_server_addr: str = DEFAULT_GRPC_ADDR
    grpc_addr_given: bool = False  # --grpc-server-addr given: failing to listen there is fatal
    grpc_tls: TlsFiles | None = None
    cpu_port: int | None = None
    priority_queues: int = 1
    impairments: tuple[str, ...] = ()
    port_rates: tuple[tuple[int, float], ...] = ()
    port_byte_rates: tuple[tuple[int, float], ...] = ()
    # accepted as BMv2 accepts them; they only shape BMv2's own logging or limits
    log_flush: bool = False
    dump_packet_data: int = 0
    max_port_count: int = DEFAULT_MAX_PORT_COUNT
    notes: tuple[str, ...] = ()  # what BMv2 would print about the flags (warnings, ignored ones)
    show: str | None = None  # "help", "version" or "json-version": print it and exit 0


def _general_syntax() -> OptionSyntax:
    """simple_switch's general options (BMv2 `options_parse.cpp`) plus ours."""
    return OptionSyntax([
        Spec("help", "h", takes_value=False),
        Spec("interface", "i", repeatable=True),
        Spec("pcap", implicit="."),
        Spec("use-files"),
        Spec("packet-in"),
        Spec("thrift-port"),
        Spec("device-id"),
        Spec("nanolog"),
        Spec("log-console", takes_value=False),
        Spec("log-file"),
        Spec("log-level", "L"),
        Spec("log-flush", takes_value=False),
        Spec("log-file-max-size"),
        Spec("log-file-max-files"),
        Spec("notifications-addr"),
        Spec("debugger", takes_value=False),
        Spec("debugger-addr"),
        Spec("restore-state"),
        Spec("dump-packet-data"),
        Spec("version", "v", takes_value=False),
        Spec("json-version", takes_value=False),
        Spec("no-p4", takes_value=False),
        Spec("max-port-count"),
        # ours
        Spec("thrift-ip", ours=True),
        Spec("thrift-any-user", takes_value=False, ours=True),
        Spec("impair", repeatable=True, ours=True),
        Spec("port-rate", repeatable=True, ours=True),
        Spec("port-byte-rate", repeatable=True, ours=True),
    ])


def _target_syntax() -> OptionSyntax:
    """Target options after `--`: simple_switch's and simple_switch_grpc's together."""
    return OptionSyntax([
        Spec("enable-swap", takes_value=False),
        Spec("disable-swap", takes_value=False),
        Spec("grpc-server-addr"),
        Spec("grpc-server-ssl", takes_value=False),
        Spec("grpc-server-cacert"),
        Spec("grpc-server-cert"),
        Spec("grpc-server-key"),
        Spec("grpc-server-with-client-auth", takes_value=False),
        Spec("cpu-port"),
        Spec("drop-port"),
        Spec("dp-grpc-server-addr"),
        Spec("priority-queues"),
        Spec("max-mc-groups"),
        Spec("max-l1-entries"),
        Spec("max-l2-entries"),
        Spec("load-modules"),
    ])


# flags BMv2 takes whose effect this switch cannot provide: refused rather than silently wrong
_UNSUPPORTED = {
    "packet-in": "nanomsg packet I/O (--packet-in) is not supported; use -i PORT@IFACE or --use-files",
    "restore-state": "--restore-state is not supported (BMv2's state file format is not read)",
    "dp-grpc-server-addr": "--dp-grpc-server-addr (dataplane over gRPC) is not supported",
    "load-modules": "--load-modules is not supported (no shared-library externs)",
}
# flags that only affect BMv2's logging, event publishing or debugger: accepted, no effect here
_LOGGING_ONLY = ("nanolog", "notifications-addr", "debugger", "debugger-addr")


def _parse_interface(text: str) -> tuple[int, str]:
    """`PORT@IFACE` as BMv2 reads it: the port is std::stoi of the text before the first '@'
    (leading spaces and a sign allowed, trailing characters ignored), the name the rest."""
    head, sep, iface = text.partition("@")
    match = re.match(r"\s*([+-]?\d+)", head)
    if not sep or match is None:
        raise OptionError(f"bad interface '{text}': expected PORT@IFACE, e.g. 1@veth0")
    port = int(match.group(1))
    if not 0 <= port < 2**32:
        raise OptionError(f"bad interface '{text}': port {port} out of range")
    if not iface:
        raise OptionError(f"bad interface '{text}': no interface name after '@'")
    return port, iface


def _int(values: dict, name: str, low: int = 0, high: int = 2**64 - 1) -> int | None:
    """The integer value of `--name`, checked to [low, high]; None when not given."""
    text = values.get(name)
    if text is None:
        return None
    try:
        value = int(str(text).strip(), 10)
    except ValueError:
        raise OptionError(f"the argument ('{text}') for option '--{name}' is invalid") from None
    if not low <= value <= high:
        raise OptionError(f"the argument ('{text}') for option '--{name}' is out of range [{low}, {high}]")
    return value


def _check_addr(addr: str) -> None:
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise OptionError(f"bad --grpc-server-addr '{addr}': expected HOST:PORT")


def _check_ip(addr: str) -> None:
    try:
        ipaddress.ip_address(addr)
    except ValueError:
        raise OptionError(f"bad --thrift-ip '{addr}': expected an IPv4 or IPv6 address, e.g. 127.0.0.1") from None


def _tls(target: dict) -> TlsFiles | None:
    """simple_switch_grpc's TLS flag rules."""
    ssl = bool(target.get("grpc-server-ssl"))
    cert, key, ca = (target.get(k) for k in ("grpc-server-cert", "grpc-server-key", "grpc-server-cacert"))
    client_auth = bool(target.get("grpc-server-with-client-auth"))
    if not ssl:
        if cert or key or ca:
            raise OptionError("--grpc-server-cacert, --grpc-server-cert and --grpc-server-key need --grpc-server-ssl")
        if client_auth:
            raise OptionError("--grpc-server-with-client-auth needs --grpc-server-ssl")
        return None
    if not cert:
        raise OptionError("--grpc-server-ssl needs --grpc-server-cert")
    if not key:
        raise OptionError("--grpc-server-ssl needs --grpc-server-key")
    return TlsFiles(cert=str(cert), key=str(key), cacert=str(ca) if ca else None, with_client_auth=client_auth)


def parse_options(argv: list[str]) -> SwitchOptions:
    """Parse simple_switch / simple_switch_grpc flags as BMv2 does (target flags after `--`);
    raises OptionError naming the bad flag. Each section below checks its flags in BMv2's
    order and adds what BMv2 would print about them to ``notes``."""
    general = _general_syntax().parse(argv)
    g = general.values
    for name in ("help", "version", "json-version"):
        if name in g:
            return SwitchOptions(no_p4=True, show=name)
    _refuse_unsupported(g)
    notes: list[str] = []
    fields = _program(general.positionals, "no-p4" in g, notes)
    fields["interfaces"] = _interfaces(g)
    fields.update(_logging(g, notes))
    fields.update(_ports_and_files(g, len(fields["interfaces"])))
    for name in _LOGGING_ONLY:
        if name in g:
            notes.append(f"--{name} has no effect on this switch (BMv2 logging/debugging only)")
    fields.update(_link_extensions(g))
    fields.update(_target(general.after_separator, notes))
    return SwitchOptions(**fields, notes=tuple(notes))


def _refuse_unsupported(values: dict) -> None:
    for name, why in _UNSUPPORTED.items():
        if name in values:
            raise OptionError(why)


def _program(positionals: list[str], no_p4: bool, notes: list[str]) -> dict[str, Any]:
    """The BMv2 JSON file (the first positional) or `--no-p4`."""
    rest = list(positionals)
    json_path = rest.pop(0) if rest else None
    if no_p4 and json_path is not None:
        notes.append("Warning: ignoring input config as '--no-p4' was used")
        json_path = None
    if not no_p4 and json_path is None:
        raise OptionError("missing program: give a BMv2 JSON file or --no-p4")
    if rest:  # BMv2 hands them to the target parser, which knows no positionals
        raise OptionError(f"unexpected argument '{rest[0]}' after the JSON file")
    return {"json_path": json_path, "no_p4": no_p4}


def _interfaces(g: dict) -> dict[int, str]:
    """`-i PORT@IFACE`, each port once."""
    interfaces: dict[int, str] = {}
    for text in g.get("interface", []):  # type: ignore[union-attr]
        port, iface = _parse_interface(str(text))
        if port in interfaces:
            raise OptionError(f"port {port} given twice (-i {port}@{interfaces[port]} and -i {text})")
        interfaces[port] = iface
    return interfaces


def _logging(g: dict, notes: list[str]) -> dict[str, Any]:
    """Where and how much the switch logs (the rotation flags count with `--log-file` only)."""
    if "log-console" in g and "log-file" in g:
        raise OptionError("--log-console and --log-file are exclusive")
    log_level = str(g.get("log-level", "trace"))
    if log_level not in LOG_LEVELS:
        raise OptionError(f"invalid value '{log_level}' for --log-level (one of {', '.join(LOG_LEVELS)})")
    for name in ("log-flush", "log-file-max-size", "log-file-max-files"):
        if name in g and "log-file" not in g:
            notes.append(f"Ignoring --{name} option because --log-file not specified")
    max_size = _int(g, "log-file-max-size")
    if max_size == 0 and "log-file" in g:
        raise OptionError("--log-file-max-size must be greater than 0")
    max_files = _int(g, "log-file-max-files")
    return {"log_file": str(g["log-file"]) if "log-file" in g else None,
            "log_console": "log-console" in g,
            "log_level": log_level,
            "log_file_max_size": DEFAULT_LOG_FILE_MAX_SIZE if not max_size else max_size,
            "log_file_max_files": DEFAULT_LOG_FILE_MAX_FILES if max_files is None else max_files,
            "log_flush": "log-flush" in g,
            "dump_packet_data": _int(g, "dump-packet-data") or 0}


def _ports_and_files(g: dict, interfaces: int) -> dict[str, Any]:
    """Device id, Thrift address, packet files and the port count limit."""
    device_id = _int(g, "device-id") or 0
    thrift_port = _int(g, "thrift-port", -(2**31), INT_MAX)
    if thrift_port is not None and not 0 <= thrift_port < 65536:
        raise OptionError(f"bad --thrift-port {thrift_port}")
    use_files = _int(g, "use-files", -(2**31), INT_MAX)
    if use_files is not None and use_files < 0:
        use_files = 0  # BMv2 waits 0 s for a negative WAIT
    max_ports = _int(g, "max-port-count", -(2**31), INT_MAX)
    if max_ports is not None and max_ports < 0:
        raise OptionError("invalid --max-port-count argument, cannot be negative")
    max_ports = DEFAULT_MAX_PORT_COUNT if max_ports is None else max_ports
    if interfaces > max_ports:
        raise OptionError(f"{interfaces} interfaces given, more than --max-port-count {max_ports}")
    thrift_ip = str(g.get("thrift-ip", DEFAULT_THRIFT_IP))
    _check_ip(thrift_ip)
    return {"device_id": device_id,
            "thrift_port": DEFAULT_THRIFT_PORT if thrift_port is None else thrift_port,
            "thrift_ip": thrift_ip, "thrift_any_user": "thrift-any-user" in g,
            "use_files_wait": use_files,
            "pcap_dir": str(g["pcap"]) if "pcap" in g else None,
            "max_port_count": max_ports}


def _link_extensions(g: dict) -> dict[str, Any]:
    """Our `--impair`, `--port-rate` and `--port-byte-rate` (not BMv2 flags), each spec checked."""
    impairments = tuple(str(x) for x in g.get("impair", []))  # type: ignore[union-attr]
    for spec in impairments:
        parse_impairment(spec)
    port_rates = tuple(parse_port_rate(str(spec)) for spec in g.get("port-rate", []))  # type: ignore[union-attr]
    port_byte_rates = tuple(parse_port_rate(str(spec), "port-byte-rate", "BYTES_PER_S")
                            for spec in g.get("port-byte-rate", []))  # type: ignore[union-attr]
    return {"impairments": impairments, "port_rates": port_rates, "port_byte_rates": port_byte_rates}


def _target(argv: list[str], notes: list[str]) -> dict[str, Any]:
    """The target flags after `--` (simple_switch_grpc's gRPC server, ports, queues)."""
    target = _target_syntax().parse(argv)
    t = target.values
    if target.positionals:
        raise OptionError(f"unexpected target argument '{target.positionals[0]}' after --")
    if target.after_separator:
        raise OptionError("'--' given twice")
    _refuse_unsupported(t)
    grpc_addr = str(t.get("grpc-server-addr", DEFAULT_GRPC_ADDR))
    _check_addr(grpc_addr)
    cpu_port = _int(t, "cpu-port", 0, 2**32 - 1)
    if cpu_port == 0:
        raise OptionError("invalid --cpu-port 0 (0 is not a valid CPU port)")
    drop_port = _int(t, "drop-port", 0, 2**32 - 1)
    if drop_port is not None and drop_port != DEFAULT_DROP_PORT:
        raise OptionError(f"--drop-port {drop_port} is not supported: this switch drops on port {DEFAULT_DROP_PORT} only")
    priority_queues = _int(t, "priority-queues", 0, 2**32 - 1)
    priority_queues = 1 if priority_queues is None else priority_queues
    if not 1 <= priority_queues <= 8:
        raise OptionError("--priority-queues must be between 1 and 8")
    for name in ("max-mc-groups", "max-l1-entries", "max-l2-entries"):
        if _int(t, name, 1, INT_MAX) is not None:
            notes.append(f"--{name} is accepted but not enforced by this switch")
    if "enable-swap" in t and "disable-swap" in t:
        raise OptionError("give either --enable-swap or --disable-swap, not both")
    return {"grpc_server_addr": grpc_addr, "grpc_addr_given": "grpc-server-addr" in t,
            "grpc_tls": _tls(t), "cpu_port": cpu_port, "priority_queues": priority_queues}


def parse_port_rate(spec: str, flag: str = "port-rate", unit: str = "PPS") -> tuple[int, float]:
    """`PORT:RATE` of our `--port-rate` (RATE in packets/s) and `--port-byte-rate` (bytes/s)
    extensions: one shaper for the whole egress port (all its priority queues together), which
    BMv2's per-queue, packet-counting `set_queue_rate` cannot express."""
    port_text, sep, rate_text = spec.partition(":")
    try:
        port, rate = int(port_text), float(rate_text)
    except ValueError:
        port, rate = -1, 0.0
    if not sep or port < 0 or not 0 < rate < float("inf"):
        raise OptionError(f"bad --{flag} '{spec}': expected PORT:{unit} with PORT >= 0 and {unit} > 0")
    return port, rate
