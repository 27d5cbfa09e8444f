"""Where an experiment's arms run: `emulation` (Mininet, BMv2 and the real agents, through
`topo.session`) or `ns3` (the `sim` library: the same topologies, policy and transport code,
simulated). Importing this package imports neither: `experiments.cli` imports the one
`--backend` names, so a simulated run never loads Mininet.

Each experiment module gives its emulated arm as `run_arm(ctx)` and, when it is simulated, its
simulated arm as `simulated()`, which returns the `ns3.simulation.Simulation` of its module in
`ns3/` (experiments/README.md).
"""
