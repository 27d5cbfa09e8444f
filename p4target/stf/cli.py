"""`p4target stf PROGRAM.p4 TEST.stf`: run an STF packet test on the embedded engine."""
from __future__ import annotations

import argparse
import json
import sys

from p4target.engine import Engine, EngineError

from .errors import StfError, StfSyntaxError
from .parser import parse_stf
from .runner import StfResult, StfRunner


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as argparse but without usage spam
        raise SystemExit(f"p4target stf: error: {message}")


def _load_json(args: argparse.Namespace) -> dict:
    if args.json:
        try:
            with open(args.json, encoding="utf-8") as fh:
                return json.load(fh)
        except OSError as exc:
            raise StfError(f"cannot read {args.json}: {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise StfError(f"{args.json}: not valid JSON: {exc}") from None
    try:
        from p4target.compiler import compile_file
    except ImportError:
        raise StfError("the P4 compiler (p4target.compiler) is not available; pass --json FILE") from None
    defines = {}
    for d in args.define:
        name, _, value = d.partition("=")
        defines[name] = value or "1"
    try:
        return compile_file(args.program, include_dirs=tuple(args.include), defines=defines).bmv2_json
    except Exception as exc:  # the compiler's typed errors print as FILE:LINE:COL: error: ...
        if type(exc).__module__.startswith("p4target"):
            raise StfError(str(exc)) from None
        raise


def run_stf(bmv2_json: dict, stf_text: str, stf_file: str = "<stf>", priority_queues: int = 1) -> StfResult:
    """Load the program into a fresh engine (``priority_queues`` per port, as simple_switch's
    ``--priority-queues``) and run the STF text; returns the result."""
    commands = parse_stf(stf_text, stf_file)
    engine = Engine(bmv2_json, priority_queues=priority_queues)
    return StfRunner(engine, stf_file).run(commands)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns 0 when every expectation matched, 1 on failures, 2 on bad input."""
    ap = _Parser(prog="p4target stf", description="Run an STF packet test against a P4 program.")
    ap.add_argument("program", help="P4_16 program (ignored with --json)")
    ap.add_argument("stf", help="STF test file")
    ap.add_argument("-I", dest="include", action="append", default=[], help="include directory")
    ap.add_argument("-D", dest="define", action="append", default=[], help="NAME[=VALUE] define")
    ap.add_argument("--json", help="run this BMv2 JSON (e.g. p4c's) instead of compiling PROGRAM")
    ap.add_argument("-q", "--quiet", action="store_true", help="print failures only")
    ap.add_argument("--priority-queues", type=int, default=1, metavar="N",
                    help="queues per port, as simple_switch's --priority-queues (1..8; gradlane's "
                         "data plane needs 8: with 1, a packet of priority > 0 is dropped, as on BMv2)")
    try:
        args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        if isinstance(exc.code, str):
            sys.stderr.write(exc.code + "\n")
            return 2
        return int(exc.code or 0)
    try:
        with open(args.stf, encoding="utf-8") as fh:
            stf_text = fh.read()
    except OSError as exc:
        sys.stderr.write(f"p4target stf: error: cannot read {args.stf}: {exc.strerror}\n")
        return 2
    try:
        commands = parse_stf(stf_text, args.stf)
        if not 1 <= args.priority_queues <= 8:
            raise StfError(f"--priority-queues must be 1 to 8, got {args.priority_queues}")
        prog = _load_json(args)
        engine = Engine(prog, priority_queues=args.priority_queues)
    except StfSyntaxError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    except EngineError as exc:
        sys.stderr.write(f"p4target stf: error: {exc}\n")
        return 2
    result = StfRunner(engine, args.stf).run(commands)
    for line in result.lines:
        if not args.quiet or "FAIL" in line:
            print(line)
    print(f"{'PASS' if result.ok else 'FAIL'}: {args.stf} ({result.failures} failure(s))")
    return 0 if result.ok else 1
