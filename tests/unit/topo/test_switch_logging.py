"""The switches' log: the flags each switch gets, the `SWITCH_LOG` knob, and the build check."""
import os
import stat

import pytest

from controller.topology import Switch
from p4target.switch.options import parse_options
from topo.check_env import switch_log_checks
from topo.errors import SwitchStartError, ToolchainError
from topo.run import main
from topo.switch_node import switch_command
from topo.toolchain import (LOG_FILE_BACKUPS, LOG_FILE_MAX_BYTES, PACKET_TRACE_MARKER, Tool, switch_build,
                            switch_log_files, switch_log_level, switch_log_note)

EMBEDDED = Tool(("python3", "-m", "p4target", "switch"), "embedded")
BMV2 = Tool(("/opt/p4ref/bin/simple_switch_grpc",), "real")
DESC = Switch(name="s1", device_id=1, grpc_addr="127.0.0.1:50001", thrift_port=9091,
              router_mac="00:00:00:00:01:00", log="logs/s1.log")


def _value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


@pytest.mark.parametrize("tool", [EMBEDDED, BMV2], ids=["embedded", "bmv2"])
def test_default_argv_logs_to_capped_file_at_warn(tool):
    argv = switch_command(tool, DESC, {1: "s1-eth1"}, "build/gradlane.json")
    general = argv[len(tool.argv):argv.index("--")]
    assert "--log-console" not in general  # stdout cannot be capped
    assert _value(general, "--log-file") == "logs/s1.log" and _value(general, "-L") == "warn"
    assert int(_value(general, "--log-file-max-size")) == LOG_FILE_MAX_BYTES
    assert int(_value(general, "--log-file-max-files")) == LOG_FILE_BACKUPS
    # the embedded switch reads the very flags BMv2 gets, with BMv2's meaning
    opts = parse_options(general)
    assert (opts.log_file, opts.log_level, opts.log_file_max_size, opts.log_file_max_files) == \
        ("logs/s1.log", "warn", LOG_FILE_MAX_BYTES, LOG_FILE_BACKUPS)


def test_a_byte_rate_reaches_the_embedded_switch_and_is_refused_for_bmv2():
    argv = switch_command(EMBEDDED, DESC, {1: "s1-eth1"}, None, port_byte_rates={1: 450000.0})
    general = argv[len(EMBEDDED.argv):argv.index("--")]
    assert parse_options(general).port_byte_rates == ((1, 450000.0),)
    with pytest.raises(SwitchStartError, match="bytes/s needs the embedded switch"):
        switch_command(BMV2, DESC, {1: "s1-eth1"}, None, port_byte_rates={1: 450000.0})


def test_requested_level_reaches_both_switches():
    for tool in (EMBEDDED, BMV2):
        argv = switch_command(tool, DESC, {}, None, log_level="debug")
        assert _value(argv, "-L") == "debug"


def test_embedded_default_level_is_bmv2s_trace():
    assert parse_options(["--no-p4"]).log_level == "trace"


def test_switch_log_knob(monkeypatch):
    monkeypatch.delenv("SWITCH_LOG", raising=False)
    assert switch_log_level() == "warn"
    monkeypatch.setenv("SWITCH_LOG", "")  # `export SWITCH_LOG` in the Makefile when not given
    assert switch_log_level() == "warn"
    monkeypatch.setenv("SWITCH_LOG", "DEBUG")
    assert switch_log_level() == "debug"
    monkeypatch.setenv("SWITCH_LOG", "loud")
    with pytest.raises(ToolchainError, match="SWITCH_LOG='loud' is not a switch log level"):
        switch_log_level()


def test_bad_switch_log_stops_topo_run_with_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("SWITCH_LOG", "loud")
    assert main(["--log-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "SWITCH_LOG='loud'" in err and err.count("\n") == 1


def test_topo_run_flag_sets_the_level(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("SWITCH_LOG", "")    # so that monkeypatch restores its absence afterwards
    monkeypatch.delenv("SWITCH_LOG")
    main(["--switch-log", "debug", "--build", str(tmp_path / "none"), "--log-dir", str(tmp_path)])
    assert os.environ["SWITCH_LOG"] == "debug"
    with pytest.raises(SystemExit):
        main(["--switch-log", "loud"])


def test_note_says_where_and_what_it_costs():
    quiet, loud = switch_log_note("warn", "logs/<switch>.log"), switch_log_note("debug", "logs/<switch>.log")
    assert "per-packet tracing off" in quiet and "SWITCH_LOG=debug" in quiet
    assert "every packet traced to logs/<switch>.log" in loud and "MiB" in loud


def _fake_switch(tmp_path, name: str, body: bytes) -> Tool:
    path = tmp_path / name
    path.write_bytes(b"#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return Tool((str(path),), "real")


def test_build_is_told_by_the_per_packet_trace_strings(tmp_path):
    default = _fake_switch(tmp_path, "simple_switch_grpc", b"x" * 5000 + b"[{}] " + PACKET_TRACE_MARKER + b" {}")
    (tmp_path / "perf").mkdir()
    perf = _fake_switch(tmp_path / "perf", "simple_switch", b"no trace strings here")
    other = _fake_switch(tmp_path, "my-switch", PACKET_TRACE_MARKER)
    assert switch_build(default) == "bmv2-default"
    assert switch_build(perf) == "bmv2-performance"
    assert switch_build(other) == "unknown"
    assert switch_build(EMBEDDED) == "embedded"


def test_check_env_warns_on_per_packet_logging_at_the_default_build(tmp_path, monkeypatch):
    default = _fake_switch(tmp_path, "simple_switch_grpc", PACKET_TRACE_MARKER)
    monkeypatch.setenv("SWITCH_LOG", "debug")
    build, level = switch_log_checks(default)
    assert "default build" in build.detail and level.warn and "every packet" in level.detail
    monkeypatch.setenv("SWITCH_LOG", "warn")
    assert not any(c.warn for c in switch_log_checks(default))


def test_log_files_are_named_as_each_switch_names_them():
    assert switch_log_files("logs/s1.log", EMBEDDED) == ["logs/s1.log", "logs/s1.1.log"][:LOG_FILE_BACKUPS + 1]
    assert switch_log_files("logs/s1.log", BMV2) == ["logs/s1.log.txt", "logs/s1.log.1.txt"][:LOG_FILE_BACKUPS + 1]


def test_check_env_says_a_thrift_only_build_cannot_be_programmed(tmp_path):
    (tmp_path / "perf").mkdir()
    perf = _fake_switch(tmp_path / "perf", "simple_switch", b"no trace strings")
    [build, _] = switch_log_checks(perf)
    assert "performance build" in build.detail and "no P4Runtime" in build.detail
