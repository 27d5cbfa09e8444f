"""P4Runtime gRPC server of the embedded switch (what simple_switch_grpc serves through PI).

`start_p4runtime_server(target, addr, tls=None)` serves one `SwitchTarget`: pipeline configs (raw
BMv2 JSON + P4Info), Write/Read of every v1model entity kind, client arbitration, packet-in/out
with controller headers and digests. Modules: `server` (service, lifecycle), `translate`
(P4Info ids <-> engine names and match values), `tables`, `profiles`, `externs`,
`replication` (entity kinds), `entities` (dispatch), `pipeline` + `reconcile` (configs),
`arbitration`, `stream`, `admission` (the bound on open streams), `packet_io`, `digests`,
`errors`.
"""
from .errors import ListenError, P4RuntimeError
from .server import P4RuntimeServer, start_p4runtime_server

__all__ = ["start_p4runtime_server", "P4RuntimeServer", "P4RuntimeError", "ListenError"]
