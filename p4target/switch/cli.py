"""`p4target switch`: a simple_switch_grpc look-alike on Linux interfaces (or pcap files).

Parses simple_switch_grpc flags, runs the switch (`process.SwitchProcess`) until SIGTERM or
SIGINT (received by the main thread only), then shuts down cleanly and exits 0. User errors (bad flags, missing interface,
port in use, bad JSON) print one line on stderr and exit non-zero.
"""
from __future__ import annotations

import os
import signal
import sys

from p4target.errors import P4TargetError
from p4target.switch.errors import SwitchError
from p4target.switch.options import parse_options
from p4target.switch.process import SwitchProcess

EXIT_USAGE = 2
EXIT_START_FAILED = 1


def main(argv: list[str]) -> int:
    """Entry point of `python -m p4target switch`; returns the exit code."""
    try:
        options = parse_options(argv)
    except SwitchError as exc:
        sys.stderr.write(f"p4target switch: error: {exc}\n")
        return EXIT_USAGE
    # Block the stop signals before any thread exists, so every thread (ours, gRPC's) inherits
    # the mask and only the main thread's sigwait receives them.
    # gRPC's C core would print its own line before ours for a bind error (one line per error)
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    switch = SwitchProcess(options)
    try:
        try:
            switch.start()
        except (SwitchError, P4TargetError) as exc:
            sys.stderr.write(f"p4target switch: error: {exc}\n")
            return EXIT_START_FAILED
        signal.sigwait(stop_signals)
        return 0
    finally:
        switch.stop()
        signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)
