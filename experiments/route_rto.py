"""TCP's minimum retransmission timeout per route (`ip route change ... rto_min`), set in a
Mininet host's network namespace and restored afterwards: the incast literature's fix for
timeouts that last hundreds of round trips."""
from __future__ import annotations

import json
from typing import Any

from experiments.errors import ExperimentError

_KEYS = (("gateway", "via"), ("dev", "dev"), ("protocol", "proto"), ("scope", "scope"),
         ("prefsrc", "src"), ("metric", "metric"))


def route_spec(route: dict[str, Any]) -> list[str]:
    """`ip route change` arguments naming one route of `ip -j route show` (without metrics)."""
    if not isinstance(route, dict) or "dst" not in route:
        raise ExperimentError(f"not a route of `ip -j route show`: {route!r}")
    out = [str(route["dst"])]
    for key, word in _KEYS:
        if route.get(key) not in (None, ""):
            out += [word, str(route[key])]
    return out


def routes(host: Any) -> list[dict[str, Any]]:
    """The main table's routes of a Mininet host (`ip -j route show`)."""
    text = host.cmd("ip -j route show")
    try:
        found = json.loads(text)
    except ValueError:
        raise ExperimentError(f"{host.name}: `ip -j route show` gave no JSON: {text.strip()[:120]}") from None
    return [r for r in found if isinstance(r, dict)]


def set_rto_min(host: Any, rto_min_ms: float | None) -> None:
    """Give every route of `host` this rto_min (None: the kernel's default again). Raises
    ExperimentError naming the host when `ip` refuses."""
    for route in routes(host):
        args = route_spec(route) + ([] if rto_min_ms is None else ["rto_min", f"{rto_min_ms:g}ms"])
        out = host.cmd("ip route change " + " ".join(args) + " 2>&1; echo rc=$?")
        if not out.strip().endswith("rc=0"):
            raise ExperimentError(f"{host.name}: ip route change {' '.join(args)}: {out.strip()[:160]}")


def rto_min_ms_of(host: Any) -> list[float | None]:
    """The rto_min (ms) of each route of `host`, None where it has none (for the run record)."""
    out: list[float | None] = []
    for route in routes(host):
        metrics = route.get("metrics") or []
        value = next((m["rto_min"] for m in metrics if isinstance(m, dict) and "rto_min" in m), None)
        out.append(float(value) if isinstance(value, (int, float)) else None)
    return out
