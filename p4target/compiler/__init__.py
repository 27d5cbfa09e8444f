"""The P4_16 (v1model) compiler of the embedded target: source -> BMv2 JSON + P4Info.

    compile_file(path, include_dirs=(), defines=None) -> CompiledProgram
    compile_text(text, file="<text>", include_dirs=(), defines=None) -> CompiledProgram

`CompiledProgram.bmv2_json` is a dict in BMv2's JSON format; `.p4info` is a
`p4.config.v1.p4info_pb2.P4Info`. Errors raise `p4target.errors.CompileError`.
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from p4target.compiler import ast
from p4target.compiler.context import Context
from p4target.compiler.parser import parse_program, parse_text
from p4target.compiler.v1switch import lower_program
from p4target.errors import CompileError

__all__ = ["CompiledProgram", "compile_file", "compile_text"]


class CompiledProgram:
    """The artefacts of one compilation (P4Info is built on first use)."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self.bmv2_json: dict = ctx.out.document()
        self._p4info: Any = None

    @property
    def p4info(self) -> Any:
        if self._p4info is None:
            # here, not at the top: P4Info needs protobuf, slow to import and unused by most runs
            from p4target.compiler.p4info_hints import build_program_p4info
            self._p4info = build_program_p4info(self._ctx, self.bmv2_json)
        return self._p4info

    @property
    def hidden_names(self) -> set[str]:
        """Synthesized tables and actions (left out of P4Info, as p4c's @hidden ones)."""
        return set(self._ctx.hidden)


def _lower(program: ast.Program, name: str) -> CompiledProgram:
    try:
        return CompiledProgram(lower_program(program, name))
    except RecursionError:
        raise CompileError("program nests too deeply") from None


def compile_file(path: str, include_dirs: Sequence[str] = (),
                 defines: Mapping[str, str] | None = None) -> CompiledProgram:
    """Compile a P4_16 v1model program file."""
    if not os.path.isfile(path):
        raise CompileError(f"cannot open '{path}': no such file")
    program = parse_program(path, include_dirs, defines)
    return _lower(program, os.path.basename(path))


def compile_text(text: str, file: str = "<text>", include_dirs: Sequence[str] = (),
                 defines: Mapping[str, str] | None = None) -> CompiledProgram:
    """Compile P4_16 program text (``file`` names it in errors)."""
    program = parse_text(text, file, include_dirs, defines)
    return _lower(program, os.path.basename(file))
