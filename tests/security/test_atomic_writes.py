"""No atomic write follows a planted symlink (issue 25 point 3): the controller's state file (the
daemon runs as root), the switch's stats file, the run record and the experiments' state all
go through one writer whose temporary file is created exclusively under an unpredictable name;
a state path that is a symlink is refused."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from controller.errors import ConfigError
from controller.statefile import read_state, write_state
from experiments.records import ResultsDir
from p4target.switch.stats_file import StatsFile
from topo.pidfile import RunRecord


@pytest.fixture
def victim(tmp_path) -> Path:
    path = tmp_path / "elsewhere" / "victim.txt"
    path.parent.mkdir()
    path.write_text("precious\n")
    return path


def _plant(folder: Path, names: list[str], victim: Path) -> None:
    for name in names:
        (folder / name).symlink_to(victim)


def _untouched(victim: Path) -> None:
    assert victim.read_text() == "precious\n"


def test_the_state_files_temporary_does_not_follow_a_planted_symlink(tmp_path, victim):
    path = tmp_path / "c.json"
    write_state(path, '{"a": 1}')
    _plant(tmp_path, [f".c.json.{os.getpid()}.tmp", f".c.json.{os.getpid()}.bak.tmp"], victim)
    write_state(path, '{"a": 2}')
    _untouched(victim)
    assert path.read_text() == '{"a": 2}' and not path.is_symlink()


def test_a_state_path_that_is_a_symlink_is_refused(tmp_path, victim):
    path = tmp_path / "c.json"
    path.symlink_to(victim)
    with pytest.raises(ConfigError, match="is a symlink"):
        write_state(path, '{"a": 1}')
    with pytest.raises(ConfigError, match="is a symlink"):
        read_state(path)
    _untouched(victim)


def test_a_symlink_at_the_backup_path_is_replaced_not_followed(tmp_path, victim):
    path = tmp_path / "c.json"
    write_state(path, '{"a": 1}')
    _plant(tmp_path, ["c.json.bak"], victim)
    write_state(path, '{"a": 2}')
    _untouched(victim)
    assert (tmp_path / "c.json.bak").read_text() == '{"a": 1}'


def test_other_atomic_writers_do_not_follow_planted_symlinks(tmp_path, victim):
    stats = tmp_path / "s.log.stats.json"
    _plant(tmp_path, ["s.log.stats.json.tmp", "run.tmp", "state.tmp"], victim)
    StatsFile(str(stats), lambda: {"rx_drops_total": 1}).write()
    record = RunRecord(tmp_path / "run.json", "t")
    record.add_interfaces(["x-eth0"])
    ResultsDir(tmp_path).set_state("running")
    _untouched(victim)
    assert '"rx_drops_total": 1' in stats.read_text()
    assert "x-eth0" in (tmp_path / "run.json").read_text()
    assert '"running"' in (tmp_path / "state.json").read_text()
