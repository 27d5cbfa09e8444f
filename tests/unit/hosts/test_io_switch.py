"""The endpoint's socket I/O switch (--io batch|single, hosts/transport/endpoint.py): batched
where the native extension was built, the per-datagram path otherwise; no socket is opened here
(tests/integration/hosts/test_batch_io.py holds both paths to the same wire)."""
import argparse

import pytest

from hosts.errors import ConfigError
from hosts.exchange.config import add_transport_arguments, config_from_args
from hosts.transport import core as transport_core
from hosts.transport import endpoint


def _config(*flags: str):
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    return config_from_args(ap.parse_args(["--transport", "ltp", *flags]), 3, 1)


def test_batch_is_the_default_where_the_extension_was_built() -> None:
    want = "batch" if transport_core.native_available() else "single"
    assert endpoint.default_io() == want
    assert _config().io == want and _config().summary()["io"] == want


def test_the_io_flag_reaches_the_config() -> None:
    assert _config("--io", "single").io == "single"
    assert _config("--io", "batch").io == endpoint.default_io()
    assert _config("--transport", "tcp").io == "single"


def test_without_the_extension_batch_runs_the_single_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(endpoint, "_native", None)
    assert endpoint.default_io() == "single"
    assert endpoint.resolve_io("batch") == "single"


def test_an_unknown_io_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="--io 'fast'"):
        endpoint.resolve_io("fast")
