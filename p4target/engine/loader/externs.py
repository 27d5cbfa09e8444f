"""The stateful objects a program declares (BMv2: `CounterArray`, `MeterArray`,
`RegisterArray`, `ParseVSet`), created empty at load time."""
from __future__ import annotations

from typing import Any

from ..errors import ProgramLoadError
from ..externs import CounterArray, MeterArray, ParseValueSet, RegisterArray


class ExternObjects:
    """Counter, meter and register arrays and parser value sets of one program, by name."""

    def __init__(self, j: dict) -> None:
        self.counters = {c["name"]: CounterArray(c["name"], c.get("size", 0)) for c in j.get("counter_arrays", [])}
        self.meters = {m["name"]: MeterArray(m["name"], m.get("size", 0), m.get("type", "packets"),
                                             bool(m.get("is_direct"))) for m in j.get("meter_arrays", [])}
        self.registers = {r["name"]: RegisterArray(r["name"], r["size"], r["bitwidth"])
                          for r in j.get("register_arrays", [])}
        self.value_sets = {v["name"]: ParseValueSet(v["name"], int(v.get("compressed_bitwidth", 0)),
                                                    int(v.get("max_size", 0)))
                           for v in j.get("parse_vsets", [])}

    @staticmethod
    def _named(objects: dict, name: Any, kind: str) -> Any:
        if type(name) is not str or name not in objects:
            raise ProgramLoadError(f"unknown {kind} {name!r:.60}")
        return objects[name]

    def counter(self, name: Any) -> CounterArray:
        return self._named(self.counters, name, "counter array")

    def meter(self, name: Any) -> MeterArray:
        return self._named(self.meters, name, "meter array")

    def register(self, name: Any) -> RegisterArray:
        return self._named(self.registers, name, "register array")

    def value_set(self, name: Any) -> ParseValueSet:
        return self._named(self.value_sets, name, "parser value set")
