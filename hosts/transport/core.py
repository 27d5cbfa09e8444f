"""Which core runs the transport: the native C++ core or the Python reference.

The native core (`native/`, built into `hosts.transport._native` when the project installs)
decides exactly what `hosts.transport.receiver.RecvSession` decides for the same packets and
clock (tests/unit/hosts/test_native_core.py holds both to it), at a fraction of the CPU per
datagram. On the send side it opens `hosts.transport.sender.SendSession`'s round (the chunks'
magnitude classes, the first pass's order), builds the DATA datagrams and applies the ACKs'
entries (the rest of the sender is Python on both; tests/unit/hosts/test_native_send.py and
test_native_setup.py hold the two to the same classes, order, frames and decisions).
`--core native|python` picks one; by default the native core where it was built.
Where it was not, the agent says so in one line on stderr and runs the Python core.
The drivers open their receive sessions through `recv_session`, the one place the choice is made.
"""
from __future__ import annotations

import sys

from hosts.errors import ConfigError
from hosts.transport.chunking import ChunkPlan
from hosts.transport.port import Port
from hosts.transport.receiver import ReceiveOptions, RecvSession

CORES = ("native", "python")

try:
    from hosts.transport import _native  # noqa: F401  (the extension; absent when not built)
    NATIVE_ERROR: str | None = None
except ImportError as exc:   # not built (no compiler or Python headers at install time)
    NATIVE_ERROR = str(exc)


_announced = False


def _announce(line: str) -> None:
    """Say `line` on stderr, once per process (every config built repeats the choice)."""
    global _announced
    if not _announced:
        _announced = True
        print(line, file=sys.stderr)


def native_available() -> bool:
    """The native extension was built and imports."""
    return NATIVE_ERROR is None


def default_core() -> str:
    return "native" if native_available() else "python"


def resolve(core: str | None, announce: bool = True) -> str:
    """The core that will run for the choice `core` (None: the default). A native core that
    was not built falls back to the Python core, said in one line on stderr (`announce`)."""
    if core is None:
        core = default_core()
        if not native_available() and announce:
            _announce(f"gradlane: native transport core not built ({NATIVE_ERROR}); running "
                      f"the Python core")
        return core
    if core not in CORES:
        raise ConfigError(f"--core {core!r} is not one of {', '.join(CORES)}")
    if core == "native" and not native_available():
        if announce:
            _announce(f"gradlane: --core native asked, but the native transport core is not "
                      f"built ({NATIVE_ERROR}); running the Python core")
        return "python"
    return core


def recv_session(endpoint: Port, plan: ChunkPlan, round_: int, *, pull: bool, senders: list[int],
                 required: tuple[float, ...], options: ReceiveOptions,
                 sender_names: dict[int, str] | None = None,
                 core: str | None = None) -> RecvSession:
    """A receive session (RecvSession's arguments) on core `core` (None: the default; a native
    core that is not built runs the Python one). The native session is a RecvSession."""
    if resolve(core, announce=False) == "native":
        # imported here: the module needs the extension, which may not be built
        from hosts.transport.native_receiver import NativeRecvSession
        return NativeRecvSession(endpoint, plan, round_, pull=pull, senders=senders,
                                 required=required, options=options, sender_names=sender_names)
    return RecvSession(endpoint, plan, round_, pull=pull, senders=senders, required=required,
                       options=options, sender_names=sender_names)
