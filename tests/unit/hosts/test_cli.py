"""Every agent has --help, and bad input gives one line naming the problem and exit 2.

The agents' main() runs in-process (same code path as `python -m`, minus interpreter start-up);
tests/integration/hosts runs them as real processes, and test_cli_sockets.py there has the bad
addresses found only by opening a socket."""
import importlib
import signal

import pytest

from hosts.exchange.job_key import create_key_file

AGENTS = ["hosts.ps", "hosts.worker", "hosts.pcn", "hosts.background", "hosts.lossy_relay",
          "hosts.tensor_exchange"]


@pytest.fixture(autouse=True)
def _restore_signals():
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


@pytest.fixture(autouse=True)
def _job_key(tmp_path, monkeypatch):
    """A job key for the PS and worker, so that each case reaches the error it is about."""
    path = tmp_path / "job.key"
    create_key_file(str(path))
    monkeypatch.setattr(_main, "job_key", str(path), raising=False)


def _main(module, *args):
    if module in ("hosts.ps", "hosts.worker") and "--help" not in args:
        args = (*args, "--job-key", _main.job_key)
    return importlib.import_module(module).main(list(args))


@pytest.mark.parametrize("module", AGENTS)
def test_help(module, capsys):
    with pytest.raises(SystemExit) as e:
        _main(module, "--help")
    assert e.value.code == 0
    assert "usage:" in capsys.readouterr().out


@pytest.mark.parametrize("args, needle", [
    (["hosts.ps", "--workers", "0"], "--workers 0"),
    (["hosts.ps", "--workers", "2", "--layer-bounds", "0.1"], "--layer-bounds has 1 values"),
    (["hosts.ps", "--workers", "2", "--bound", "1.2"], "--bound 1.2"),
    (["hosts.ps", "--workers", "2", "--pull-bound", "0.5"], "pull stage must be tighter"),
    (["hosts.ps", "--workers", "2", "--transport", "mlt", "--phase-aware"], "one fixed bound"),
    (["hosts.ps", "--workers", "2", "--transport", "tcp", "--pcn"], "--pcn needs"),
    (["hosts.ps", "--workers", "2", "--transport", "mlt", "--pull-bound", "0.01"], "one fixed bound"),
    (["hosts.ps", "--workers", "2", "--transport", "tcp", "--tcp-cc", "nosuch"], "is not available here"),
    (["hosts.worker", "--rank", "0", "--workers", "1", "--ps", "127.0.0.1", "--tcp-cc", "reno"],
     "need --transport tcp"),
    (["hosts.ps", "--workers", "2", "--reliable-pull", "--pull-bound", "0.01"], "--reliable-pull"),
    (["hosts.ps", "--workers", "2", "--phase-aware", "--phase-check-rounds", "0"], "--phase-check-rounds"),
    (["hosts.ps", "--workers", "2", "--deadline-floor-ms", "0"], "--deadline-floor-ms"),
    (["hosts.ps", "--workers", "2", "--hidden", "64,x"], "--hidden"),
    (["hosts.ps", "--workers", "2", "--eval-every", "-1"], "--eval-every -1"),
    (["hosts.ps", "--workers", "2", "--transport", "mlt", "--priority-hints", "off"],
     "--priority-hints off needs --transport ltp"),
    (["hosts.worker", "--rank", "3", "--workers", "2", "--ps", "127.0.0.1"], "--rank 3"),
    (["hosts.worker", "--rank", "0", "--workers", "1", "--ps", "127.0.0.1", "--pcn-threshold",
      "12"], "--pcn-threshold"),
    (["hosts.lossy_relay", "--listen", "127.0.0.1", "--target", "127.0.0.1:1"], "--listen"),
    (["hosts.lossy_relay", "--listen", "127.0.0.1:0", "--target", "127.0.0.1:1", "--loss", "2"],
     "loss 2"),
    (["hosts.lossy_relay", "--listen", "127.0.0.1:0", "--target", "127.0.0.1:1", "--burst", "2s@0.5"],
     "bad burst '2s@0.5': expected START+DURATION@LOSS"),
    (["hosts.background", "flows", "--dst", "127.0.0.1", "--flows", "0"], "--flows"),
    (["hosts.pcn", "start", "--ps", "127.0.0.1", "--threshold", "80"], "--threshold"),
    (["hosts.tensor_exchange", "recv", "--layers", "10,a"], "--layers"),
    (["hosts.tensor_exchange", "send", "--to", "no.such.host.invalid:5"], "--to"),
    (["hosts.tensor_exchange", "recv", "--packet-mac", "control"], "--packet-mac needs --job-key"),
    (["hosts.worker", "--rank", "0", "--workers", "1", "--ps", "300.1.2.3"], "--ps"),
    (["hosts.worker", "--rank", "0", "--workers", "1", "--ps", "127.0.0.1", "--ps-port",
      "70000"], "--ps-port"),
    (["hosts.ps", "--workers", "1", "--port", "-1"], "--port"),
    (["hosts.background", "microburst", "--dst", "bad host name"], "--dst"),
    (["hosts.pcn", "bursts", "--ps", "127.0.0.1", "--bytes", "0"], "--bytes"),
    (["hosts.pcn", "bursts", "--ps", "127.0.0.1", "--period-s", "nan"], "--period-s"),
    (["hosts.pcn", "bursts", "--ps", "127.0.0.1", "--transport", "gradlane", "--cc", "vegas"], "--cc"),
    (["hosts.pcn", "serve", "--tcp-port", "70000"], "--tcp-port"),
    (["hosts.pcn", "bursts", "--ps", "127.0.0.1", "--threshold", "12"], "--threshold"),
    (["hosts.background", "sink", "--report-s", "-1"], "--report-s"),
])
def test_bad_input_is_one_line_error(args, needle, capsys):
    assert _main(*args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "error:" in err and needle in err
