"""Every P4 program in the repository (conformance corpus, p4src) parses with the front end."""
from __future__ import annotations

from pathlib import Path

import pytest

from p4target.compiler import ast
from p4target.compiler.parser import parse_program

REPO = Path(__file__).resolve().parents[5]
PROGRAMS = sorted(p for p in (REPO / "tests" / "conformance").rglob("*.p4")
                  if p.with_suffix(".stf").exists())
if (REPO / "p4src" / "gradlane.p4").exists():
    PROGRAMS.append(REPO / "p4src" / "gradlane.p4")


@pytest.mark.parametrize("path", PROGRAMS, ids=[str(p.relative_to(REPO)) for p in PROGRAMS])
def test_program_parses_to_a_v1switch_main(path):
    prog = parse_program(str(path), include_dirs=[str(path.parent)])
    main = prog.declarations[-1]
    assert isinstance(main, ast.InstantiationDecl) and main.name == "main"
    assert main.type.name == "V1Switch" and len(main.args) == 6
