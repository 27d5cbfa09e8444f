"""`p4target switch`: parse simple_switch_grpc flags and run the switch.

Only flag validation is built so far; a valid command line reports that the data path is not
available yet and exits non-zero, so callers never mistake it for a running switch.
"""
from __future__ import annotations

import sys

from p4target.switch.errors import SwitchError
from p4target.switch.options import parse_options

EXIT_USAGE = 2
EXIT_NOT_BUILT = 3


def main(argv: list[str]) -> int:
    """Entry point of `python -m p4target switch`; returns the exit code."""
    try:
        options = parse_options(argv)
    except SwitchError as exc:
        sys.stderr.write(f"p4target switch: error: {exc}\n")
        return EXIT_USAGE
    sys.stderr.write(
        "p4target switch: error: the switch data path is not built yet "
        f"(flags are valid: {len(options.interfaces)} port(s))\n"
    )
    return EXIT_NOT_BUILT
