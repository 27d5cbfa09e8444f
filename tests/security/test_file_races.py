"""Files another user can reach (a folder it may write): a planted job key is refused, the atomic
writer sets a secret's mode on its descriptor (a temporary swapped for a symlink mid-write
changes nothing), and an agent's PID file goes through that writer, never through a
predictable temporary. The planting user is uid 65534 (tests/support/other_user.py)."""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from hosts.cli import write_pid_file
from hosts.errors import ConfigError
from hosts.exchange.job_key import create_key_file, load_or_create, read_key_file
from p4target import atomic_files
from p4target.atomic_files import AtomicWriteError, write_file
from support.other_user import NOBODY, check_as_nobody



@pytest.fixture
def reachable() -> Iterator[Path]:
    """A folder uid 65534 can reach (pytest's own tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="gradlane-security-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def shared(reachable) -> Path:
    """A folder every user may write (sticky, as /tmp)."""
    folder = reachable / "shared"
    folder.mkdir()
    os.chmod(folder, 0o1777)
    return folder


@pytest.fixture
def open_folder(reachable) -> Path:
    """A folder every user may write, without the sticky bit (names can be moved by anyone)."""
    folder = reachable / "open"
    folder.mkdir()
    os.chmod(folder, 0o777)
    return folder


def test_a_key_file_planted_by_another_user_is_refused(shared):
    path = shared / "job1.key"
    check_as_nobody('umask 077; printf "%s\\n" "$2" > "$1"', str(path), "ab" * 32)
    assert os.stat(path).st_uid == NOBODY and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with pytest.raises(ConfigError, match="belongs to uid 65534"):
        load_or_create(str(path), create=True)  # the PS: the name exists, so it would read it
    with pytest.raises(ConfigError, match="belongs to uid 65534"):
        read_key_file(str(path))


def test_a_key_this_process_creates_is_used_as_created(shared):
    path = shared / "job2.key"
    key = load_or_create(str(path), create=True)
    assert read_key_file(str(path)) == key
    with pytest.raises(ConfigError):
        create_key_file(str(path))  # O_EXCL: an existing name is never opened for writing


def test_the_atomic_writer_never_changes_a_file_a_swapped_temporary_points_to(open_folder, reachable,
                                                                            monkeypatch):
    """The race of the finding, made deterministic: at the fsync, another user moves the
    temporary away and leaves a symlink to a file of root's in its place. A chmod by name
    would make that file 0644; a rename would put the symlink at the target."""
    shadow = reachable / "shadow"
    shadow.write_text("root's secret\n")
    os.chmod(shadow, 0o600)
    target = open_folder / "state.json"
    stolen = open_folder / "stolen"
    real_fsync = os.fsync

    def swap_at_fsync(fd: int) -> None:
        real_fsync(fd)
        tmp = next((p for p in open_folder.iterdir() if p.name.startswith(".state.json.")), None)
        if tmp is None:  # the folder's fsync, after the rename
            return

        check_as_nobody('mv "$1" "$2" && ln -s "$3" "$1"', str(tmp), str(stolen), str(shadow))

    monkeypatch.setattr(atomic_files.os, "fsync", swap_at_fsync)
    with pytest.raises(AtomicWriteError, match="was replaced while being written"):
        write_file(target, b"the state\n", durable=True, mode=0o644)
    assert stat.S_IMODE(os.stat(shadow).st_mode) == 0o600  # untouched through the symlink
    assert not target.exists() and not target.is_symlink()
    assert [p.name for p in open_folder.iterdir()] == ["stolen"]  # the planted symlink is removed


def test_a_secret_is_never_readable_by_others_while_it_is_written(open_folder, monkeypatch):
    target = open_folder / "secret.key"
    seen: list[int] = []
    real_fsync = os.fsync

    def look(fd: int) -> None:
        seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        real_fsync(fd)

    monkeypatch.setattr(atomic_files.os, "fsync", look)
    write_file(target, b"k" * 32, durable=True, mode=0o600)
    assert seen[0] == 0o600 and stat.S_IMODE(os.stat(target).st_mode) == 0o600


def test_an_agents_pid_file_does_not_follow_a_planted_temporary(shared, reachable):
    victim = reachable / "victim"
    victim.write_text("precious\n")
    os.chmod(victim, 0o666)
    pid_file = shared / "ps.pid"
    predictable = shared / f"ps.pid.{os.getpid()}.tmp"  # the name the old writer used
    check_as_nobody('ln -s "$1" "$2"', str(victim), str(predictable))
    write_pid_file(str(pid_file))
    assert victim.read_text() == "precious\n"
    assert pid_file.read_text() == f"{os.getpid()}\n" and not pid_file.is_symlink()


def test_an_agents_pid_file_replaces_a_symlink_planted_at_its_name(open_folder, reachable):
    victim = reachable / "victim"
    victim.write_text("precious\n")
    os.chmod(victim, 0o666)
    pid_file = open_folder / "worker.pid"
    check_as_nobody('ln -s "$1" "$2"', str(victim), str(pid_file))
    write_pid_file(str(pid_file))
    assert victim.read_text() == "precious\n"
    assert not pid_file.is_symlink() and pid_file.read_text() == f"{os.getpid()}\n"
