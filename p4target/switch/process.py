"""One running switch: log, pipeline (SwitchTarget), ports, Thrift and P4Runtime servers.

`SwitchProcess(options).start()` brings the parts up in order and undoes what it did if a
later part fails (no half-started switch); `stop()` takes them down in reverse order.
When ready it writes "Thrift server listening on port N" and "P4Runtime gRPC server
listening on ADDR" (or why P4Runtime is unavailable) to the log and to stdout.
"""
from __future__ import annotations

import gc
import json
import sys
from typing import Any, Callable, TextIO

from p4target.engine import EngineError
from p4target.switch.errors import SwitchError
from p4target.switch.links.impairments import parse_impairment
from p4target.switch.links.control import LinkControl
from p4target.switch.options import SwitchOptions
from p4target.switch.links.port_rates import PortRateSchedule
from p4target.switch.ports import SwitchPorts
from p4target.switch.stats_file import StatsFile, stats_path
from p4target.switch.switch_log import SwitchLog
from p4target.switch.target import SwitchTarget
from p4target.switch.thrift.server import ThriftServer


class ProgramFileError(SwitchError):
    """The BMv2 JSON file cannot be read, is not JSON, or the engine cannot load it."""


def load_program_file(path: str) -> tuple[dict, str]:
    """Read and parse a BMv2 JSON file; returns (program, original text)."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ProgramFileError(f"cannot read JSON file '{path}': {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ProgramFileError(f"'{path}' is not a BMv2 JSON file (not UTF-8 text)") from None
    try:
        program = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProgramFileError(f"'{path}' is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(program, dict):
        raise ProgramFileError(f"'{path}' is not a BMv2 JSON program (top level is not an object)")
    return program, text


def _p4runtime_starter() -> tuple[Callable[..., Any] | None, str]:
    try:
        from p4target.switch.p4runtime import start_p4runtime_server
    except ImportError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return start_p4runtime_server, ""


class SwitchProcess:
    """Everything one `p4target switch` process runs."""

    def __init__(self, options: SwitchOptions, *, stdout: TextIO | None = None) -> None:
        self.options = options
        self._stdout = stdout or sys.stdout
        self.log: SwitchLog | None = None
        self.target: SwitchTarget | None = None
        self.ports: SwitchPorts | None = None
        self.rates: PortRateSchedule | None = None
        self.links: LinkControl | None = None
        self.thrift: ThriftServer | None = None
        self.p4runtime: Any = None
        self.stats: StatsFile | None = None
        self._stopped = False

    def start(self) -> None:
        """Bring the switch up; raises SwitchError (one-line message) and leaves nothing running."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        opts = self.options
        try:
            self.log = SwitchLog(path=opts.log_file, console=opts.log_console, level=opts.log_level,
                                 max_size=opts.log_file_max_size, max_files=opts.log_file_max_files)
        except OSError as exc:
            raise SwitchError(f"cannot open --log-file '{opts.log_file}': {exc.strerror}") from None
        log = self.log
        program, text = (None, None) if opts.no_p4 else load_program_file(opts.json_path or "")
        impairments = dict(parse_impairment(spec) for spec in opts.impairments)
        self.target = SwitchTarget(device_id=opts.device_id, cpu_port=opts.cpu_port,
                                   priority_queues=opts.priority_queues, transmit=self._transmit,
                                   log=lambda msg: log.info(msg))
        self.rates = PortRateSchedule(self.target, log=lambda msg: log.info(msg))
        for port, pps in opts.port_rates:
            self.rates.set_base_rate(port, pps)  # logs the port's rate (all priority queues together)
        for port, bytes_per_s in opts.port_byte_rates:
            self.target.set_port_byte_rate(bytes_per_s, port)
            log.info(f"port {port}: egress rate {bytes_per_s:g} bytes/s (all priority queues together)")
        if program is not None:
            try:
                self.target.set_pipeline(program)
            except EngineError as exc:
                raise ProgramFileError(f"cannot load '{opts.json_path}': {exc}") from None
        self.ports = SwitchPorts(opts.interfaces, self.target.receive, log=log,
                                 pcap_dir=opts.pcap_dir, impairments=impairments,
                                 use_files_wait=opts.use_files_wait)
        self.links = LinkControl(self.ports, self.rates)
        self.thrift = ThriftServer(self.target, opts.thrift_port, log=log, config_text=text,
                                   ports=opts.interfaces, links=self.links, host=opts.thrift_ip,
                                   owner_only=not opts.thrift_any_user)
        starter, why_not = _p4runtime_starter()
        if starter is not None:
            try:
                self.p4runtime = starter(self.target, opts.grpc_server_addr, opts.grpc_tls)
            except SwitchError as exc:
                from p4target.switch.p4runtime.errors import ListenError
                if not isinstance(exc, ListenError) or opts.grpc_addr_given or opts.grpc_tls is not None:
                    raise
                # not asked for: started as plain simple_switch (p4c's STF runner runs several
                # at once), the default address being taken leaves this switch Thrift-only
                why_not = f"{exc}; choose another address with -- --grpc-server-addr HOST:PORT"
            except Exception as exc:
                raise SwitchError(f"cannot start the P4Runtime server on {opts.grpc_server_addr}: {exc}") from None
        self.ports.start()
        for port, impairment in impairments.items():  # rate bursts count from the ports' start too
            self.rates.set_bursts(port, impairment.rate_bursts, self.ports.started_at)
        self.rates.start()
        self.thrift.start()
        path = stats_path(opts.log_file)
        if path is not None:
            self.stats = StatsFile(path, self.counters)
            self.stats.start()
        for port, iface in sorted(opts.interfaces.items()):
            log.info(f"Adding interface {iface} as port {port}" + (" (files)" if opts.use_files_wait is not None else ""))
        if opts.pcap_dir is not None and opts.use_files_wait is not None:
            log.warn("--pcap is ignored with --use-files (the output files are the capture)")
        # what start-up built (program, gRPC, protobuf: ~77k objects) lives as long as the switch;
        # kept out of the collector, a full collection no longer stalls the data path ~15 ms
        gc.freeze()
        program_name = "no program (--no-p4)" if program is None else opts.json_path
        self._announce(f"device_id {opts.device_id}, program {program_name}, cpu_port {opts.cpu_port}, "
                       f"priority_queues {opts.priority_queues}")
        self._announce(f"Thrift server listening on port {self.thrift.port}")
        if self.p4runtime is not None:
            self._announce(f"P4Runtime gRPC server listening on {opts.grpc_server_addr}")
        else:
            self._announce(f"P4Runtime server unavailable ({why_not}); Thrift only")
        self._announce("switch ready")

    def _announce(self, line: str) -> None:
        assert self.log is not None
        self.log.info(line)
        if not self.options.log_console:
            try:
                self._stdout.write(line + "\n")
                self._stdout.flush()
            except (OSError, ValueError):
                pass

    def _transmit(self, port: int, frame: bytes) -> None:
        ports = self.ports
        if ports is not None:
            ports.transmit(port, frame)

    def counters(self) -> dict[str, Any]:
        """The switch's own drops and per-port counters (what `<log>.stats.json` holds)."""
        ports = self.ports.counters() if self.ports is not None else {}
        engine = self.target.engine if self.target is not None else None
        socket_drops = sum(c["socket_drops"] for c in ports.values())
        return {"rx_drops_total": socket_drops, "socket_drops": socket_drops, "internal_drops": 0,
                "queue_tail_drops": engine.tm.drops if engine is not None else 0,
                "ports": {str(p): c for p, c in ports.items()}}

    def stop(self) -> None:
        """Stop servers, pipeline and ports; flush and close pcaps and the log. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        if self.p4runtime is not None:
            try:
                self.p4runtime.stop()
            except Exception as exc:  # shutting down: report, keep going
                if self.log is not None:
                    self.log.warn(f"P4Runtime server stop failed: {exc}")
        if self.thrift is not None:
            self.thrift.stop()
        if self.rates is not None:
            self.rates.stop()
        if self.target is not None:
            self.target.stop()
        if self.stats is not None:
            self.stats.halt()  # before the sockets close: the final figures are written below
        if self.ports is not None:
            self.ports.stop()
        if self.ports is not None and self.log is not None:
            final = self.stats.stop() if self.stats is not None else self.counters()
            per_port = ", ".join(f"port {p}: {c['socket_drops']}" for p, c in final["ports"].items())
            self.log.info(f"receive drops (socket buffer overflows): {final['rx_drops_total']}"
                          + (f" ({per_port})" if per_port else ""))
        if self.log is not None:
            self.log.info("switch stopped")
            self.log.close()
