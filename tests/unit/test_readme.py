"""The README stays a one-screen map: short, naming every top-level folder, no tracker citations."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 160
ISSUE_CITATION = re.compile(r"\bissues? #?\d+", re.IGNORECASE)


def tracked_top_folders() -> set[str]:
    """Top-level folders holding tracked files (hidden ones such as `.ci` excluded)."""
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return {p.split("/", 1)[0] for p in out.stdout.splitlines() if "/" in p and not p.startswith(".")}


def test_readme_is_short():
    assert len(README.read_text().splitlines()) <= MAX_LINES


def test_readme_leads_with_the_two_commands():
    head = "\n".join(README.read_text().splitlines()[:30])
    assert "make run" in head and "make test" in head


def test_readme_names_every_top_level_folder():
    text = README.read_text()
    missing = sorted(f for f in tracked_top_folders() if f"`{f}/`" not in text)
    assert not missing, f"README's layout leaves out: {missing}"


def test_no_tracker_citations_in_readme_or_docs():
    docs = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    docs += [p for p in ROOT.glob("*/README.md")]
    found = [f"{p.relative_to(ROOT)}:{n}" for p in docs
             for n, line in enumerate(p.read_text().splitlines(), 1) if ISSUE_CITATION.search(line)]
    assert not found, f"issue numbers of a tracker outside the repository: {found[:10]}"
