"""`p4target compile`: compile a P4_16 v1model program to BMv2 JSON (+ P4Info) with
p4c-bm2-ss's command line.

Exit codes: 0 success, 1 compile or I/O error (one line per error on stderr, nothing
written), 2 bad command line. Outputs are written only after the whole compilation
succeeded, each through a temporary file renamed into place.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from p4target.atomic_files import write_files
from p4target.compiler.p4info import FORMATS_BY_SUFFIX, p4info_format, serialize_p4info
from p4target.errors import CompileError, P4TargetError

PROG = "p4target compile"
EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _UsageError(Exception):
    """A malformed command line (exit 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message)


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("gradlane")
    except Exception:
        return "0.1.0"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (p4c-bm2-ss's flags that apply to this compiler)."""
    ap = _Parser(prog=PROG, add_help=False, allow_abbrev=False,
                 description="Compile a P4_16 (v1model) program to BMv2 JSON and P4Info, "
                             "like p4c-bm2-ss.")
    ap.add_argument("source", nargs="?", help="P4_16 source file")
    ap.add_argument("-o", dest="output", metavar="OUT.json",
                    help="BMv2 JSON output file (default: <source basename>.json in the current directory)")
    ap.add_argument("--p4runtime-files", dest="p4runtime_files", action="append", default=[],
                    metavar="FILE[,FILE...]",
                    help="write P4Info to these files; format by suffix: "
                         + ", ".join(FORMATS_BY_SUFFIX))
    ap.add_argument("--p4runtime-file", dest="p4runtime_file", metavar="FILE",
                    help="[deprecated] write P4Info to FILE in --p4runtime-format")
    ap.add_argument("--p4runtime-format", dest="p4runtime_format", choices=("binary", "json", "text"),
                    help="[deprecated] format for --p4runtime-file (default binary)")
    ap.add_argument("--p4info", dest="p4info", action="append", default=[], metavar="FILE",
                    help="write P4Info to FILE (format by suffix; same as --p4runtime-files)")
    ap.add_argument("-I", dest="include", action="append", default=[], metavar="DIR",
                    help="add an include directory (repeatable)")
    ap.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]",
                    help="define a preprocessor macro (repeatable)")
    ap.add_argument("--arch", default="v1model", help="architecture (only v1model)")
    ap.add_argument("--target", default="bmv2", help="target (only bmv2)")
    ap.add_argument("--p4v", choices=("14", "16", "1.0", "1.2"), default=None,
                    help="[deprecated] language version; only 16")
    ap.add_argument("--std", choices=("p4-14", "p4-16", "14", "16"), default=None,
                    help="language version; only p4-16")
    ap.add_argument("--help", "-h", action="store_true", help="print this help and exit")
    ap.add_argument("--version", action="store_true", help="print the compiler version and exit")
    return ap


def _defines(items: list[str]) -> dict[str, str]:
    defines: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not _NAME_RE.match(name):
            raise _UsageError(f"-D {item}: '{name}' is not a macro name")
        defines[name] = value if eq else "1"
    return defines


def _p4info_outputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(path, format) for every requested P4Info file; suffixes checked before compiling."""
    outputs: list[tuple[str, str]] = []
    for group in args.p4runtime_files + args.p4info:
        for path in group.split(","):
            if not path:
                raise _UsageError(f"empty file name in '{group}'")
            outputs.append((path, p4info_format(path)))
    if args.p4runtime_file:
        outputs.append((args.p4runtime_file, args.p4runtime_format or "binary"))
    elif args.p4runtime_format:
        raise _UsageError("--p4runtime-format needs --p4runtime-file (with --p4runtime-files the "
                          "format follows the suffix)")
    return outputs


def _check_language(args: argparse.Namespace) -> None:
    if args.arch != "v1model":
        raise P4TargetError(f"architecture '{args.arch}' is not supported (only v1model)")
    if args.target != "bmv2":
        raise P4TargetError(f"target '{args.target}' is not supported (only bmv2)")
    for version in (args.p4v, args.std):
        if version in ("14", "p4-14", "1.0"):
            raise P4TargetError("P4_14 is not supported (only P4_16)")


def run(args: argparse.Namespace) -> int:
    """Compile and write outputs for parsed arguments; returns the exit code."""
    _check_language(args)
    p4info_files = _p4info_outputs(args)
    defines = _defines(args.define)
    if not args.source:
        raise _UsageError("no input file given")
    source = args.source
    output = args.output or (Path(source).stem + ".json")
    if os.path.isdir(output):  # as the p4c driver does with an output directory
        output = os.path.join(output, Path(source).stem + ".json")
    seen: dict[str, str] = {}
    for path in [output] + [p for p, _ in p4info_files]:
        key = os.path.realpath(path)
        if key in seen:
            raise _UsageError(f"output file '{path}' is named more than once")
        seen[key] = path
    if not os.path.exists(source):
        raise P4TargetError(f"{source}: No such file or directory")
    if not os.path.isfile(source):
        raise P4TargetError(f"{source}: not a regular file")

    from p4target.compiler import compile_file  # here, not at the top: this module is part of that package
    try:
        program = compile_file(source, include_dirs=list(args.include), defines=defines)
        files = [(output, (json.dumps(program.bmv2_json, indent=2) + "\n").encode("utf-8"))]
        for path, fmt in p4info_files:
            files.append((path, serialize_p4info(program.p4info, fmt)))
    except P4TargetError:
        raise
    except Exception as exc:  # a compiler bug: report it on one line like p4c's "Compiler Bug"
        if os.environ.get("P4TARGET_TRACEBACK"):
            raise
        raise P4TargetError(f"internal compiler error: {type(exc).__name__}: {exc} "
                            "(set P4TARGET_TRACEBACK=1 for the traceback)") from None
    write_files(files)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m p4target compile`; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.help:
            sys.stdout.write(parser.format_help())
            return EXIT_OK
        if args.version:
            sys.stdout.write(f"{PROG} (p4c-bm2-ss compatible)\nVersion {_version()}\n")
            return EXIT_OK
        return run(args)
    except _UsageError as exc:
        sys.stderr.write(f"{PROG}: error: {exc} (see --help)\n")
        return EXIT_USAGE
    except CompileError as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_ERROR
    except P4TargetError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return EXIT_ERROR
