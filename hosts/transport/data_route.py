"""DATA from the socket straight into the native receive sessions: no Python object per datagram.

What `Mux` does with an arrival is `Port.parse`, then `Router.dispatch`, then the session's
`on_packet`. For a DATA datagram of an open native receive session (native_receiver.py) all
three decide nothing Python must see: so on a batch endpoint (`--io batch`) the native
`Receiver.route` (native/batch_io.cpp) checks the datagram as `Port.parse` does (its MAC trailer
under `--packet-mac all`, by the native MAC; then the header), finds the session by (round,
PULL flag) as the router does, admits the source as the port's `peer` and the
router's `data_sources` do, and hands the datagram to the session's core, in arrival order. The
first datagram that is anything else ends the native pass and takes the reference path (parse,
dispatch) before any datagram after it is looked at, so every session sees what it would see
one datagram at a time; the ACKs the cores ask for go out in that same order.

It applies only where nothing else could claim DATA: DATA unsigned or signed under the native
MAC (the Python reference MAC, where OpenSSL was missing at build, keeps it on the reference
path), no handler for the DATA kind, and an `admit` that judges DATA by its `data_sources`
table. `tests/integration/hosts/test_data_route.py` holds the routed
path to the reference, frame for frame and counter for counter.
"""
from __future__ import annotations

import time

from hosts import wire
from hosts.transport import mac_impl
from hosts.transport.endpoint import RECV_BATCH, Endpoint
from hosts.transport.router import Router

try:
    from hosts.transport.native_receiver import EVENT_COUNTERS
except ImportError:   # the extension was not built: nothing routes
    EVENT_COUNTERS = ()


def can_route(router: Router, endpoint: Endpoint) -> bool:
    """DATA arriving at `endpoint` may bypass `router` for its native sessions."""
    return (endpoint.receiver is not None
            and (not endpoint.signs_data or mac_impl.is_native(endpoint.mac))
            and wire.KIND_DATA not in router.handlers
            and (router.admit is None or router.data_sources is not None))


def routes(router: Router) -> list[tuple]:
    """(round, pull, core, send) of each of `router`'s sessions with a native core."""
    out = []
    for (round_, pull), session in router.sessions.items():
        route = getattr(session, "native_route", None)
        if route is not None:
            out.append((round_, pull, *route))
    return out


def receive(router: Router, endpoint: Endpoint, timeout: float) -> None:
    """Wait up to `timeout` s for arrivals, then take up to RECV_BATCH of them: DATA of a native
    session into its core, the rest through `router.dispatch` (`can_route` must hold)."""
    if not endpoint.wait(timeout):
        return
    counters = endpoint.counters
    mac = endpoint.mac if endpoint.signs_data else None
    budget = RECV_BATCH
    while budget > 0:
        sends, other, taken, err, counts = endpoint.receiver.route(
            budget, endpoint.job_id, endpoint.peer, routes(router), router.data_sources, mac)
        budget -= taken
        if err:
            counters["recv_error"] += 1
        if counts[0]:
            counters["packets_received"] += counts[0]
            counters["bytes_received"] += counts[1]
            for (_, name), n in zip(EVENT_COUNTERS, counts[2:]):
                if n:
                    counters[name] += n
        for send, frame in sends:
            send(frame)
        if other is None:
            return
        pkt = endpoint.parse(*other)
        if pkt is not None:
            router.dispatch(pkt, time.monotonic())
