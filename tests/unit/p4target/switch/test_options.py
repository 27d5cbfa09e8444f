"""Flag parsing of `p4target switch` (simple_switch_grpc's flags)."""
from __future__ import annotations

import pytest

from p4target.switch.cli import EXIT_USAGE, main
from p4target.switch.errors import OptionError
from p4target.switch.options import parse_options


def test_full_command_line_is_parsed() -> None:
    opts = parse_options(
        ["-i", "1@veth1", "--interface", "2@veth2", "--device-id", "3", "--pcap", "/tmp/p",
         "--log-file", "sw.log", "-L", "debug", "--thrift-port", "9091",
         "--impair", "1:delay=5ms", "prog.json", "--", "--grpc-server-addr", "127.0.0.1:50051",
         "--cpu-port", "255", "--priority-queues", "8"]
    )
    assert opts.interfaces == {1: "veth1", 2: "veth2"}
    assert opts.device_id == 3 and opts.json_path == "prog.json" and not opts.no_p4
    assert opts.pcap_dir == "/tmp/p" and opts.log_file == "sw.log" and not opts.log_console
    assert opts.log_level == "debug" and opts.thrift_port == 9091
    assert opts.grpc_server_addr == "127.0.0.1:50051" and opts.cpu_port == 255
    assert opts.priority_queues == 8 and opts.impairments == ("1:delay=5ms",)


def test_defaults_match_simple_switch_grpc() -> None:
    opts = parse_options(["--no-p4"])
    assert opts.thrift_port == 9090 and opts.grpc_server_addr == "0.0.0.0:9559"
    assert opts.thrift_ip == "0.0.0.0"  # BMv2's Thrift server listens on every address
    assert opts.device_id == 0 and opts.cpu_port is None and opts.priority_queues == 1


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["-i", "veth1", "--no-p4"], "PORT@IFACE"),
        (["-i", "1@a", "-i", "1@b", "--no-p4"], "given twice"),
        ([], "missing program"),
        (["--no-p4", "--log-console", "--log-file", "x"], "exclusive"),
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


def test_port_byte_rate_extension_is_parsed_and_validated():
    opts = parse_options(["-i", "1@veth1", "--port-byte-rate", "1:4.5e6", "--no-p4"])
    assert opts.port_byte_rates == ((1, 4.5e6),) and opts.port_rates == ()
    for bad in ("1", "x:5", "1:0", "-1:10", "1:inf"):
        with pytest.raises(OptionError, match="--port-byte-rate .*BYTES_PER_S"):
            parse_options(["--port-byte-rate", bad, "--no-p4"])


# -- BMv2's syntax and every flag `simple_switch --help` lists (issue 17 point 5) -------------

def test_p4c_stf_runner_command_line_is_accepted() -> None:
    """The argv p4c's run-bmv2-test.py (bmv2stf.py) gives simple_switch."""
    opts = parse_options(["--log-file", "switch.log", "--log-flush", "--use-files", "0",
                          "--dump-packet-data", "10240", "--thrift-port", "9123", "--device-id", "77",
                          "-i 0@pcap0", "-i 1@pcap1", "prog.json"])
    assert opts.interfaces == {0: "pcap0", 1: "pcap1"}
    assert opts.use_files_wait == 0 and opts.log_flush and opts.dump_packet_data == 10240
    assert opts.thrift_port == 9123 and opts.device_id == 77 and opts.json_path == "prog.json"
    assert opts.log_file == "switch.log"


@pytest.mark.parametrize("argv", [
    ["-i", "3@veth3"], ["-i3@veth3"], ["-i 3@veth3"], ["--interface", "3@veth3"],
    ["--interface=3@veth3"], ["--inter", "3@veth3"], ["-i", " 3@veth3"], ["-i", "+3@veth3"],
    ["-i", "3x@veth3"],  # std::stoi reads the leading digits and ignores the rest
])
def test_interface_forms_bmv2_accepts(argv: list[str]) -> None:
    assert parse_options([*argv, "--no-p4"]).interfaces == {3: "veth3"}


def test_interface_name_is_everything_after_the_first_at() -> None:
    assert parse_options(["-i", "1@a@b", "--no-p4"]).interfaces == {1: "a@b"}


@pytest.mark.parametrize("bad", ["veth1", "x@veth1", "@veth1", "1@"])
def test_interface_forms_bmv2_refuses(bad: str) -> None:
    with pytest.raises(OptionError, match="interface"):
        parse_options(["-i", bad, "--no-p4"])


@pytest.mark.parametrize("argv, field, value", [
    (["--thrift-port=9200"], "thrift_port", 9200),
    (["--thrift", "9200"], "thrift_port", 9200),  # a unique prefix among BMv2's flags
    (["--use-files", "-1"], "use_files_wait", 0),
    (["-Ldebug"], "log_level", "debug"),
    (["-L", "warn"], "log_level", "warn"),
    (["--log-level=error"], "log_level", "error"),
    (["--pcap"], "pcap_dir", "."),
    (["--pcap", "caps"], "pcap_dir", "caps"),
    (["--pcap=caps"], "pcap_dir", "caps"),
    (["--use-files", "3"], "use_files_wait", 3),
    (["--use-files=-2"], "use_files_wait", 0),  # BMv2 waits 0 s for a negative WAIT
    (["--device-id", "5"], "device_id", 5),
    (["--dump-packet-data", "64"], "dump_packet_data", 64),
    (["--log-file", "f", "--log-flush"], "log_flush", True),
    (["--max-port-count", "4"], "max_port_count", 4),
    (["--thrift-ip", "127.0.0.1"], "thrift_ip", "127.0.0.1"),
    (["--thrift-ip", "::1"], "thrift_ip", "::1"),
])
def test_general_flag_forms(argv: list[str], field: str, value: object) -> None:
    assert getattr(parse_options([*argv, "--no-p4"]), field) == value


def test_logging_only_flags_are_accepted_with_a_note() -> None:
    opts = parse_options(["--nanolog", "ipc:///tmp/x", "--notifications-addr", "ipc:///tmp/n",
                          "--debugger", "--debugger-addr", "ipc:///tmp/d", "--log-flush",
                          "--log-file-max-size", "100", "--log-file-max-files", "2", "--no-p4"])
    assert any("--nanolog" in n for n in opts.notes) and any("--debugger" in n for n in opts.notes)
    assert any("--log-flush" in n and "--log-file not specified" in n for n in opts.notes)


def test_no_p4_with_a_json_file_ignores_the_file_as_bmv2_does() -> None:
    opts = parse_options(["--no-p4", "x.json"])
    assert opts.no_p4 and opts.json_path is None
    assert opts.notes == ("Warning: ignoring input config as '--no-p4' was used",)


@pytest.mark.parametrize("flag, shown", [("--help", "help"), ("-h", "help"), ("--version", "version"),
                                         ("-v", "version"), ("--json-version", "json-version")])
def test_informational_flags_need_no_program(flag: str, shown: str) -> None:
    assert parse_options([flag]).show == shown


def test_cli_prints_json_version_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json-version"]) == 0
    assert capsys.readouterr().out == "2.24\n"
    assert main(["-v"]) == 0
    assert capsys.readouterr().out.strip()


@pytest.mark.parametrize("argv, fragment", [
    (["--thrift-port", "1", "--thrift-port", "2"], "more than once"),
    (["--log"], "ambiguous"),
    (["--no-p4=1"], "does not take a value"),
    (["--device-id"], "required argument"),
    (["--device-id", "-3"], "out of range"),
    (["--device-id", "--no-p4"], "required argument"),
    (["--device-id", "x"], "invalid"),
    (["--max-port-count", "-1"], "cannot be negative"),
    (["-i", "1@a", "-i", "2@b", "--max-port-count", "1"], "max-port-count"),
    (["--log-file", "f", "--log-file-max-size", "0"], "greater than 0"),
    (["-L", "loud"], "log-level"),
    (["--thrift-ip", "localhost:1"], "thrift-ip"),
    (["--packet-in", "ipc:///tmp/p"], "not supported"),
    (["--restore-state", "s"], "not supported"),
    (["-x"], "unrecognised option '-x'"),
])
def test_general_flag_errors(argv: list[str], fragment: str) -> None:
    with pytest.raises(OptionError, match=fragment):
        parse_options([*argv, "--no-p4"])


def test_extra_positional_is_refused() -> None:
    with pytest.raises(OptionError, match="unexpected argument 'extra'"):
        parse_options(["a.json", "extra"])


def test_target_flags_of_simple_switch_and_simple_switch_grpc() -> None:
    opts = parse_options(["--no-p4", "--", "--enable-swap", "--drop-port", "511", "--max-mc-groups", "10",
                          "--max-l1-entries", "10", "--max-l2-entries=10", "--cpu-port=255",
                          "--priority-queues", "4", "--grpc-server-addr", "127.0.0.1:1"])
    assert opts.cpu_port == 255 and opts.priority_queues == 4 and opts.grpc_server_addr == "127.0.0.1:1"
    assert sum("not enforced" in n for n in opts.notes) == 3


def test_tls_flags() -> None:
    opts = parse_options(["--no-p4", "--", "--grpc-server-ssl", "--grpc-server-cert", "c.pem",
                          "--grpc-server-key", "k.pem", "--grpc-server-cacert", "ca.pem",
                          "--grpc-server-with-client-auth"])
    assert opts.grpc_tls is not None and opts.grpc_tls.cert == "c.pem" and opts.grpc_tls.key == "k.pem"
    assert opts.grpc_tls.cacert == "ca.pem" and opts.grpc_tls.with_client_auth
    assert parse_options(["--no-p4"]).grpc_tls is None


@pytest.mark.parametrize("target, fragment", [
    (["--grpc-server-cert", "c"], "need --grpc-server-ssl"),
    (["--grpc-server-with-client-auth"], "needs --grpc-server-ssl"),
    (["--grpc-server-ssl", "--grpc-server-key", "k"], "needs --grpc-server-cert"),
    (["--grpc-server-ssl", "--grpc-server-cert", "c"], "needs --grpc-server-key"),
    (["--cpu-port", "0"], "cpu-port 0"),
    (["--drop-port", "100"], "drop-port 100"),
    (["--max-mc-groups", "0"], "max-mc-groups"),
    (["--dp-grpc-server-addr", "127.0.0.1:5"], "not supported"),
    (["--load-modules", "x.so"], "not supported"),
    (["--enable-swap", "--disable-swap"], "either"),
    (["stray"], "unexpected target argument"),
    (["--thrift-port", "1"], "unrecognised option '--thrift-port'"),
])
def test_target_flag_errors(target: list[str], fragment: str) -> None:
    with pytest.raises(OptionError, match=fragment):
        parse_options(["--no-p4", "--", *target])
