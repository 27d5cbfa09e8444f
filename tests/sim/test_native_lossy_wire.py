"""The pinned wire digests of tests/sim/test_lossy_wire.py again, with every receive session of
the ns-3 driver on the native core (hosts/transport/native_receiver.py) instead of the Python
one, and every send session's native parts on (DATA frames and the ACK pass, core "native"):
the same frames at the same nanoseconds on every simulated device. Where the driver opens
`RecvSession`s and `SendSession`s by name, the name is bound here to the native class; the
test checks that native sessions did run."""
from __future__ import annotations

import importlib
import importlib.util
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from hosts.transport import core as transport_core
from sim import engine

pytestmark = pytest.mark.skipif(not transport_core.native_available(),
                                reason=f"native core not built: {transport_core.NATIVE_ERROR}")


@lru_cache(maxsize=None)
def _pinned_module():
    """tests/sim/test_lossy_wire.py, loaded once; its C++ tap is defined once per process
    (that module, run in the same session, may have defined it already)."""
    path = Path(__file__).with_name("test_lossy_wire.py")
    spec = importlib.util.spec_from_file_location("_pinned_lossy_wire", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module     # its dataclasses look their module up there
    spec.loader.exec_module(module)
    define_tap = module._tap_namespace

    def tap_namespace():
        engine.ns3()
        import cppyy  # noqa: PLC0415  (loaded with ns-3)

        return getattr(cppyy.gbl, "gradlane_test", None) or define_tap()

    module._tap_namespace = tap_namespace
    return module


# ltp-10g (29,211 frames, several minutes) is left to the reference core's test: both cores
# agree frame for frame on ltp and mlt and on the differential tests' scripted losses
@pytest.mark.parametrize("name", ["ltp", "mlt"])
def test_the_native_receive_core_puts_the_pinned_frames_on_the_wire(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from hosts.transport import native_receiver
    from hosts.transport.native_receiver import NativeRecvSession

    opened = []

    class Counted(NativeRecvSession):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            opened.append(self)

    # wherever the driver's receive sessions are opened: by name in the driver or its round
    # machines, or through hosts.transport.core.recv_session
    for module_name in ("sim.lossy", "hosts.rounds.server", "hosts.rounds.worker",
                        "hosts.transport.core"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if hasattr(module, "RecvSession"):
            monkeypatch.setattr(module, "RecvSession", Counted)
    monkeypatch.setattr(native_receiver, "NativeRecvSession", Counted)
    from hosts.transport.data_frames import is_native
    from hosts.transport.sender import SendSession

    senders = []

    class NativeSend(SendSession):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **{**kwargs, "core": "native"})
            senders.append(self)

    for module_name in ("hosts.rounds.server", "hosts.rounds.worker"):   # where they are opened
        module = importlib.import_module(module_name)
        if hasattr(module, "SendSession"):
            monkeypatch.setattr(module, "SendSession", NativeSend)
    pinned = _pinned_module()
    assert pinned.wire_run(name) == pinned.PINNED[name]
    assert opened, "the driver opened no receive session on the native core"
    assert senders and all(is_native(s._frames) for s in senders), "no native send session ran"
