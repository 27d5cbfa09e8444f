"""Bad addresses an agent finds only by opening a socket (an address not on this host, an
invalid PCN-START target) give one line naming the problem and exit 2, from a real process."""
import pytest


@pytest.mark.parametrize("args, needle", [
    (["hosts.ps", "--workers", "2", "--bind", "192.0.2.77"], "cannot bind"),
    (["hosts.pcn", "start", "--ps", "300.0.0.1"], "--ps"),
])
def test_bad_address_is_one_line_error(agents, args, needle):
    code, _, err = agents.wait(agents.start(*args), timeout=60)
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert "error:" in err and needle in err
