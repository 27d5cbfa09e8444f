"""Stateful v1model externs: counter arrays, meter arrays (trTCM), register arrays, and the
parser value sets the control plane fills."""
from __future__ import annotations

from .errors import InvalidEntryError

GREEN, YELLOW, RED = 0, 1, 2


def _index(name: str, index: int, size: int) -> int:
    if not 0 <= index < size:
        raise InvalidEntryError(f"index {index} out of range for '{name}' (size {size})")
    return index


class CounterArray:
    """Packet and byte counters, one cell per index."""

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size
        self.packets = [0] * size
        self.bytes = [0] * size

    def count(self, index: int, nbytes: int) -> None:
        if 0 <= index < self.size:  # BMv2 ignores out-of-range indices from the data plane
            self.packets[index] += 1
            self.bytes[index] += nbytes

    def read(self, index: int) -> tuple[int, int]:
        i = _index(self.name, index, self.size)
        return self.packets[i], self.bytes[i]

    def write(self, index: int, packets: int, nbytes: int) -> None:
        i = _index(self.name, index, self.size)
        self.packets[i], self.bytes[i] = packets, nbytes

    def reset(self) -> None:
        self.packets = [0] * self.size
        self.bytes = [0] * self.size


class MeterCell:
    """A two-rate three-colour marker (RFC 2698) as BMv2 runs it.

    Rates are in units (packets or bytes) per microsecond, bursts in units, as BMv2's
    `meter_set_rates`. An unconfigured cell marks everything GREEN.
    """
    __slots__ = ("rates", "c_tokens", "p_tokens", "last_us")

    def __init__(self) -> None:
        self.rates: list[tuple[float, int]] | None = None
        self.c_tokens = 0.0
        self.p_tokens = 0.0
        self.last_us = 0.0

    def set_rates(self, rates: list[tuple[float, int]], now_us: float) -> None:
        if len(rates) != 2:
            raise InvalidEntryError("a meter needs two (rate, burst) pairs: committed then peak")
        (cir, cbs), (pir, pbs) = rates
        if cir < 0 or pir < 0 or cbs < 0 or pbs < 0:
            raise InvalidEntryError("meter rates and bursts must be non-negative")
        if cir > pir:
            raise InvalidEntryError("committed rate must not exceed peak rate")
        self.rates = [(float(cir), int(cbs)), (float(pir), int(pbs))]
        self.c_tokens, self.p_tokens, self.last_us = float(cbs), float(pbs), now_us

    def reset(self) -> None:
        self.rates = None

    def execute(self, units: int, now_us: float) -> int:
        if self.rates is None:
            return GREEN
        (cir, cbs), (pir, pbs) = self.rates
        elapsed = max(0.0, now_us - self.last_us)
        self.last_us = now_us
        self.c_tokens = min(float(cbs), self.c_tokens + cir * elapsed)
        self.p_tokens = min(float(pbs), self.p_tokens + pir * elapsed)
        if self.p_tokens < units:
            return RED
        if self.c_tokens < units:
            self.p_tokens -= units
            return YELLOW
        self.p_tokens -= units
        self.c_tokens -= units
        return GREEN


class MeterArray:
    """An indirect (indexed) or direct meter; `type` is 'packets' or 'bytes'."""

    def __init__(self, name: str, size: int, type_: str, is_direct: bool = False) -> None:
        self.name = name
        self.size = size
        self.type = type_
        self.is_direct = is_direct
        self.cells = [MeterCell() for _ in range(size)]

    def new_cell(self) -> MeterCell:
        return MeterCell()

    def cell(self, index: int) -> MeterCell:
        return self.cells[_index(self.name, index, self.size)]

    def execute(self, index: int, nbytes: int, now_us: float) -> int:
        if not 0 <= index < self.size:
            return GREEN
        return self.cells[index].execute(1 if self.type == "packets" else nbytes, now_us)


class RegisterArray:
    """An array of `bitwidth`-bit unsigned registers."""

    def __init__(self, name: str, size: int, bitwidth: int) -> None:
        self.name = name
        self.size = size
        self.bitwidth = bitwidth
        self.mask = (1 << bitwidth) - 1
        self.values = [0] * size

    def read(self, index: int) -> int:
        return self.values[_index(self.name, index, self.size)]

    def write(self, index: int, value: int) -> None:
        i = _index(self.name, index, self.size)
        if value < 0 or value >> self.bitwidth:
            raise InvalidEntryError(f"value {value:#x} does not fit in register '{self.name}' ({self.bitwidth} bits)")
        self.values[i] = value

    def reset(self) -> None:
        self.values = [0] * self.size


class ParseValueSet:
    """A parser value set: up to ``max_size`` values of ``bitwidth`` bits, each the select key's
    components concatenated without padding (BMv2's compressed form)."""

    def __init__(self, name: str, bitwidth: int, max_size: int) -> None:
        self.name = name
        self.bitwidth = bitwidth
        self.max_size = max_size
        self.values: list[int] = []

    def add(self, value: int) -> None:
        if not 0 <= value < (1 << self.bitwidth):
            raise InvalidEntryError(f"value {value:#x} does not fit the {self.bitwidth} bits of '{self.name}'")
        if value in self.values:
            return
        if self.max_size and len(self.values) >= self.max_size:
            raise InvalidEntryError(f"value set '{self.name}' is full ({self.max_size} values)")
        self.values.append(value)

    def remove(self, value: int) -> None:
        if value not in self.values:
            raise InvalidEntryError(f"value {value:#x} is not in value set '{self.name}'")
        self.values.remove(value)

    def clear(self) -> None:
        self.values = []

    def matches(self, key: int, mask: int) -> bool:
        return any((v & mask) == (key & mask) for v in self.values)
