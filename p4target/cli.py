"""`p4target` command line: `compile` (p4c-bm2-ss flags), `switch` (simple_switch_grpc flags), `stf`."""
from __future__ import annotations

import importlib
import sys

SUBCOMMANDS = {
    "compile": ("p4target.compiler.cli", "P4_16 (v1model) -> BMv2 JSON + P4Info, like p4c-bm2-ss"),
    "switch": ("p4target.switch.cli", "software switch serving P4Runtime, like simple_switch_grpc"),
    "stf": ("p4target.stf.cli", "run an STF packet test against a P4 program"),
}

USAGE = "usage: p4target {" + ",".join(SUBCOMMANDS) + "} [options]\n" + "".join(
    f"  {name:<8} {help_text}\n" for name, (_, help_text) in SUBCOMMANDS.items()
)


def main(argv: list[str] | None = None) -> int:
    """Dispatch to a subcommand's own `main(argv)`; returns the process exit code."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in SUBCOMMANDS:
        sys.stderr.write(f"p4target: error: unknown command '{name}' (choose from {', '.join(SUBCOMMANDS)})\n")
        return 2
    module = importlib.import_module(SUBCOMMANDS[name][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
