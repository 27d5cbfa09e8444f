"""The Makefile's build rule (dry runs only, `make -n`): an up-to-date program is not recompiled,
while a change to a P4 source or to the embedded compiler's own sources recompiles it."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FAKE_P4C = "fake-p4c-for-test"


def dry_run(build: Path, *args: str) -> str:
    """What `make -n build` would run for a build folder `build` (stdout)."""
    done = subprocess.run(["make", "-n", "-C", str(REPO), f"BUILD={build}", f"P4C={FAKE_P4C}",
                           "SWITCH=fake-switch", *args, "build"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def fresh_build(tmp_path: Path) -> Path:
    """A build folder whose outputs are newer than every source."""
    future = time.time() + 3600
    for name in ("gradlane.json", "gradlane.p4info.txtpb"):
        (tmp_path / name).write_text("{}")
        os.utime(tmp_path / name, (future, future))
    return tmp_path


def test_up_to_date_program_is_not_recompiled(fresh_build):
    assert FAKE_P4C not in dry_run(fresh_build)


def test_missing_program_is_compiled(tmp_path):
    assert FAKE_P4C in dry_run(tmp_path)


@pytest.mark.parametrize("source", ["p4src/gradlane.p4", "p4target/compiler/cli.py",
                                    "p4target/compiler/p4info/formats.py",
                                    "p4target/compiler/include/v1model.p4"])
def test_changed_source_recompiles(fresh_build, source):
    assert (REPO / source).is_file()
    assert FAKE_P4C in dry_run(fresh_build, "-W", source)
