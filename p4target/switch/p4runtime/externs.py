"""Indexed counter, meter and register arrays (an unset index means every cell)."""
from __future__ import annotations

from typing import Iterator

from p4.config.v1 import p4info_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2

from . import bytestrings
from .errors import invalid
from .meters import config_from_engine, config_to_engine
from .state import PipelineState
from .translate import ResourceInfo

Update = p4runtime_pb2.Update
Unit = p4info_pb2.CounterSpec


def _indices(res: ResourceInfo, size: int, entry) -> list[int]:
    if not entry.HasField("index"):
        return list(range(size))
    i = entry.index.index
    if not 0 <= i < size:
        raise invalid(f"index {i} out of range for '{res.name}' (size {size})")
    return [i]


class Externs:
    """Write and read `CounterEntry`, `MeterEntry` and `RegisterEntry` entities."""

    def __init__(self, state: PipelineState) -> None:
        self.tr = state.translator
        self.engine = state.engine

    def _resources(self, kind: str, res_id: int) -> list[ResourceInfo]:
        return [self.tr.resource(res_id, kind)] if res_id else self.tr.resources_of(kind)

    # -- counters ------------------------------------------------------------------------
    def write_counter(self, op: int, ce: p4runtime_pb2.CounterEntry) -> None:
        if op != Update.MODIFY:
            raise invalid("counter entries can only be modified")
        res = self.tr.resource(ce.counter_id, "counter")
        arr = self.engine.counter(res.name)
        for i in _indices(res, arr.size, ce):
            self.engine.counter_write(res.name, i, ce.data.packet_count, ce.data.byte_count)

    def read_counters(self, ce: p4runtime_pb2.CounterEntry) -> Iterator[p4runtime_pb2.Entity]:
        for res in self._resources("counter", ce.counter_id):
            arr = self.engine.counter(res.name)
            for i in _indices(res, arr.size, ce):
                packets, nbytes = arr.read(i)
                out = p4runtime_pb2.CounterEntry(counter_id=res.id)
                out.index.index = i
                if res.unit in (Unit.PACKETS, Unit.BOTH, Unit.UNSPECIFIED):
                    out.data.packet_count = packets
                if res.unit in (Unit.BYTES, Unit.BOTH, Unit.UNSPECIFIED):
                    out.data.byte_count = nbytes
                yield p4runtime_pb2.Entity(counter_entry=out)

    # -- meters --------------------------------------------------------------------------
    def write_meter(self, op: int, me: p4runtime_pb2.MeterEntry) -> None:
        if op != Update.MODIFY:
            raise invalid("meter entries can only be modified")
        res = self.tr.resource(me.meter_id, "meter")
        arr = self.engine.meter(res.name)
        rates = config_to_engine(me.config) if me.HasField("config") else None
        for i in _indices(res, arr.size, me):
            if rates is None:
                self.engine.meter_reset_rates(res.name, i)
            else:
                self.engine.meter_set_rates(res.name, i, rates)

    def read_meters(self, me: p4runtime_pb2.MeterEntry) -> Iterator[p4runtime_pb2.Entity]:
        for res in self._resources("meter", me.meter_id):
            arr = self.engine.meter(res.name)
            for i in _indices(res, arr.size, me):
                out = p4runtime_pb2.MeterEntry(meter_id=res.id)
                out.index.index = i
                rates = arr.cells[i].rates
                if rates is not None:
                    out.config.CopyFrom(config_from_engine(rates))
                yield p4runtime_pb2.Entity(meter_entry=out)

    # -- registers -----------------------------------------------------------------------
    def write_register(self, op: int, re: p4runtime_pb2.RegisterEntry) -> None:
        if op != Update.MODIFY:
            raise invalid("register entries can only be modified")
        res = self.tr.resource(re.register_id, "register")
        arr = self.engine.register(res.name)
        if re.data.WhichOneof("data") != "bitstring":
            raise invalid(f"register '{res.name}' holds bitstrings")
        value = bytestrings.decode(re.data.bitstring, arr.bitwidth, f"register '{res.name}'")
        for i in _indices(res, arr.size, re):
            self.engine.register_write(res.name, i, value)

    def read_registers(self, re: p4runtime_pb2.RegisterEntry) -> Iterator[p4runtime_pb2.Entity]:
        for res in self._resources("register", re.register_id):
            arr = self.engine.register(res.name)
            for i in _indices(res, arr.size, re):
                out = p4runtime_pb2.RegisterEntry(register_id=res.id,
                                                  data=p4data_pb2.P4Data(bitstring=bytestrings.encode(arr.read(i))))
                out.index.index = i
                yield p4runtime_pb2.Entity(register_entry=out)
