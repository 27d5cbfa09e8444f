"""Which P4 compiler and switch run: the real ones (p4c-bm2-ss, simple_switch_grpc) or embedded.

The Makefile exports `P4C` and `SWITCH`; without them the real tools are used when on PATH,
else `python -m p4target compile|switch` with this interpreter.
"""
from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Tool:
    """A command line prefix and whether it is the real tool or the embedded target."""

    argv: tuple[str, ...]
    kind: str  # "real" | "embedded" | "custom"

    def describe(self) -> str:
        """`kind: command` for messages."""
        return f"{self.kind}: {shlex.join(self.argv)}"


def _resolve(env_var: str, real_name: str, embedded_sub: str) -> Tool:
    given = os.environ.get(env_var, "").strip()
    embedded = (sys.executable, "-m", "p4target", embedded_sub)
    if given:
        argv = tuple(shlex.split(given))
        if os.path.basename(argv[0]) == real_name:
            return Tool(argv, "real")
        if argv[1:3] == ("-m", "p4target"):
            return Tool(argv, "embedded")
        return Tool(argv, "custom")
    path = shutil.which(real_name)
    if path:
        return Tool((path,), "real")
    return Tool(embedded, "embedded")


def switch_tool() -> Tool:
    """The switch command (`$SWITCH`, else simple_switch_grpc on PATH, else embedded)."""
    return _resolve("SWITCH", "simple_switch_grpc", "switch")


def compiler_tool() -> Tool:
    """The compiler command (`$P4C`, else p4c-bm2-ss on PATH, else embedded)."""
    return _resolve("P4C", "p4c-bm2-ss", "compile")
