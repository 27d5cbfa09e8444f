"""hosts.pcn's burst senders refuse bad transport settings, naming the option (the bursts on
real sockets: tests/integration/hosts/test_pcn_bursts.py)."""
import pytest

from hosts.ddl_bursts import BurstTransport
from hosts.errors import ConfigError


@pytest.mark.parametrize("transport, message", [
    (BurstTransport("quic"), "--transport 'quic'"),
    (BurstTransport("gradlane", cc="vegas"), "--cc 'vegas'"),
    (BurstTransport("gradlane", window=0), "--window"),
])
def test_bad_transport_settings_name_the_option(transport, message):
    with pytest.raises(ConfigError, match=message):
        transport.check()
