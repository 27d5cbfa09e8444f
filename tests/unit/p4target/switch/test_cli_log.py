"""The switch log: BMv2-like line format, level filtering, file and console outputs."""
import io
import re

import pytest

from p4target.switch.switch_log import SwitchLog, rotated_name

LINE = re.compile(r"^\[\d\d:\d\d:\d\d\.\d{3}\] \[p4target\] \[([TDIWE])\] \[thread \d+\] (.*)$")


def test_lines_have_bmv2_shape_and_levels_filter(tmp_path):
    path = tmp_path / "s.log"
    console = io.StringIO()
    log = SwitchLog(path=str(path), console=True, level="info", console_stream=console)
    log.debug("hidden")
    log.info("shown info")
    log.warn("shown warn")
    log.error("shown error")
    assert not log.enabled("debug") and log.enabled("warn")
    log.close()
    lines = path.read_text().splitlines()
    assert [LINE.match(line).groups() for line in lines] == [("I", "shown info"), ("W", "shown warn"),
                                                             ("E", "shown error")]
    assert console.getvalue().splitlines() == lines


def test_trace_level_writes_everything_and_off_nothing(tmp_path):
    console = io.StringIO()
    log = SwitchLog(console=True, level="trace", console_stream=console)
    log.trace("t")
    log.debug("d")
    assert [LINE.match(x).group(1) for x in console.getvalue().splitlines()] == ["T", "D"]
    quiet = io.StringIO()
    off = SwitchLog(console=True, level="off", console_stream=quiet)
    off.error("x")
    assert quiet.getvalue() == ""


def test_no_output_means_disabled():
    log = SwitchLog()
    assert not log.enabled("error")
    log.error("nowhere")  # no stream: a no-op


def test_log_file_appends(tmp_path):
    path = tmp_path / "s.log"
    for word in ("first", "second"):
        log = SwitchLog(path=str(path))
        log.info(word)
        log.close()
    assert [LINE.match(x).group(2) for x in path.read_text().splitlines()] == ["first", "second"]


def test_unknown_level_rejected():
    with pytest.raises(ValueError):
        SwitchLog(level="loud")


def test_file_log_rotates_as_bmv2s_and_stays_under_its_cap(tmp_path):
    path = tmp_path / "s1.log"
    log = SwitchLog(path=str(path), level="debug", max_size=1000, max_files=2)
    for i in range(200):
        log.debug(f"packet {i:04d} " + "x" * 40)
    log.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["s1.1.log", "s1.2.log", "s1.log"]  # spdlog's names; the third backup is gone
    assert all((tmp_path / f).stat().st_size <= 1000 for f in files)
    assert "packet 0199" in path.read_text()  # the newest lines are in the live file
    older = (tmp_path / "s1.1.log").read_text()
    assert int(older.splitlines()[-1].split("packet ")[1][:4]) < int(path.read_text().split("packet ")[1][:4])
    assert rotated_name("logs/s1.log", 0) == "logs/s1.log" and rotated_name("a.b/log", 1) == "a.b/log.1"
