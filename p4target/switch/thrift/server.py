"""BMv2's runtime Thrift server for one switch, so `simple_switch_CLI` (and other BMv2 Thrift
clients) drive this target as they drive simple_switch.

Multiplexed binary protocol over buffered TCP, services "standard", "simple_pre_lag",
"simple_pre" and "simple_switch" (see `handlers`), plus our "p4target_links" service
for run-time link changes when the server is given a `LinkControl` (see `links`). Every call runs with the target's
lock held, so one CLI command is atomic with respect to the data path and the P4Runtime
server, and is written to the switch log (pipeline swaps lock inside SwitchTarget instead).
"""
from __future__ import annotations

import contextlib
import errno
import socket
import threading
from typing import Any, Callable

from bm_runtime.simple_pre import SimplePre
from bm_runtime.simple_pre_lag import SimplePreLAG
from bm_runtime.standard import Standard
from bm_runtime.standard.ttypes import BmMatchParam
from thrift.protocol import TBinaryProtocol
from thrift.TMultiplexedProcessor import TMultiplexedProcessor
from thrift.Thrift import TApplicationException, TException
from thrift.transport import TSocket, TTransport

from p4target.switch.errors import SwitchError
from p4target.switch.links.control import LinkControl
from p4target.switch.switch_log import SwitchLog
from p4target.switch.target import SwitchTarget
from p4target.switch.thrift.handlers import ConfigText, PreHandler, SimpleSwitchHandler, StandardHandler
from p4target.switch.thrift.links import SERVICE as LINKS_SERVICE, LinkHandler, LinkProcessor
from p4target.switch.thrift.peers import may_connect
from p4target.switch.thrift.priority import PriorityProcessor

_QUIET_CALLS = ("bm_get_config", "bm_get_config_md5", "bm_mt_get", "bm_mt_act_prof_get", "bm_mc_get",
                "bm_counter_read", "bm_register_read", "bm_meter_get", "mirroring_session_get",
                "mirroring_mapping_get", "get_time", "bm_mgmt_get_info", "bm_dev_mgr_show_ports",
                "bm_serialize_state", "get_port_impairment", "get_port_rate")

# Pipeline swaps lock for themselves (SwitchTarget.set_pipeline): holding the lock around them
# would make stopping the old engine wait for its scheduler, which waits for that lock.
_SELF_LOCKING_CALLS = frozenset({"bm_swap_configs", "bm_reset_state", "bm_load_new_config"})


_NO_LOCK = contextlib.nullcontext()


class ThriftPortInUseError(SwitchError):
    """The Thrift TCP port is taken by another process."""


class _LockedHandler:
    """Calls the wrapped handler's methods with the target lock held, logs state-changing
    calls, and turns unexpected failures into a TApplicationException the client can print."""

    def __init__(self, handler: Any, lock: Any, log: SwitchLog, service: str) -> None:
        self._handler = handler
        self._lock = lock
        self._log = log
        self._service = service

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._handler, name)
        log, lock, service = self._log, self._lock, self._service

        def call(*args: Any) -> Any:
            missing = [i for i, a in enumerate(args, 1) if a is None]
            if missing:  # a message without the field: Thrift leaves it None, no handler expects that
                raise TApplicationException(TApplicationException.PROTOCOL_ERROR,
                                            f"{name}: argument {missing[0]} is missing")
            if not name.startswith(_QUIET_CALLS) and log.enabled("info"):
                shown = ", ".join(_show(a) for a in args)
                log.info(f"thrift {service}.{name}({shown})")
            with (_NO_LOCK if name in _SELF_LOCKING_CALLS else lock):
                try:
                    return method(*args)
                except TException as exc:
                    if log.enabled("info"):
                        log.info(f"thrift {service}.{name} failed: {type(exc).__name__}(code={getattr(exc, 'code', '')})")
                    raise
                except Exception as exc:
                    log.error(f"thrift {service}.{name} failed: {type(exc).__name__}: {exc}")
                    raise TApplicationException(TApplicationException.INTERNAL_ERROR,
                                                f"{name}: {type(exc).__name__}: {exc}") from None
        return call


def _peer(client: socket.socket) -> str:
    try:
        host, port = client.getpeername()[:2]
    except OSError:
        return "a client that already left"
    return f"{host}:{port}"


def _show(value: Any) -> str:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, BmMatchParam):
        if value.exact is not None:
            return value.exact.key.hex()
        if value.lpm is not None:
            return f"{value.lpm.key.hex()}/{value.lpm.prefix_length}"
        if value.ternary is not None:
            return f"{value.ternary.key.hex()}&&&{value.ternary.mask.hex()}"
        if value.range is not None:
            return f"{value.range.start.hex()}->{value.range.end_.hex()}"
        return f"valid={value.valid.key if value.valid else None}"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


class ThriftServer:
    """Listens on `host`:`port` (0: any free port, see `.port`) and serves each client in a
    thread. `host` defaults to every address, as BMv2's Thrift server; give 127.0.0.1 to keep
    it to this machine. With `owner_only` (the default) a client is served only when its socket
    is on this machine and belongs to the switch's effective user or root (`peers`): Thrift has
    no authentication of its own, and any call can load or swap the pipeline."""

    def __init__(self, target: SwitchTarget, port: int, *, log: SwitchLog | None = None,
                 config_text: str | None = None, ports: dict[int, str] | None = None,
                 host: str = "0.0.0.0", links: LinkControl | None = None, owner_only: bool = True) -> None:
        self._log = log or SwitchLog()
        self.owner_only = owner_only
        self.refused = 0  # connections closed unserved: another user's, or from another host
        self.config = ConfigText(target, config_text)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._sock.bind((host, port))
        except OSError as exc:
            self._sock.close()
            if exc.errno == errno.EADDRINUSE:
                raise ThriftPortInUseError(f"--thrift-port {port} is already in use") from None
            raise SwitchError(f"cannot listen on --thrift-ip {host} --thrift-port {port}: {exc.strerror}") from None
        self._sock.listen(16)
        self.port: int = self._sock.getsockname()[1]
        standard = StandardHandler(target, self.config, ports, self.port)
        pre = PreHandler(target)
        self._processor = TMultiplexedProcessor()
        self._processor.registerProcessor(
            "standard", Standard.Processor(_LockedHandler(standard, target.lock, self._log, "standard")))
        self._processor.registerProcessor(
            "simple_pre_lag", SimplePreLAG.Processor(_LockedHandler(pre, target.lock, self._log, "simple_pre_lag")))
        self._processor.registerProcessor(
            "simple_pre", SimplePre.Processor(_LockedHandler(pre, target.lock, self._log, "simple_pre")))
        self._processor.registerProcessor(
            "simple_switch", PriorityProcessor(_LockedHandler(SimpleSwitchHandler(target), target.lock,
                                                              self._log, "simple_switch")))
        if links is not None:
            self._processor.registerProcessor(
                LINKS_SERVICE, LinkProcessor(_LockedHandler(LinkHandler(links), target.lock, self._log, LINKS_SERVICE)))
        self._running = False
        self._accept_thread: threading.Thread | None = None
        self._clients: set[socket.socket] = set()
        self._clients_lock = threading.Lock()

    def start(self) -> None:
        """Start accepting clients."""
        self._running = True
        self._accept_thread = threading.Thread(target=self._accept_loop, name="p4target-thrift", daemon=True)
        self._accept_thread.start()

    def stop(self) -> None:
        """Stop accepting, disconnect clients, close the socket. Idempotent."""
        if not self._running:
            self._sock.close()
            return
        self._running = False
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        with self._clients_lock:
            for client in list(self._clients):
                try:
                    client.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        if self._accept_thread is not None:
            self._accept_thread.join(timeout=5)

    def _accept_loop(self) -> None:
        while self._running:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            if self.owner_only and not may_connect(client):
                self.refused += 1
                self._log.warn(f"thrift: refused a connection from {_peer(client)}: not this switch's user "
                               "(--thrift-any-user serves every client)")
                client.close()
                continue
            with self._clients_lock:
                self._clients.add(client)
            threading.Thread(target=self._serve, args=(client,), name="p4target-thrift-client",
                             daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        handle = TSocket.TSocket()
        handle.setHandle(client)
        transport = TTransport.TBufferedTransport(handle)
        protocol = TBinaryProtocol.TBinaryProtocol(transport)
        try:
            while self._running:
                self._processor.process(protocol, protocol)
        except (TTransport.TTransportException, OSError, EOFError):
            pass
        except Exception as exc:  # a malformed message ends this client only
            self._log.warn(f"thrift client dropped: {type(exc).__name__}: {exc}")
        finally:
            with self._clients_lock:
                self._clients.discard(client)
            try:
                client.close()
            except OSError:
                pass
