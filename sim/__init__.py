"""gradlane in ns-3: the same topologies, switch policy and experiments at datacenter scale.

Modules: `engine` (loads ns-3 and compiles `cpp/` with cppyy), `errors`, `tables` (the
controller's entries into the simulated switch's tables), `network` (a topology description as
ns-3 nodes, links and switch queues), `topologies` (sized leaf-spine), `tcp` (ns-3's TCP for the
baselines), `rounds` (a push/pull job's rounds over TCP), `harness` (`python -m experiments
NAME --backend ns3`). Per-packet work is C++ (`cpp/switch.h`, `cpp/apps.h`). docs/ns3.md.
"""
