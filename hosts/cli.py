"""Plumbing every agent shares: PID file, clean SIGTERM exit, one-line errors, flag parsing."""
from __future__ import annotations

import argparse
import ctypes
import os
import signal
import socket
import sys
from typing import Callable

from hosts.errors import ConfigError, HostsError
from p4target.atomic_files import AtomicWriteError, write_text

_PR_SET_PDEATHSIG = 1


class Terminated(BaseException):
    """Raised in the main thread when SIGTERM/SIGINT arrives (a BaseException, as
    KeyboardInterrupt is, so that no `except Exception` on the way can swallow it)."""


def _on_signal(signum: int, frame: object) -> None:
    raise Terminated(signal.Signals(signum).name)


def die_with_parent() -> None:
    """Ask the kernel to SIGTERM this process when its parent dies (Linux only)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def write_pid_file(path: str) -> None:
    """This process's PID in `path`, through the one atomic writer (an unpredictable temporary
    created exclusively, then renamed over `path`: a symlink planted at either name is never
    followed). ConfigError naming the file when it cannot be written."""
    try:
        write_text(path, f"{os.getpid()}\n")
    except AtomicWriteError as exc:
        raise ConfigError(f"--pid-file: {exc}") from None


def run_agent(body: Callable[[], None], pid_file: str | None = None,
              prog: str | None = None, preload: Callable[[], None] | None = None) -> int:
    """Run an agent's main body: writes/removes the PID file, turns SIGTERM into a clean exit
    (status 0), and a HostsError into `prog: error: message` with status 2.

    `preload` runs first, before the signal handlers exist: heavy imports belong there, since
    an exception raised by a signal handler inside an extension module's import can be lost
    (a SIGTERM during scikit-learn's import was, and the agent ran on)."""
    prog = prog or os.path.basename(sys.argv[0])
    if preload is not None:
        preload()
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        if pid_file:
            write_pid_file(pid_file)
        body()
        return 0
    except Terminated:
        return 0
    except HostsError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr, flush=True)
        return 2
    except BrokenPipeError:
        return 0
    finally:
        if pid_file:
            try:
                os.unlink(pid_file)
            except OSError:
                pass


def agent_main(parser: argparse.ArgumentParser, run: Callable[[argparse.Namespace], None],
               prog: str, argv: list[str] | None = None,
               preload: Callable[[argparse.Namespace], None] | None = None) -> int:
    """The `main()` of an agent: parse `argv`, honour `--die-with-parent`, then `run_agent`
    (`preload(args)` as its preload)."""
    args = parser.parse_args(argv)
    if getattr(args, "die_with_parent", False):
        die_with_parent()
    return run_agent(lambda: run(args), getattr(args, "pid_file", None), prog,
                     None if preload is None else (lambda: preload(args)))


def parse_hostport(text: str, what: str, default_port: int | None = None) -> tuple[str, int]:
    """'10.0.0.1:19527' -> ('10.0.0.1', 19527); ConfigError naming `what` if malformed."""
    host, sep, port = text.rpartition(":")
    if not sep:
        if default_port is None:
            raise ConfigError(f"{what} {text!r} is not HOST:PORT")
        host, port = text, str(default_port)
    try:
        number = int(port)
    except ValueError:
        raise ConfigError(f"{what} {text!r} has a non-numeric port") from None
    if not 0 <= number <= 65535 or not host:
        raise ConfigError(f"{what} {text!r} is not HOST:PORT with a port in 0..65535")
    return resolve_ipv4(host, what), number


def resolve_ipv4(host: str, what: str) -> str:
    """The IPv4 address of `host` (a dotted quad or a resolvable name); ConfigError if neither."""
    try:
        return socket.gethostbyname(host)
    except (OSError, UnicodeError):
        raise ConfigError(f"{what} {host!r} is not an IPv4 address or a resolvable host name") from None


def check_port(port: int, what: str) -> int:
    """`port` if it is in 0..65535, else ConfigError naming `what`."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"{what} {port} is outside 0..65535")
    return port
