"""Mininet topologies for gradlane: descriptions, the P4 switch node, `make run|demo|stop|check-env`.

`topo` wires the other packages together: it builds the network from a topology description
(`topo.description`), runs one P4 switch process per switch (`topo.switch_node`), starts the
controller daemon and the host agents, and records every process it starts in a PID file so
`make stop` can end them (`topo.pidfile`; `python -m topo.stop`).
"""
