"""Meter configurations: P4Runtime rates are units per second, the engine's (BMv2's) per microsecond."""
from __future__ import annotations

from p4.v1 import p4runtime_pb2

from .errors import invalid


def config_to_engine(cfg: p4runtime_pb2.MeterConfig) -> list[tuple[float, int]]:
    """[(committed rate, burst), (peak rate, burst)] in units/us, as BMv2's meter_set_rates."""
    if cfg.cir > cfg.pir:
        raise invalid(f"meter committed rate {cfg.cir}/s exceeds peak rate {cfg.pir}/s")
    if cfg.cir < 0 or cfg.pir < 0 or cfg.cburst < 0 or cfg.pburst < 0:
        raise invalid("meter rates and bursts must not be negative")
    return [(cfg.cir / 1e6, cfg.cburst), (cfg.pir / 1e6, cfg.pburst)]


def config_from_engine(rates: list[tuple[float, int]]) -> p4runtime_pb2.MeterConfig:
    (cir, cbs), (pir, pbs) = rates
    return p4runtime_pb2.MeterConfig(cir=round(cir * 1e6), cburst=int(cbs), pir=round(pir * 1e6), pburst=int(pbs))
