"""`python -m p4target.switch.impair`: change a running switch's link impairment or port rate.

    python -m p4target.switch.impair --thrift-port N PORT SPEC    set PORT's impairment
    python -m p4target.switch.impair --thrift-port N PORT off     clear it
    python -m p4target.switch.impair --thrift-port N PORT --rate PPS|off
    python -m p4target.switch.impair --thrift-port N PORT         show both

SPEC is the `--impair` syntax without the port (see `links.impairments`); burst times count from
this call. Input is checked here and again by the switch before anything is applied; errors
print one line and exit non-zero (2: bad input, 1: the switch refused or is unreachable).
"""
from __future__ import annotations

import argparse
import logging
import sys

from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.Thrift import TException
from thrift.transport import TSocket, TTransport

from p4target.switch.errors import OptionError
from p4target.switch.links.impairments import parse_impairment_spec
from p4target.switch.thrift.links import SERVICE, LinkClient

EXIT_FAILED = 1
EXIT_USAGE = 2
PROG = "p4target switch impair"


class _RaisingParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise OptionError(message)


def _parser() -> _RaisingParser:
    parser = _RaisingParser(prog=PROG, description="Change a running switch's link impairment or port rate.")
    parser.add_argument("--thrift-port", type=int, required=True, help="the switch's Thrift port")
    parser.add_argument("--thrift-ip", default="127.0.0.1", help="the switch's address (default 127.0.0.1)")
    parser.add_argument("--rate", metavar="PPS|off", help="shape PORT to PPS packets/s outside rate bursts")
    parser.add_argument("port", type=int, metavar="PORT")
    parser.add_argument("spec", nargs="?", metavar="SPEC|off",
                        help="e.g. delay=5ms,loss=0.01,burst=2s+200ms@0.7,rateburst=1s+200ms@100")
    return parser


def _rate(text: str) -> float:
    """PPS > 0, or `off` -> 0 (the wire's 'unshaped')."""
    if text == "off":
        return 0.0
    try:
        pps = float(text)
    except ValueError:
        pps = 0.0
    if not 0.0 < pps < float("inf"):
        raise OptionError(f"bad --rate '{text}': expected packets/s > 0 or off")
    return pps


def main(argv: list[str]) -> int:
    """Entry point; returns the exit code."""
    if argv[:1] in (["-h"], ["--help"]):
        _parser().print_help(sys.stdout)
        return 0
    try:
        args = _parser().parse_args(argv)
        if args.port < 0:
            raise OptionError(f"bad PORT {args.port}: expected >= 0")
        if args.spec is not None:
            parse_impairment_spec(args.spec)
        pps = None if args.rate is None else _rate(args.rate)
    except OptionError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return EXIT_USAGE
    logging.getLogger("thrift").setLevel(logging.CRITICAL)  # its own "could not connect" line: ours says it
    transport = TTransport.TBufferedTransport(TSocket.TSocket(args.thrift_ip, args.thrift_port))
    client = LinkClient(TMultiplexedProtocol.TMultiplexedProtocol(
        TBinaryProtocol.TBinaryProtocol(transport), SERVICE))
    try:
        transport.open()
    except TTransport.TTransportException:
        sys.stderr.write(f"{PROG}: error: cannot connect to the switch's Thrift server at "
                         f"{args.thrift_ip}:{args.thrift_port}\n")
        return EXIT_FAILED
    try:
        if args.spec is not None:
            client.set_port_impairment(args.port, args.spec)
        if pps is not None:
            client.set_port_rate(args.port, pps)
        spec = client.get_port_impairment(args.port)
        rate = client.get_port_rate(args.port)
    except TException as exc:
        reason = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        sys.stderr.write(f"{PROG}: error: {reason}\n")
        return EXIT_FAILED
    finally:
        transport.close()
    shown = f"{rate:g} packets/s" if rate else "unshaped"
    sys.stdout.write(f"port {args.port}: impairment {spec}; rate {shown}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
