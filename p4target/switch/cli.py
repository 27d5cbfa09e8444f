"""`p4target switch`: a simple_switch_grpc look-alike on Linux interfaces (or pcap files).

Parses simple_switch / simple_switch_grpc flags, runs the switch (`process.SwitchProcess`) until SIGTERM or
SIGINT (received by the main thread only), then shuts down cleanly and exits 0. User errors (bad flags, missing interface,
port in use, bad JSON) print one line on stderr and exit non-zero.
"""
from __future__ import annotations

import os
import signal
import sys

from p4target.errors import P4TargetError
from p4target.switch.errors import SwitchError
from p4target.switch.options import JSON_VERSION, VERSION, parse_options
from p4target.switch.process import SwitchProcess

EXIT_USAGE = 2
EXIT_START_FAILED = 1

USAGE = """\
usage: p4target switch [options] (JSON | --no-p4) [-- target options]
Flags and syntax are simple_switch's and simple_switch_grpc's (BMv2): `--name VALUE`,
`--name=VALUE`, a unique prefix of a name, `-i 1@veth1`, `-i1@veth1`.
options:
  -h, --help                   print this help and exit
  -v, --version                print the version and exit
  --json-version               print the highest BMv2 JSON version read and exit
  -i, --interface PORT@IFACE   attach Linux interface IFACE as port PORT (repeatable)
  --device-id N                device id (P4Runtime), default 0
  --pcap [DIR]                 capture IFACE_in.pcap / IFACE_out.pcap per port in DIR (default .)
  --use-files WAIT             ports are pcap files: read IFACE_in.pcap (a file or a FIFO,
                               opened in port order), write IFACE_out.pcap; start reading
                               packets after WAIT seconds
  --log-file PATH              write the log to PATH (not with --log-console)
  --log-console                write the log to stdout
  -L, --log-level LEVEL        trace|debug|info|warn|error|off, default trace as BMv2's (packets
                               are logged at debug: -L warn keeps a busy switch's log small)
  --log-flush                  accepted (this switch's log is always flushed per line)
  --log-file-max-size N, --log-file-max-files N
                               rotate the --log-file at N bytes (default 5242880), keeping N
                               rotated files (default 3), as BMv2: s1.log -> s1.1.log (BMv2
                               1.15.5 writes s1.log.txt and rotates it to s1.log.1.txt)
  --dump-packet-data N         accepted, no effect (packets are logged at debug level)
  --nanolog ADDR, --notifications-addr ADDR, --debugger, --debugger-addr ADDR
                               accepted, no effect (BMv2's nanomsg logging and debugger)
  --max-port-count N           at most N interfaces (default 512)
  --no-p4                      start without a program (load one over P4Runtime or Thrift)
  --thrift-port N              BMv2 runtime Thrift port (simple_switch_CLI), default 9090, 0: any
  --thrift-ip ADDR             ours (BMv2 has no such flag): the address the Thrift server
                               listens on, default 0.0.0.0 as BMv2; 127.0.0.1 for loopback only
  --thrift-any-user            ours: serve every Thrift client; by default only clients on this
                               machine running as the switch's user or root are served
  --impair PORT:SPEC           ours: egress link impairment, e.g. 2:delay=5ms,jitter=1ms,loss=0.01,
                               burst=2s+200ms@0.7,rateburst=3s+100ms@200 (repeatable);
                               burst: from 2s for 200ms drop 70%; rateburst: from 3s for
                               100ms send at most 200 packets/s (queues build in the traffic
                               manager); times count from switch start
  --port-rate PORT:PPS         ours: shape the whole egress port (all priority queues together)
                               to PPS packets/s, so strict priority decides who waits (repeatable)
  --port-byte-rate PORT:BYTES_PER_S
                               ours: the same in bytes/s (a packet costs its length), applied
                               together with any --port-rate; BMv2 has no byte rate (repeatable)
  refused, with a message: --packet-in, --restore-state
run time: python -m p4target.switch.impair --thrift-port N PORT SPEC|off [--rate PPS|off]
  changes a port's impairment or rate while the switch runs (burst times count from the call)
target options (after --):
  --grpc-server-addr HOST:PORT P4Runtime server address, default 0.0.0.0:9559
  --grpc-server-ssl            serve P4Runtime over TLS with --grpc-server-cert and
  --grpc-server-cert PEM       --grpc-server-key; --grpc-server-cacert PEM and
  --grpc-server-key PEM        --grpc-server-with-client-auth require client certificates
  --grpc-server-cacert PEM, --grpc-server-with-client-auth
  --cpu-port N                 P4Runtime packet-in/out port (not 0)
  --priority-queues N          egress priority queues per port (1..8)
  --drop-port 511              accepted with BMv2's default only
  --enable-swap, --disable-swap, --max-mc-groups N, --max-l1-entries N, --max-l2-entries N
                               accepted, no effect
  refused, with a message: --dp-grpc-server-addr, --load-modules
"""


def main(argv: list[str]) -> int:
    """Entry point of `python -m p4target switch`; returns the exit code."""
    try:
        options = parse_options(argv)
    except SwitchError as exc:
        sys.stderr.write(f"p4target switch: error: {exc}\n")
        return EXIT_USAGE
    if options.show is not None:
        sys.stdout.write({"help": USAGE, "version": VERSION + "\n", "json-version": JSON_VERSION + "\n"}[options.show])
        return 0
    for note in options.notes:  # as BMv2 prints them, on stdout before starting
        sys.stdout.write(note + "\n")
    sys.stdout.flush()
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
