"""The round protocol, written once: socket-free state machines of the worker's and the
parameter server's rounds (join, push, pull, PULL_REQ cadence, absence, epochs).

A machine owns no socket and reads no clock. It works on a `Router` (hosts/transport/router.py)
and sends through that router's `Port`; the driver feeds the router the datagrams that arrive,
ticks it, and calls the machine's `step(now)`, which returns a `Step`: the time the machine
wants to be stepped again without news, and the events that happened (a push or a pull closed).
`due(now)` tells a driver that blocks on a socket when to stop waiting and step. Two drivers
use them: the UDP exchange (`hosts/exchange/udp_server.py`, `udp_worker.py`, blocking calls
over Linux sockets) and the ns-3 driver (`sim/lossy.py`, event-driven on ns-3's clock).
"""
