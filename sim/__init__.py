"""gradlane in ns-3: the same topologies, switch policy and experiments at datacenter scale.

Modules: `engine` (loads ns-3 and compiles `cpp/` with cppyy), `errors`, `tables` (the
controller's entries into the simulated switch's tables and routes), `network` (a topology
description as ns-3 nodes, links, switch queues and routing), `topologies` (sized leaf-spine),
`tcp` (ns-3's TCP for the baselines), `rounds` (a push/pull job's rounds over TCP), `lossy`
(gradlane's and MLT's rounds by the agents' transport code), `background` (TCP background
flows), `path_timers`, `layer_split`, `isolate` (a simulation in a forked child). A library:
it imports neither `experiments` nor `topo`; `python -m experiments NAME --backend ns3`
(experiments/backends/ns3/) runs the experiments on it.
Per-packet work is C++: `cpp/switch.h` (queues, classification, budgets, ECN/PCN, telemetry),
`cpp/routing.h` (forwarding by the controller's routes), `cpp/apps.h` (traffic).
docs/ns3.md says what is simulated and what is not yet.
"""
