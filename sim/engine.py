"""Loading ns-3 (the PyPI `ns3` wheel, cppyy bindings) and compiling gradlane's C++ parts once.

Importing ns-3 takes seconds, so nothing in `sim` imports it at module level: call
:func:`ns3` where a simulation is built. The C++ sources under ``sim/cpp/`` (switch behaviour,
traffic applications) are compiled by cppyy at the first call; their names live in
``cppyy.gbl.gradlane_sim``.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from sim.errors import SimError

CPP_DIR = Path(__file__).resolve().parent / "cpp"
SOURCES = ("switch.h", "routing.h", "apps.h", "links.h", "background.h")


@lru_cache(maxsize=None)
def ns3() -> Any:
    """The `ns` namespace of ns-3 with gradlane's C++ compiled in; SimError if ns-3 is missing."""
    try:
        from ns import ns  # noqa: PLC0415 (seconds to import: only when a simulation is built)
    except (ImportError, SystemExit):
        raise SimError("ns-3 is not installed: `pip install ns3` (requirements.txt pins it; "
                       "`make setup` installs it)") from None
    import cppyy  # noqa: PLC0415

    for name in SOURCES:
        path = CPP_DIR / name
        if not cppyy.include(str(path)):
            raise SimError(f"cppyy could not compile {path}")
    return ns


def cpp() -> Any:
    """The compiled `gradlane_sim` C++ namespace (loads ns-3 first)."""
    ns3()
    import cppyy  # noqa: PLC0415

    return cppyy.gbl.gradlane_sim
