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

USAGE = """\
usage: p4target switch [target options] (JSON | --no-p4) [-- grpc options]
target options:
  -i, --interface PORT@IFACE   attach Linux interface IFACE as port PORT (repeatable)
  --device-id N                device id (P4Runtime), default 0
  --pcap [DIR]                 capture IFACE_in.pcap / IFACE_out.pcap per port in DIR
  --use-files WAIT             read IFACE_in.pcap, write IFACE_out.pcap instead of interfaces,
                               starting after WAIT seconds
  --log-file PATH              write the log to PATH
  --log-console                write the log to stdout
  -L, --log-level LEVEL        trace|debug|info|warn|error|off (packets are logged at debug)
  --thrift-port N              BMv2 runtime Thrift port (simple_switch_CLI), default 9090, 0: any
  --impair PORT:SPEC           egress link impairment, e.g. 2:delay=5ms,jitter=1ms,loss=0.01,
                               burst=2s+200ms@0.7,rateburst=3s+100ms@200 (repeatable);
                               burst: from 2s for 200ms drop 70%; rateburst: from 3s for
                               100ms send at most 200 packets/s (queues build in the traffic
                               manager); times count from switch start
  --port-rate PORT:PPS         shape the whole egress port (all priority queues together) to PPS
                               packets/s, so strict priority decides who waits (repeatable)
run time: python -m p4target.switch.impair --thrift-port N PORT SPEC|off [--rate PPS|off]
  changes a port's impairment or rate while the switch runs (burst times count from the call)
grpc options (after --):
  --grpc-server-addr HOST:PORT P4Runtime server address, default 0.0.0.0:9559
  --cpu-port N                 P4Runtime packet-in/out port
  --priority-queues N          egress priority queues per port (1..8)
"""


def main(argv: list[str]) -> int:
    """Entry point of `python -m p4target switch`; returns the exit code."""
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
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
