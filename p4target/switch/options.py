"""simple_switch_grpc command-line flags parsed into a `SwitchOptions` value.

Target flags come first; gRPC-server flags follow a `--` separator, as in simple_switch_grpc.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from p4target.switch.errors import OptionError
from p4target.switch.impairments import parse_impairment

DEFAULT_THRIFT_PORT = 9090
DEFAULT_GRPC_ADDR = "0.0.0.0:9559"
LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")


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
    log_level: str = "info"
    thrift_port: int = DEFAULT_THRIFT_PORT
    use_files_wait: int | None = None
    grpc_server_addr: str = DEFAULT_GRPC_ADDR
    cpu_port: int | None = None
    priority_queues: int = 1
    impairments: tuple[str, ...] = ()
    port_rates: tuple[tuple[int, float], ...] = ()


class _RaisingParser(argparse.ArgumentParser):
    """argparse that raises OptionError instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise OptionError(message)


def _target_parser() -> _RaisingParser:
    parser = _RaisingParser(prog="p4target switch", add_help=False)
    parser.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE")
    parser.add_argument("--device-id", type=int, default=0)
    parser.add_argument("--no-p4", action="store_true")
    parser.add_argument("--pcap", nargs="?", const=".", default=None, metavar="DIR")
    parser.add_argument("--log-file", default=None)
    parser.add_argument("--log-console", action="store_true")
    parser.add_argument("-L", "--log-level", default="info", choices=LOG_LEVELS)
    parser.add_argument("--thrift-port", type=int, default=DEFAULT_THRIFT_PORT)
    parser.add_argument("--use-files", type=int, default=None, metavar="WAIT")
    parser.add_argument("--impair", action="append", default=[], metavar="PORT:SPEC")
    parser.add_argument("--port-rate", action="append", default=[], metavar="PORT:PPS")
    parser.add_argument("json", nargs="?", default=None)
    return parser


def _grpc_parser() -> _RaisingParser:
    parser = _RaisingParser(prog="p4target switch --", add_help=False)
    parser.add_argument("--grpc-server-addr", default=DEFAULT_GRPC_ADDR)
    parser.add_argument("--cpu-port", type=int, default=None)
    parser.add_argument("--priority-queues", type=int, default=1)
    return parser


def _parse_interface(text: str) -> tuple[int, str]:
    port_text, sep, iface = text.partition("@")
    if not sep or not iface or not port_text.isdigit():
        raise OptionError(f"bad interface '{text}': expected PORT@IFACE, e.g. 1@veth0")
    return int(port_text), iface


def _check_addr(addr: str) -> None:
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise OptionError(f"bad --grpc-server-addr '{addr}': expected HOST:PORT")


def parse_options(argv: list[str]) -> SwitchOptions:
    """Parse simple_switch_grpc-style flags; raises OptionError naming the bad flag."""
    if "--" in argv:
        cut = argv.index("--")
        target_argv, grpc_argv = argv[:cut], argv[cut + 1 :]
    else:
        target_argv, grpc_argv = argv, []
    target = _target_parser().parse_args(target_argv)
    grpc = _grpc_parser().parse_args(grpc_argv)

    interfaces: dict[int, str] = {}
    for text in target.interface:
        port, iface = _parse_interface(text)
        if port in interfaces:
            raise OptionError(f"port {port} given twice (-i {port}@{interfaces[port]} and -i {text})")
        interfaces[port] = iface
    if target.no_p4 and target.json:
        raise OptionError("give either --no-p4 or a JSON file, not both")
    if not target.no_p4 and not target.json:
        raise OptionError("missing program: give a BMv2 JSON file or --no-p4")
    if target.device_id < 0:
        raise OptionError("--device-id must be >= 0")
    if not 0 <= target.thrift_port < 65536:
        raise OptionError(f"bad --thrift-port {target.thrift_port}")
    if target.use_files is not None and target.use_files < 0:
        raise OptionError("--use-files WAIT must be >= 0")
    for spec in target.impair:
        parse_impairment(spec)
    port_rates = tuple(parse_port_rate(spec) for spec in target.port_rate)
    _check_addr(grpc.grpc_server_addr)
    if grpc.cpu_port is not None and grpc.cpu_port < 0:
        raise OptionError("--cpu-port must be >= 0")
    if not 1 <= grpc.priority_queues <= 8:
        raise OptionError("--priority-queues must be between 1 and 8")
    return SwitchOptions(
        interfaces=interfaces,
        device_id=target.device_id,
        json_path=target.json,
        no_p4=target.no_p4,
        pcap_dir=target.pcap,
        log_file=target.log_file,
        log_console=target.log_console,
        log_level=target.log_level,
        thrift_port=target.thrift_port,
        use_files_wait=target.use_files,
        grpc_server_addr=grpc.grpc_server_addr,
        cpu_port=grpc.cpu_port,
        priority_queues=grpc.priority_queues,
        impairments=tuple(target.impair),
        port_rates=port_rates,
    )


def parse_port_rate(spec: str) -> tuple[int, float]:
    """`PORT:PPS` of our `--port-rate` extension: one shaper for the whole egress port (all its
    priority queues together), which BMv2's per-queue `set_queue_rate` cannot express."""
    port_text, sep, rate_text = spec.partition(":")
    try:
        port, pps = int(port_text), float(rate_text)
    except ValueError:
        port, pps = -1, 0.0
    if not sep or port < 0 or not pps > 0:
        raise OptionError(f"bad --port-rate '{spec}': expected PORT:PPS with PORT >= 0 and PPS > 0")
    return port, pps
