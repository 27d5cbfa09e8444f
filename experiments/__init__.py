"""gradlane experiments: each paper's headline result reproduced in emulation.

The registry: every module of this package that defines `FIGURES`, `run_arm`, `summarize` and
`plot` (experiments/README.md) is an experiment, named by its module name; its config is
experiments/configs/NAME.yaml. Harness modules are not experiments.
"""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

from experiments.errors import UnknownExperimentError

REQUIRED = ("FIGURES", "run_arm", "summarize", "plot")
_HARNESS = {"api", "conditions", "config", "errors", "plots", "records", "report", "stats",
            "training", "cli"}


def names() -> list[str]:
    """Names of the registered experiments (modules that provide REQUIRED), sorted by ORDER then name."""
    found = []
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.ispkg or info.name.startswith("_") or info.name in _HARNESS:
            continue
        module = importlib.import_module(f"experiments.{info.name}")
        if all(hasattr(module, attr) for attr in REQUIRED):
            found.append((getattr(module, "ORDER", 100), info.name))
    return [name for _, name in sorted(found)]


def get(name: str) -> ModuleType:
    """The experiment module called `name`; UnknownExperimentError naming the known ones."""
    known = names()
    if name not in known:
        raise UnknownExperimentError(f"unknown experiment '{name}' (known: {', '.join(known) or 'none'})")
    return importlib.import_module(f"experiments.{name}")
