"""Flag parsing of `p4target switch` (simple_switch_grpc's flags)."""
from __future__ import annotations

import pytest

from p4target.switch.cli import EXIT_USAGE, main
from p4target.switch.errors import OptionError
from p4target.switch.options import parse_options


def test_full_command_line_is_parsed() -> None:
    opts = parse_options(
        ["-i", "1@veth1", "--interface", "2@veth2", "--device-id", "3", "--pcap", "/tmp/p",
         "--log-file", "sw.log", "--log-console", "-L", "debug", "--thrift-port", "9091",
         "--impair", "1:delay=5ms", "prog.json", "--", "--grpc-server-addr", "127.0.0.1:50051",
         "--cpu-port", "255", "--priority-queues", "8"]
    )
    assert opts.interfaces == {1: "veth1", 2: "veth2"}
    assert opts.device_id == 3 and opts.json_path == "prog.json" and not opts.no_p4
    assert opts.pcap_dir == "/tmp/p" and opts.log_file == "sw.log" and opts.log_console
    assert opts.log_level == "debug" and opts.thrift_port == 9091
    assert opts.grpc_server_addr == "127.0.0.1:50051" and opts.cpu_port == 255
    assert opts.priority_queues == 8 and opts.impairments == ("1:delay=5ms",)


def test_defaults_match_simple_switch_grpc() -> None:
    opts = parse_options(["--no-p4"])
    assert opts.thrift_port == 9090 and opts.grpc_server_addr == "0.0.0.0:9559"
    assert opts.device_id == 0 and opts.cpu_port is None and opts.priority_queues == 1


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["-i", "veth1", "--no-p4"], "PORT@IFACE"),
        (["-i", "1@a", "-i", "1@b", "--no-p4"], "given twice"),
        ([], "missing program"),
        (["--no-p4", "x.json"], "either --no-p4"),
        (["--no-p4", "--bogus"], "--bogus"),
        (["--no-p4", "--", "--grpc-server-addr", "nohost"], "HOST:PORT"),
        (["--no-p4", "--", "--priority-queues", "9"], "priority-queues"),
        (["--no-p4", "--thrift-port", "x"], "thrift-port"),
        (["--no-p4", "--impair", "1:loss=2"], "probability"),
    ],
)
def test_bad_flags_raise_option_error(argv: list[str], fragment: str) -> None:
    with pytest.raises(OptionError, match=fragment):
        parse_options(argv)


def test_cli_bad_flag_is_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-p4", "--bogus"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--bogus" in err and "Traceback" not in err


def test_port_rate_extension_is_parsed_and_validated():
    opts = parse_options(["-i", "1@veth1", "--port-rate", "1:500", "--port-rate", "2:2.5e3", "--no-p4"])
    assert opts.port_rates == ((1, 500.0), (2, 2500.0))
    for bad in ("1", "x:5", "1:0", "-1:10", "1:fast"):
        with pytest.raises(OptionError, match="--port-rate"):
            parse_options(["--port-rate", bad, "--no-p4"])
