"""One switch's pipeline and runtime state, shared by its ports and its control servers.

`SwitchTarget` owns the live `Engine` of the currently loaded program. A pipeline push
(`set_pipeline`) builds a fresh engine, swaps it in atomically and stops the old one;
traffic-manager settings made through the target (queue rates and depths, port rates) are
re-applied to every new engine, as BMv2 keeps them across pipeline pushes.

Threading: `lock` is the engines' lock too (every engine built here shares it), so holding it
excludes the data path as well as the other control servers. Hold it around any sequence of
engine calls that must appear atomic (one P4Runtime Write batch, a Thrift command).
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from p4target.engine import Engine
from p4target.switch.errors import SwitchError

TransmitCallback = Callable[[int, bytes], None]
FrameListener = Callable[[bytes], None]
DigestListener = Callable[[str, int, tuple], None]


class NoPipelineError(SwitchError):
    """An operation needs a loaded P4 pipeline and none has been set."""


class NoCpuPortError(SwitchError):
    """Packet-out was requested but the switch has no CPU port (`--cpu-port`)."""


class SwitchTarget:
    """One switch's pipeline and runtime state; shared by its ports, P4Runtime and Thrift servers."""

    def __init__(self, *, device_id: int = 0, cpu_port: int | None = None, priority_queues: int = 1,
                 queue_depth: int = 64, transmit: TransmitCallback,
                 log: Callable[[str], None] | None = None) -> None:
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.priority_queues = priority_queues
        self.queue_depth = queue_depth
        self.lock = threading.RLock()
        self._transmit = transmit
        self._log = log
        self._engine: Engine | None = None
        self._p4info: Any = None
        self._bmv2_json: dict | None = None
        self._packet_in: FrameListener | None = None
        self._digest: DigestListener | None = None
        # TM settings in application order, keyed so a later identical-scope call replaces
        # an earlier one: (kind, port, priority) -> value
        self._tm: dict[tuple[str, int | None, int | None], Any] = {}
        self._stopped = False

    # -- pipeline ------------------------------------------------------------------------
    @property
    def engine(self) -> Engine | None:
        """The engine of the current pipeline, or None until one is set."""
        return self._engine

    @property
    def p4info(self) -> Any:
        """The P4Info (`p4.config.v1.p4info_pb2.P4Info`) given with the pipeline, or None."""
        return self._p4info

    @property
    def bmv2_json(self) -> dict | None:
        """The BMv2 JSON of the current pipeline, or None."""
        return self._bmv2_json

    def set_pipeline(self, bmv2_json: dict, p4info: Any = None,
                     prepare: Callable[[Engine], None] | None = None) -> None:
        """Load a new program: build a live engine, apply the remembered TM settings, swap it in
        and stop the old engine. A program that fails to load leaves the old one running
        (the engine's ProgramLoadError propagates). `prepare(engine)` runs on the loaded,
        not yet live engine (e.g. to replay runtime state); if it raises, nothing changes."""
        engine = Engine(None, priority_queues=self.priority_queues, queue_depth=self.queue_depth,
                        log=self._log)
        engine.lock = self.lock  # one lock for the data path and every control server
        engine.load(bmv2_json)
        if prepare is not None:
            prepare(engine)
        with self.lock:
            for (kind, port, priority), value in self._tm.items():
                self._apply_tm(engine, kind, value, port, priority)
            engine.set_digest_callback(self._on_digest)
            old = self._engine
            engine.start(self._on_transmit)
            self._engine = engine
            self._p4info = p4info
            self._bmv2_json = bmv2_json
        if old is not None:
            old.stop()
            old.set_digest_callback(None)

    # -- traffic manager -----------------------------------------------------------------
    def set_queue_rate(self, pps: float | None, port: int | None = None, priority: int | None = None) -> None:
        """Egress queue rate in packets/s (None = unlimited) for one queue, a port's queues or all."""
        self._remember("rate", pps, port, priority)

    def set_queue_depth(self, depth: int, port: int | None = None, priority: int | None = None) -> None:
        """Egress queue capacity in packets for one queue, a port's queues or all."""
        self._remember("depth", depth, port, priority)

    def set_port_rate(self, pps: float | None, port: int) -> None:
        """Shape a whole egress port to `pps` packets/s (extension; None = off)."""
        self._remember("port_rate", pps, port, None)

    def set_port_byte_rate(self, bytes_per_s: float | None, port: int) -> None:
        """Shape a whole egress port to `bytes_per_s` bytes/s (extension; None = off); it
        applies together with a packet-rate shaper of the port."""
        self._remember("port_byte_rate", bytes_per_s, port, None)

    def _remember(self, kind: str, value: Any, port: int | None, priority: int | None) -> None:
        with self.lock:
            if port is None and priority is None and kind not in ("port_rate", "port_byte_rate"):
                # a switch-wide setting supersedes every narrower one of the same kind
                for k in [k for k in self._tm if k[0] == kind]:
                    del self._tm[k]
            self._tm.pop((kind, port, priority), None)
            self._tm[(kind, port, priority)] = value
            if self._engine is not None:
                self._apply_tm(self._engine, kind, value, port, priority)

    @staticmethod
    def _apply_tm(engine: Engine, kind: str, value: Any, port: int | None, priority: int | None) -> None:
        if kind == "rate":
            engine.set_queue_rate(value, port, priority)
        elif kind == "depth":
            engine.set_queue_depth(value, port, priority)
        elif kind == "port_byte_rate":
            engine.set_port_byte_rate(value, port)
        else:
            engine.set_port_rate(value, port)

    # -- packets -------------------------------------------------------------------------
    def receive(self, port: int, frame: bytes) -> None:
        """A frame arrived on `port`; dropped silently when no pipeline is set."""
        engine = self._engine
        if engine is not None and not self._stopped:
            engine.receive(port, frame)

    def packet_out(self, frame: bytes) -> None:
        """A controller packet enters ingress on the CPU port (frame includes any packet_out header)."""
        engine = self._engine
        if engine is None:
            raise NoPipelineError("no P4 pipeline is set")
        if self.cpu_port is None:
            raise NoCpuPortError("the switch has no CPU port (start it with --cpu-port)")
        if not self._stopped:
            engine.receive(self.cpu_port, frame)

    def set_packet_in_listener(self, cb: FrameListener | None) -> None:
        """Frames the pipeline emits on the CPU port go to `cb` instead of `transmit` (None: back to transmit)."""
        self._packet_in = cb

    def set_digest_listener(self, cb: DigestListener | None) -> None:
        """cb(learn_list_name, learn_list_id, values) for each digest the pipeline emits.

        Called from the data path with `lock` held: return quickly (queue the work)."""
        self._digest = cb

    def _on_transmit(self, port: int, frame: bytes) -> None:
        if port == self.cpu_port and self._packet_in is not None:
            self._packet_in(frame)
        else:
            self._transmit(port, frame)

    def _on_digest(self, name: str, list_id: int, values: tuple) -> None:
        cb = self._digest
        if cb is not None:
            cb(name, list_id, values)

    def stop(self) -> None:
        """Stop the pipeline's schedulers; later frames are dropped. Idempotent."""
        self._stopped = True
        engine = self._engine
        if engine is not None:
            engine.stop()
