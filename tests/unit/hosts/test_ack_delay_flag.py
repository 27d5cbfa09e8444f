"""--ack-delay-ms: how long a receiver holds an ACK of fewer than 16 chunks (an absolute timer that
the ns-3 regime map scales to microsecond paths)."""
import argparse

import pytest

from hosts.errors import ConfigError
from hosts.exchange.config import add_transport_arguments, config_from_args
from hosts.transport.receiver import ReceiveOptions


def _config(*flags: str):
    ap = argparse.ArgumentParser()
    add_transport_arguments(ap)
    return config_from_args(ap.parse_args(list(flags)), 2, seed=1)


def test_default_is_the_receivers_own():
    config = _config()
    assert config.ack_delay == ReceiveOptions().ack_delay == 0.002
    assert config.summary()["ack_delay_ms"] == 2.0


def test_the_flag_sets_it_and_bad_values_are_named():
    assert _config("--ack-delay-ms", "0.05").ack_delay == pytest.approx(50e-6)
    for bad in ("0", "-1", "inf"):
        with pytest.raises(ConfigError, match="--ack-delay-ms"):
            _config("--ack-delay-ms", bad)
