"""What an experiment declares to run in ns-3 (`Simulation`) and what its simulated arm gets
(`SimulatedRun`). The harness (`experiments.backends.ns3.harness`) reads nothing else of it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from experiments.api import ArmResult
from experiments.config import Arm, ExperimentConfig


@dataclass(frozen=True)
class SimulatedRun:
    """One repetition of one arm, as the harness hands it to `Simulation.run_arm`."""

    config: ExperimentConfig
    arm: Arm
    rep: int                          # 0-based
    seed: int                         # config.seed + rep; ns-3's run number
    topo: Any                         # the arm's topology description (None: Simulation.own_fabric)
    jitter_s: float                   # spread of the workers' push starts per round
    out_dir: Path                     # the results directory (for extra files)
    options: Any                      # sim.network.SimOptions of the config
    reseed: Callable[[], object]      # resets ns-3's random streams to the repetition's start


@dataclass(frozen=True)
class Simulation:
    """How one experiment's arms run in ns-3."""

    run_arm: Callable[[SimulatedRun], ArmResult]
    # why an arm cannot be simulated (None: it can); None here: the push/pull rounds' rule
    # (`harness.rounds_supported`: ltp, mlt and ns-3's TCPs)
    supported: Callable[[ExperimentConfig, Arm], str | None] | None = None
    # the config before its arms are chosen (regimes expands its grid here)
    setup: Callable[[ExperimentConfig], ExperimentConfig] | None = None
    # fails early (SimError) on a config the simulation cannot run
    check: Callable[[ExperimentConfig], object] | None = None
    config: str | None = None         # the config --backend ns3 loads without --config (repository path)
    own_fabric: bool = False          # builds its own fabric: no topology from the config's settings
    jitter: bool = True               # spreads the push starts (recorded in each run's sim_rng)
    # where the simulated report differs from the emulation's: a module with any of the names
    # `harness.SimulatedReport` reads (TITLE, FIGURES, scale_text, ROUND_BREAKDOWN, summarize, plot)
    report: ModuleType | None = None
