"""The incast experiment (experiments/ltp_incast.py) in ns-3: one parameter server and its
workers, push/pull rounds; TCP arms by ns-3's TCP (`harness.run_tcp_arm`), gradlane and MLT by
the agents' transport code (`lossy_arm`)."""
from __future__ import annotations

from experiments.backends.ns3.harness import run_rounds_arm
from experiments.backends.ns3.simulation import Simulation

SIMULATION = Simulation(run_arm=run_rounds_arm)
