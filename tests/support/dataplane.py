"""gradlane's data plane (`p4src/gradlane.p4`) compiled with the embedded compiler, for tests
that need its real P4Info or BMv2 JSON rather than a hand-written copy of its names and widths."""
from __future__ import annotations

from pathlib import Path

from p4target.compiler import CompiledProgram, compile_file

REPO = Path(__file__).resolve().parents[2]
P4SRC = REPO / "p4src"
PROGRAM = P4SRC / "gradlane.p4"


def compile_dataplane() -> CompiledProgram:
    """Compile `p4src/gradlane.p4` (includes from `p4src/`)."""
    return compile_file(str(PROGRAM), include_dirs=[str(P4SRC)])
