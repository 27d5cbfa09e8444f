"""The committed gradlane STF files are what generate.py writes (scenarios edited in one place)."""
from __future__ import annotations

from pathlib import Path

import gradlane_stf_generate as generate  # loaded by conftest.py

HERE = Path(__file__).resolve().parent


def test_committed_stf_files_match_the_generator() -> None:
    stale = [name for name, text in generate.render().items()
             if not (HERE / name).exists() or (HERE / name).read_text() != text]
    assert not stale, f"run python {HERE / 'generate.py'}: stale {stale}"
