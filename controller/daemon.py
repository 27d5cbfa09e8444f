"""The controller daemon: primary controller of every switch, serving gradctl on a unix socket.

    python -m controller.daemon --topology logs/T.topology.json --p4info build/gradlane.p4info.txtpb \\
        --bmv2-json build/gradlane.json [--policy FILE] [--listen logs/controller.sock] [--once] \\
        [--pki DIR | --plaintext]

It connects to every switch as primary (one election id), pushes the pipeline, programs the
network, applies the policy, and keeps switches that restart in step. Unreachable switches are
reported and retried in the background. ``--once`` programs everything and exits (status 1 when a
switch could not be programmed). The PID file goes under logs/. The switches are reached over
TLS with the run's client certificate (``--pki DIR``, default the ``pki/`` folder beside the
topology description; controller/tls.py), or in plaintext with ``--plaintext``: one of the two
must hold, nothing falls back.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Sequence

from p4.config.v1 import p4info_pb2

from controller import errors
from controller.api import ApiServer
from controller.manager import DAEMON_ELECTION_ID, NetworkController
from controller.network import ECN_DEPTHS, NetworkOptions
from controller.p4info import load_p4info
from controller.policy import load_policy
from controller.tls import add_tls_arguments, resolve_client_tls
from controller.topology import Topology
from p4target.atomic_files import AtomicWriteError, write_text

DEFAULT_SOCKET = "logs/controller.sock"
DEFAULT_PID_FILE = "logs/controller.pid"


def default_socket() -> Path:
    """The API socket: $GRADLANE_CONTROLLER_SOCKET, else logs/controller.sock."""
    return Path(os.environ.get("GRADLANE_CONTROLLER_SOCKET", DEFAULT_SOCKET))


def read_bmv2_json(path: str) -> bytes:
    """The BMv2 JSON file's bytes, checked to be JSON."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise errors.ConfigError(f"cannot read BMv2 JSON {path}: {exc.strerror}") from None
    try:
        json.loads(data)
    except ValueError as exc:
        raise errors.ConfigError(f"{path}: not JSON ({exc})") from None
    return data


def load_p4info_file(path: str) -> "p4info_pb2.P4Info":
    """The P4Info message of ``path`` with a one-line error when missing."""
    if not Path(path).exists():
        raise errors.ConfigError(f"cannot read P4Info {path}: no such file")
    return load_p4info(path)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"controller: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The daemon's command line."""
    p = _Parser(prog="python -m controller.daemon",
                                description="gradlane controller daemon (primary for every switch)")
    p.add_argument("--topology", required=True, help="topology description JSON (logs/<topo>.topology.json)")
    p.add_argument("--p4info", required=True, help="P4Info file (text or binary)")
    p.add_argument("--bmv2-json", required=True, help="BMv2 JSON pushed as the device config")
    p.add_argument("--policy", help="policy file (YAML/JSON) applied at start-up when there is no "
                                    "state file yet (afterwards the state file is the truth)")
    p.add_argument("--listen", default=None, help=f"unix socket for gradctl (default {DEFAULT_SOCKET})")
    p.add_argument("--pid-file", default=DEFAULT_PID_FILE, help="where to write the PID")
    p.add_argument("--state-file", default=None,
                   help="controller state (policy, slots, PCN overrides); default logs/<topo>.controller.json")
    p.add_argument("--timeout", type=float, default=3.0, help="per-RPC and connect timeout (s)")
    add_tls_arguments(p)
    p.add_argument("--no-queues", action="store_true", help="do not set queue rate/depth over Thrift")
    p.add_argument("--ecn-normal", type=int, default=NetworkOptions.ecn_normal,
                   help="default ECN marking threshold (packets)")
    p.add_argument("--ecn-pcn", type=int, default=NetworkOptions.ecn_pcn,
                   help="default ECN threshold while a PCN burst is pending (packets)")
    p.add_argument("--ecn-depth", choices=ECN_DEPTHS, default=NetworkOptions.ecn_depth,
                   help="what a port compares its ECN threshold with: queue (the packet's own "
                        "priority queue, default) or port (its occupancy over all its queues)")
    p.add_argument("--once", action="store_true", help="program every switch, then exit")
    p.add_argument("--adapt-interval", type=float, default=1.0,
                   help="seconds between steps of the PCN threshold law of jobs whose policy "
                        "turns it on (docs/control-laws.md); 0 = never (default 1)")
    return p


def _log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Run the daemon (or one programming pass with --once); returns the exit status."""
    topo = Topology.load(args.topology)
    p4info = load_p4info_file(args.p4info)
    config = read_bmv2_json(args.bmv2_json)
    policy = load_policy(args.policy) if args.policy else None
    tls = resolve_client_tls(args.pki, args.plaintext, args.topology)
    state_file = Path(args.state_file or f"logs/{topo.name}.controller.json")
    options = NetworkOptions(ecn_normal=args.ecn_normal, ecn_pcn=args.ecn_pcn,
                             ecn_depth=args.ecn_depth)
    ctl = NetworkController(topo, p4info, config, election_id=DAEMON_ELECTION_ID, options=options,
                            timeout=args.timeout, state_file=state_file, log=_log,
                            set_queues=not args.no_queues, reconnect=not args.once, tls=tls)
    server: ApiServer | None = None
    pid_file = Path(args.pid_file)
    stop = threading.Event()
    try:
        if not args.once:
            server = ApiServer(ctl, Path(args.listen) if args.listen else default_socket())
            pid_file.parent.mkdir(parents=True, exist_ok=True)
            try:   # through the atomic writer: a symlink planted at the path is replaced, not followed
                write_text(pid_file, f"{os.getpid()}\n")
            except AtomicWriteError as exc:
                raise errors.ConfigError(f"--pid-file: {exc}") from None
            signal.signal(signal.SIGTERM, lambda *_: stop.set())
            signal.signal(signal.SIGINT, lambda *_: stop.set())
        if server is not None:
            server.start()
            _log(f"serving gradctl on {server.path} (pid {os.getpid()})")
        results = ctl.start()
        for name, err in results.items():
            _log(f"{name}: {'programmed' if err is None else 'NOT programmed: ' + err}")
        if policy is not None and ctl.state_loaded:
            _log(f"policy {args.policy} not applied: the state file {state_file} holds the "
                 "current policy (--policy seeds only a daemon without state)")
        elif policy is not None:
            summary = ctl.apply_policy(policy)
            _log(f"policy {args.policy}: {summary['rules']} rules; {json.dumps(summary['switches'])}"
                 + (f"; pending on {', '.join(summary['pending'])}" if summary["pending"] else ""))
        failed = sorted(n for n, e in results.items() if e is not None)
        if failed:
            _log(f"switches not programmed: {', '.join(failed)}"
                 + ("" if args.once else " (retrying in the background)"))
        else:
            _log("all switches programmed")
        ctl.ready.set()
        if args.once:
            return 1 if failed else 0
        ctl.start_adapting(args.adapt_interval)
        while not stop.wait(0.5):
            pass
        return 0
    finally:
        if server is not None:
            server.stop()
        ctl.stop()
        if not args.once:
            try:
                if pid_file.read_text().strip() == str(os.getpid()):
                    pid_file.unlink()
            except OSError:
                pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `python -m controller.daemon`."""
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except errors.ControllerError as exc:
        print(f"controller: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
