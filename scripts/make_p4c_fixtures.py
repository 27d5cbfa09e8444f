#!/usr/bin/env python3
"""Record p4c's BMv2 JSON of every conformance program as a fixture for CI.

For each `tests/conformance/**/X.p4` with an `X.stf` (and for `p4src/gradlane.p4`, with its
P4Info), runs a locally built `p4c-bm2-ss` and writes its JSON, a copy of the STF test it is
checked with and `manifest.json` (p4c's version and commit, per program the files, the number
of priority queues and, where p4c refuses the program, its error) to
`tests/conformance/p4c_fixtures/`. `tests/conformance/test_p4c_fixtures.py` runs them on the
embedded switch in CI, where p4c is not needed. Not part of CI: p4c is built locally, see
p4target/README.md, "Checking against the real BMv2".

Each program is compiled from its own folder with relative paths, as p4c's test suite does, so
that no path of this machine ends up in a fixture. Programs that only include
`p4src/gradlane.p4` give the same JSON apart from the top-level "program" name; it is stored
once (`gradlane/gradlane.json`). `p4src/gradlane.p4` itself is compiled from `p4src/` with its
P4Info (`p4src/gradlane.json`, `p4src/gradlane.p4info.txt`).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = ROOT / "tests" / "conformance"
FIXTURES = CONFORMANCE / "p4c_fixtures"
GRADLANE = ROOT / "p4src" / "gradlane.p4"

# Valid P4_16 programs p4c refuses (its limits, not our programs' faults), and programs whose
# p4c JSON BMv2 itself refuses to load: recorded in the manifest with the reason, so the tests
# accept exactly these and notice when one changes.
P4C_REFUSES = {
    "language/for_in_loops": "p4c's BMv2 back end does not support `for (x in ...)` loops, and its "
                             "type checker not iteration over a list expression (P4_16 1.2.5 allows both)",
    "language/for_unrolled": "p4c's BMv2 back end does not support `for (x in ...)` loops (P4_16 1.2.5); "
                             "its C-style loops p4c 1.2.5.16 compiles without iterating",
    "language/stack_next_bounds": "p4c's uninitialized-read check makes reading `stack.next` in a parser "
                                  "an error; P4_16 8.18 defines it (error.StackOutOfBounds when the stack is full)",
}
BMV2_REFUSES = {
    "language/stack_runtime_index": "p4c writes a field of a run-time stack element as "
                                    "{\"type\": \"field\", \"value\": [<expression>, \"$valid$\"]}, which "
                                    "BMv2 refuses at load (the header must be named by a string)",
}


def find_p4c(given: str | None) -> str:
    """The p4c-bm2-ss to run."""
    exe = given or shutil.which("p4c-bm2-ss")
    if exe is None:
        raise SystemExit("make_p4c_fixtures: no p4c-bm2-ss on PATH (pass --p4c-bm2-ss)")
    return exe


def p4c_version(exe: str) -> tuple[str, str]:
    """(version, commit) from `p4c-bm2-ss --version`, e.g. ("1.2.5.16", "34b86e9ba")."""
    done = subprocess.run([exe, "--version"], capture_output=True, text=True)
    out = done.stdout + done.stderr   # p4c prints its version on stderr
    m = re.search(r"Version\s+(\S+)(?:\s+\(SHA:\s*([0-9a-f]{6,})\b)?", out)
    if not m:
        raise SystemExit(f"make_p4c_fixtures: cannot read the version of {exe}: {out!r}")
    return m.group(1), m.group(2) or ""


def compile_p4c(exe: str, includes: list[str], p4: Path, out: Path, p4info: Path | None = None) -> str:
    """Compile `p4` from its folder; returns "" or p4c's error text."""
    cmd = [exe, "--std", "p4-16", "--arch", "v1model"] + [f"-I{i}" for i in includes]
    cmd += ["-o", str(out)]
    if p4info is not None:
        cmd += ["--p4runtime-files", str(p4info)]
    cmd.append(p4.name)
    proc = subprocess.run(cmd, cwd=p4.parent, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not out.exists():
        lines = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
        return " | ".join(lines[:4])[:400] or f"exit status {proc.returncode}"
    return ""


def _without_program(doc: dict) -> str:
    return json.dumps({k: v for k, v in doc.items() if k != "program"}, sort_keys=True)


def conformance_programs() -> list[Path]:
    return sorted(p for p in CONFORMANCE.rglob("*.p4")
                  if p.with_suffix(".stf").exists() and FIXTURES not in p.parents)


def main(argv: list[str] | None = None) -> int:
    global FIXTURES
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--p4c-bm2-ss", help="the p4c back end to run (default: on PATH)")
    ap.add_argument("-I", dest="include", action="append", default=[],
                    help="include folder for p4c (its p4include, when p4c is not installed)")
    ap.add_argument("--out", help="write the fixtures here instead of tests/conformance/p4c_fixtures")
    ap.add_argument("--p4c-commit", default="",
                    help="p4c's source commit, for a p4c built outside a git checkout (its --version has no SHA)")
    args = ap.parse_args(argv)
    if args.out:
        FIXTURES = Path(args.out).resolve()
    exe = find_p4c(args.p4c_bm2_ss)
    version, commit = p4c_version(exe)
    commit = commit or args.p4c_commit or "unknown"
    includes = [str(Path(i).resolve()) for i in args.include]
    if FIXTURES.exists():
        for old in FIXTURES.rglob("*"):
            if old.is_file() and old.name != "README.md":
                old.unlink()
    FIXTURES.mkdir(parents=True, exist_ok=True)
    programs: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        gradlane_json = FIXTURES / "p4src" / "gradlane.json"
        gradlane_json.parent.mkdir(parents=True, exist_ok=True)
        error = compile_p4c(exe, includes, GRADLANE, gradlane_json, FIXTURES / "p4src" / "gradlane.p4info.txt")
        if error:
            raise SystemExit(f"make_p4c_fixtures: p4c refuses p4src/gradlane.p4: {error}")
        shared: dict[str, str] = {}  # a gradlane test program's JSON without "program": its file
        for p4 in conformance_programs():
            rel = p4.relative_to(CONFORMANCE).with_suffix("")
            name = str(rel)
            out = Path(tmp) / (hashlib.sha1(name.encode()).hexdigest() + ".json")
            error = compile_p4c(exe, includes, p4, out)
            entry: dict = {"stf": f"{rel}.stf",
                           "priority_queues": 8 if rel.parts[0] == "gradlane" else 1}
            if error:
                entry = {"error": error}
                if name in P4C_REFUSES:
                    entry["p4c_refuses"] = P4C_REFUSES[name]
            else:
                if name in BMV2_REFUSES:
                    entry["bmv2_refuses"] = BMV2_REFUSES[name]
                doc = _without_program(json.loads(out.read_text()))
                if rel.parts[0] == "gradlane" and doc in shared:
                    entry["json"] = shared[doc]
                else:
                    entry["json"] = "gradlane/gradlane.json" if rel.parts[0] == "gradlane" and not shared \
                        else f"{rel}.json"
                    if rel.parts[0] == "gradlane":
                        shared[doc] = entry["json"]
                    (FIXTURES / entry["json"]).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(out, FIXTURES / entry["json"])
                shutil.copyfile(p4.with_suffix(".stf"), FIXTURES / entry["stf"])
            programs[name] = entry
            print(f"{'ok   ' if not error else 'error'} {name}" + (f": {error}" if error else ""), flush=True)
    manifest = {"p4c": {"version": version, "commit": commit, "backend": "p4c-bm2-ss"},
                "source_commit": _git_head(), "programs": programs}
    (FIXTURES / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    readme = FIXTURES / "README.md"
    if readme.exists():  # the version line names the p4c these were made with
        readme.write_text(re.sub(r"Made with \*\*p4c-bm2-ss [^*]*\*\*",
                                 f"Made with **p4c-bm2-ss {version} (p4c commit {commit})**", readme.read_text()))
    undocumented = sorted(n for n, e in programs.items() if "error" in e and "p4c_refuses" not in e)
    if undocumented:
        print(f"make_p4c_fixtures: p4c refuses, with no reason recorded in P4C_REFUSES: {', '.join(undocumented)}")
    refused = sum("error" in e for e in programs.values())
    print(f"make_p4c_fixtures: p4c {version} ({commit}): {len(programs) - refused} of {len(programs)} "
          f"programs compiled, fixtures in {FIXTURES}")
    return 0


def _git_head() -> str:
    proc = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
