"""Atomic output files: all or nothing, no temporaries left behind, umask-respecting modes."""
from __future__ import annotations

import os

import pytest

from p4target.atomic_files import write_file, write_files
from p4target.errors import P4TargetError


def test_write_files_is_all_or_nothing(tmp_path):
    good = tmp_path / "good.json"
    good.write_text("old")
    with pytest.raises(P4TargetError, match="cannot write .*missing/p.txt"):
        write_files([(str(good), b"new"), (str(tmp_path / "missing" / "p.txt"), b"x")])
    assert good.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["good.json"]
    (tmp_path / "adir").mkdir()
    with pytest.raises(P4TargetError, match="Is a directory"):
        write_files([(str(good), b"new"), (str(tmp_path / "adir"), b"x")])
    assert good.read_text() == "old"
    write_files([(str(good), b"new"), (str(tmp_path / "adir" / "p.bin"), b"\x00")])
    assert good.read_text() == "new" and (tmp_path / "adir" / "p.bin").read_bytes() == b"\x00"
    mask = os.umask(0o022)
    try:
        write_files([(str(good), b"x")])
    finally:
        os.umask(mask)
    assert good.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
    assert sorted(os.listdir(tmp_path)) == ["adir", "good.json"]


def test_write_file_replaces_whole_or_keeps_old(tmp_path):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    write_file(path, b"new contents")
    assert path.read_bytes() == b"new contents"
    with pytest.raises(P4TargetError, match="cannot write .*nowhere/out.bin"):
        write_file(tmp_path / "nowhere" / "out.bin", b"x")
    assert sorted(os.listdir(tmp_path)) == ["out.bin"]
