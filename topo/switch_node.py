"""The P4 switch node: a Mininet switch whose forwarding is a `$SWITCH` process.

`$SWITCH` is simple_switch_grpc or the embedded `python -m p4target switch`; both take the same
flags. The process runs in the root namespace on the switch's `<name>-eth<port>` interfaces and
is stopped by its PID. Its stdout/stderr go to `logs/<name>.log`, and so does its log
(`--log-file`, rotated by the switch at a size cap; BMv2 1.15.5 writes it to `logs/<name>.log.txt`
instead, see `toolchain.switch_log_files`); the level is `-L $SWITCH_LOG`,
warn by default, since at BMv2's own default (trace) a switch writes kilobytes per packet and
spends its CPU doing so. `start()` only launches it; `wait_ready()` is the health check.
"""
from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from mininet.node import Switch

from controller import topology
from topo.errors import SwitchStartError
from topo.pidfile import RunRecord, process_start_time, terminate
from topo.processes import dying_with_parent, log_tail
from topo.toolchain import (DEFAULT_SWITCH_LOG, LOG_FILE_BACKUPS, LOG_FILE_MAX_BYTES, Tool, switch_log_files,
                            switch_log_level)


def port_accepts(port: int, host: str = "127.0.0.1") -> bool:
    """True if a TCP connection to host:port succeeds right now."""
    try:
        with socket.create_connection((host, port), timeout=0.3):
            return True
    except OSError:
        return False


LOOPBACK = "127.0.0.1"


def log_flags(log_path: str, level: str) -> list[str]:
    """The flags that send a switch's log to `log_path` at `level`, rotated at the size cap
    (BMv2 and the embedded switch read them alike; `--log-console` could not be capped)."""
    return ["--log-file", log_path, "-L", level, "--log-flush",
            "--log-file-max-size", str(LOG_FILE_MAX_BYTES), "--log-file-max-files", str(LOG_FILE_BACKUPS)]


def switch_command(tool: Tool, desc: topology.Switch, ports: dict[int, str], json_path: str | None, *,
                   pcap_dir: str | None = None, impairments: tuple[str, ...] = (),
                   port_rates: dict[int, float] | None = None,
                   port_byte_rates: dict[int, float] | None = None,
                   log_level: str = DEFAULT_SWITCH_LOG, tls: tuple[str, ...] = ()) -> list[str]:
    """The argv of one switch process (simple_switch_grpc flags). Its servers listen on
    loopback only: P4Runtime on `desc.grpc_addr` (127.0.0.1 from `topologies`), Thrift on
    127.0.0.1 via our `--thrift-ip` where the switch is the embedded one (BMv2's Thrift server
    has no such flag and listens on every address; the embedded one serves only its own user).
    `tls`: the TLS target flags (`RunPki.switch_flags`), the same for BMv2 and the embedded
    switch; empty for plaintext P4Runtime. It logs to `desc.log` at `log_level`."""
    argv = list(tool.argv)
    for port, iface in sorted(ports.items()):
        argv += ["-i", f"{port}@{iface}"]
    argv += ["--device-id", str(desc.device_id), "--thrift-port", str(desc.thrift_port),
             *log_flags(desc.log, log_level)]
    if pcap_dir:
        argv += ["--pcap", pcap_dir]
    for spec in impairments:
        argv += ["--impair", spec]
    if tool.kind == "embedded":
        argv += ["--thrift-ip", LOOPBACK]
        # BMv2's queue rates apply to each priority queue on its own, so strict priority never
        # has to choose; the embedded switch can also shape the port as a whole.
        for port, pps in sorted((port_rates or {}).items()):
            argv += ["--port-rate", f"{port}:{pps:g}"]
        for port, rate in sorted((port_byte_rates or {}).items()):
            argv += ["--port-byte-rate", f"{port}:{rate:g}"]
    elif port_byte_rates:
        raise SwitchStartError(f"switch {desc.name}: a bottleneck in bytes/s needs the embedded "
                               f"switch (BMv2's queue rates count packets; use --bottleneck-pps)")
    argv += [json_path] if json_path else ["--no-p4"]
    argv += ["--", "--grpc-server-addr", desc.grpc_addr, "--cpu-port", str(desc.cpu_port),
             "--priority-queues", str(desc.priority_queues), *tls]
    return argv


class P4Switch(Switch):
    """Mininet switch running one `$SWITCH` process (BMv2-compatible flags)."""

    def __init__(self, name: str, desc: topology.Switch | None = None, tool: Tool | None = None,
                 json_path: str | None = None, record: RunRecord | None = None,
                 impairments: tuple[str, ...] = (), pcap_dir: str | None = None,
                 port_rates: dict[int, float] | None = None,
                 port_byte_rates: dict[int, float] | None = None,
                 start_timeout: float = 60.0, tls: tuple[str, ...] = (), **params: Any) -> None:
        if desc is None or tool is None:
            raise SwitchStartError(f"switch {name}: P4Switch needs desc= and tool=")
        params.setdefault("inNamespace", False)
        super().__init__(name, dpid=f"{desc.device_id:x}", **params)
        self.desc = desc
        self.tool = tool
        self.json_path = json_path
        self.record = record
        self.impairments = impairments
        self.port_rates = dict(port_rates or {})
        self.port_byte_rates = dict(port_byte_rates or {})
        self.pcap_dir = pcap_dir
        self.start_timeout = start_timeout
        self.tls = tls
        self.log_level = switch_log_level()
        self.process: subprocess.Popen[bytes] | None = None
        self._started_at = 0.0
        self._start_time: int | None = None

    # -- command line ----------------------------------------------------------------------
    def command(self) -> list[str]:
        """The switch's full argv (simple_switch_grpc flags)."""
        ports = {port: intf.name for port, intf in self.intfs.items() if intf.name != "lo" and port > 0}
        return switch_command(self.tool, self.desc, ports, self.json_path, pcap_dir=self.pcap_dir,
                              impairments=self.impairments, port_rates=self.port_rates,
                              port_byte_rates=self.port_byte_rates, log_level=self.log_level,
                              tls=self.tls)

    # -- Mininet hooks ---------------------------------------------------------------------
    def start(self, controllers: list[Any]) -> None:
        """Launch the switch process (non-blocking; see `wait_ready`)."""
        self._launch("wb")

    def restart(self) -> None:
        """Launch the switch process again with the same flags after it exited (its log is
        appended to; the record forgets the old PID). Non-blocking, like `start`."""
        if self.process is not None:
            self.process.poll()
            if self.record is not None:
                self.record.forget_process(self.process.pid)
            self.process = None
        self._launch("ab")

    def exit_code(self) -> int | None:
        """The switch process's exit code once it ended (None while it runs or before start)."""
        return self.process.poll() if self.process is not None else None

    def _launch(self, mode: str) -> None:
        for port in (self.desc.grpc_port, self.desc.thrift_port):
            if port_accepts(port):
                raise SwitchStartError(
                    f"switch {self.name}: TCP port {port} is already in use (a stale switch? run `make stop`)")
        log = Path(self.desc.log)
        log.parent.mkdir(parents=True, exist_ok=True)
        if mode == "wb":
            for old in switch_log_files(str(log), self.tool):  # a previous run's log lines
                Path(old).unlink(missing_ok=True)
        with open(log, mode) as header:
            header.write(f"# {' '.join(self.command())}\n".encode())
        # appended: the switch's own log writer appends to the same file (and rotates it)
        with open(log, "ab") as out:
            try:
                self.process = subprocess.Popen(dying_with_parent(self.command()), stdin=subprocess.DEVNULL,
                                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as exc:
                raise SwitchStartError(f"switch {self.name}: cannot run {self.tool.argv[0]}: {exc.strerror}") from None
        self._started_at = time.monotonic()
        self._start_time = process_start_time(self.process.pid)
        if self.record is not None:
            self.record.add_process(self.process.pid, self.name, "switch")

    def wait_ready(self) -> None:
        """Block until the gRPC server accepts connections; raise SwitchStartError with the log tail
        when the process exits or the timeout passes first."""
        if self.process is None:
            raise SwitchStartError(f"switch {self.name}: not started")
        deadline = self._started_at + self.start_timeout
        while True:
            code = self.process.poll()
            if code is not None:
                raise SwitchStartError(
                    f"switch {self.name} exited with code {code} during start-up; "
                    f"last lines of {self.desc.log}:\n{log_tail(self.desc.log)}")
            if port_accepts(self.desc.grpc_port):
                return
            if time.monotonic() > deadline:
                raise SwitchStartError(
                    f"switch {self.name}: gRPC {self.desc.grpc_addr} not accepting after "
                    f"{self.start_timeout:g} s; last lines of {self.desc.log}:\n{log_tail(self.desc.log)}")
            time.sleep(0.1)

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 (Mininet's name)
        """Stop the process by PID, then delete the interfaces."""
        if self.process is not None:
            if self.process.poll() is None:
                terminate(self.process.pid, self._start_time)
            self.process.wait()
            if self.record is not None:
                self.record.forget_process(self.process.pid)
            self.process = None
        super().stop(deleteIntfs)

    @property
    def pid_of_process(self) -> int | None:
        """PID of the switch process while it runs."""
        return self.process.pid if self.process else None


def ensure_exists(path: str) -> None:
    """Raise SwitchStartError if the program JSON is missing (before any process starts)."""
    if not os.path.isfile(path):
        raise SwitchStartError(f"program {path} not found: build it first (`make build`)")
