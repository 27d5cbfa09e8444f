#!/usr/bin/env python3
"""Run P4 programs compiled by our compiler on the real BMv2 `simple_switch`, through p4c's own
STF runner (`backends/bmv2/run-bmv2-test.py`), and print how many pass.

Not part of CI: it needs a locally built `simple_switch` (on PATH or in /opt/p4ref/bin) and a
p4c source checkout (for the runner; p4c itself need not be built), see p4target/README.md,
"Checking against the real BMv2". By default it runs the project's conformance programs
(`tests/conformance/**/X.p4` with an `X.stf`); `--samples` runs p4c's v1model STF samples
instead, on real BMv2 and on the embedded switch (`p4target stf`), and prints both counts.

The runner's build directory is a temporary one holding a `p4c-bm2-ss` that runs our compiler
and a `config.h` defining HAVE_SIMPLE_SWITCH (without it the runner skips BMv2 and exits 0;
a run that says so counts as a failure here). Each program runs under the shared network lock
(/tmp/gradlane-net.lock): the runner's switch listens on a Thrift port.
"""
from __future__ import annotations

import argparse
import fcntl
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from p4target.compiler import compile_file  # noqa: E402  (the project root is not installed)
from p4target.errors import CompileError  # noqa: E402

DEFAULT_PREFIX = Path("/opt/p4ref")
LOCK = "/tmp/gradlane-net.lock"
SKIP_MESSAGE = "Will skip running BMv2 tests"
RUNNER_MODULES = ("ptf", "scapy", "ply", "thrift")
TIMEOUT = 180  # seconds per program; the runner itself gives the switch 60 s to come up


class Unavailable(Exception):
    """The reference tools are not there; the message says which."""


@dataclass
class Reference:
    simple_switch: Path
    p4c: Path
    python: str
    env: dict[str, str]
    version: str


@dataclass
class Outcome:
    name: str
    ok: bool
    detail: str = ""


def find_reference(p4c: str | None, python: str | None) -> Reference:
    found = shutil.which("simple_switch")
    switch = Path(found) if found else DEFAULT_PREFIX / "bin" / "simple_switch"
    if not os.access(switch, os.X_OK):
        raise Unavailable("simple_switch is neither on PATH nor in /opt/p4ref/bin "
                          "(build BMv2 as p4target/README.md describes)")
    prefix = switch.resolve().parent.parent
    p4c_dir = Path(p4c or os.environ.get("P4C_SRC") or DEFAULT_PREFIX / "src" / "p4c")
    if not (p4c_dir / "backends" / "bmv2" / "run-bmv2-test.py").is_file():
        raise Unavailable(f"no p4c checkout with backends/bmv2/run-bmv2-test.py at {p4c_dir} "
                          "(pass --p4c DIR or set P4C_SRC)")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(switch.parent), env.get("PATH", "")])
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(prefix / "lib"), env.get("LD_LIBRARY_PATH")]))
    # simple_switch_CLI's Thrift bindings live in the BMv2 prefix
    sites = glob.glob(str(prefix / "lib" / "python3*" / "site-packages"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, sites + [env.get("PYTHONPATH", "")]))
    runner_python = python or os.environ.get("P4REF_PYTHON") or _first_python_with_runner_modules(prefix, env)
    if runner_python is None:
        raise Unavailable("no Python with " + ", ".join(RUNNER_MODULES) + " for p4c's runner "
                          "(make a venv of /usr/bin/python3 --system-site-packages with "
                          "`pip install ptf scapy ply`, pass it with --python)")
    env["PATH"] = os.pathsep.join([str(Path(runner_python).parent), env["PATH"]])
    try:
        version = subprocess.run([str(switch), "--version"], env=env, capture_output=True, text=True,
                                 timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Unavailable(f"{switch} does not run: {e}") from None
    if not version:
        raise Unavailable(f"{switch} --version printed nothing (missing libraries under {prefix / 'lib'}?)")
    return Reference(switch, p4c_dir, runner_python, env, version)


def _first_python_with_runner_modules(prefix: Path, env: dict[str, str]) -> str | None:
    candidates = [prefix / "stfvenv" / "bin" / "python", Path("/usr/bin/python3")]
    check = "import " + ", ".join(RUNNER_MODULES)
    for py in candidates:
        if py.exists() and subprocess.run([str(py), "-c", check], env=env, capture_output=True).returncode == 0:
            return str(py)
    return None


def make_build_dir(where: Path) -> Path:
    """The runner's `-bd`: our compiler as `p4c-bm2-ss`, and a config.h that says BMv2 is here."""
    build = where / "build"
    build.mkdir()
    wrapper = build / "p4c-bm2-ss"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}${{PYTHONPATH:+:$PYTHONPATH}}" '
                       f'exec "{sys.executable}" -m p4target compile "$@"\n')
    wrapper.chmod(0o755)
    (build / "config.h").write_text("#define HAVE_SIMPLE_SWITCH 1\n")
    return build


# p4c's runner turns an STF `add` into `table_add`, which BMv2 refuses on a table with an action
# profile or selector (WRONG_TABLE_TYPE). This stand-in for simple_switch_CLI, first on the
# runner's PATH, gives each such entry an action-profile member of its own, as our STF runner
# does; every other command goes to the real CLI unchanged.
CLI_ADAPTER = """\
import json, os, subprocess, sys
tables = json.load(open(os.environ["CHECK_REFERENCE_PROFILES"]))
cli = subprocess.Popen([os.environ["CHECK_REFERENCE_CLI"]] + sys.argv[1:], stdin=subprocess.PIPE, text=True)
members = {}
for line in sys.stdin:
    words = line.split()
    if len(words) > 2 and words[0] == "table_add" and words[1] in tables:
        table = tables[words[1]]
        keys, _, rest = " ".join(words[3:]).partition("=>")
        rest = rest.split()
        n = table["params"][words[2]]
        handle = members.setdefault(table["profile"], [0])
        cli.stdin.write(f"act_prof_create_member {table['profile']} {words[2]} {' '.join(rest[:n])}\\n")
        line = f"table_indirect_add {words[1]} {keys.strip()} => {handle[0]} {' '.join(rest[n:])}\\n"
        handle[0] += 1
    cli.stdin.write(line)
    cli.stdin.flush()
cli.stdin.close()
sys.exit(cli.wait())
"""


def install_cli_adapter(build: Path, ref: Reference) -> None:
    real = shutil.which("simple_switch_CLI", path=ref.env["PATH"])
    if real is None:
        raise Unavailable("simple_switch_CLI is not next to simple_switch")
    bin_dir = build / "bin"
    bin_dir.mkdir()
    adapter = bin_dir / "simple_switch_CLI"
    adapter.write_text(f"#!{sys.executable}\n" + CLI_ADAPTER)
    adapter.chmod(0o755)
    ref.env["CHECK_REFERENCE_CLI"] = real
    ref.env["PATH"] = os.pathsep.join([str(bin_dir), ref.env["PATH"]])


def profile_tables(bmv2_json: dict) -> dict:
    """Tables with an action profile: its name and each action's number of parameters."""
    params = {a["name"]: len(a["runtime_data"]) for a in bmv2_json["actions"]}
    return {t["name"]: {"profile": t["action_profile"], "params": params}
            for p in bmv2_json["pipelines"] for t in p["tables"] if t.get("action_profile")}


_LPM = re.compile(r"(:\s*)(0x[0-9a-fA-F]+|0b[01]+|\d+)/(\d+)")


def runner_stf(text: str) -> str:
    """Our STF for p4c's runner: its parser turns an LPM key `value/length` into a tuple its
    table code cannot read, so write the prefix with `*` wildcards (an equivalent form)."""
    def wildcard(m: re.Match) -> str:
        literal, length = m.group(2), int(m.group(3))
        if literal.startswith("0x"):
            digits = literal[2:]
            width = len(digits) * 4
        elif literal.startswith("0b"):
            digits = literal[2:]
            width = len(digits)
        else:
            width = max(length, int(literal).bit_length())
            width += -width % 4
            digits = format(int(literal), f"0{width // 4}x")
        value = int(digits, 16 if not literal.startswith("0b") else 2)
        if length % 4 == 0:
            hexdigits = format(value, f"0{width // 4}x")
            return m.group(1) + "0x" + hexdigits[:length // 4] + "*" * ((width - length) // 4)
        bits = format(value, f"0{width}b")
        return m.group(1) + "0b" + bits[:length] + "*" * (width - length)
    return _LPM.sub(wildcard, text)


def run_on_bmv2(ref: Reference, build: Path, work: Path, p4: Path, stf_text: str,
                target_args: list[str]) -> Outcome:
    name = p4.stem
    case = Path(tempfile.mkdtemp(prefix=name + "-", dir=work))
    stf = case / (name + ".stf")
    stf.write_text(runner_stf(stf_text))
    try:
        program = compile_file(str(p4), include_dirs=(str(p4.parent),)).bmv2_json
    except CompileError as e:
        return Outcome(name, False, f"our compiler: {e}")
    profiles = case / "profiles.json"
    profiles.write_text(json.dumps(profile_tables(program)))
    env = dict(ref.env, CHECK_REFERENCE_PROFILES=str(profiles))
    cmd = [ref.python, str(ref.p4c / "backends" / "bmv2" / "run-bmv2-test.py"), str(ref.p4c), str(p4),
           "-tf", str(stf), "-bd", str(build), "-td", str(case)]
    cmd += [f"--target-specific-switch-arg={a}" for a in target_args]
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            # the runner keeps its Thrift port locks in its working directory: one for all runs
            proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                                  timeout=TIMEOUT, start_new_session=True)
        except subprocess.TimeoutExpired:
            return Outcome(name, False, f"timed out after {TIMEOUT} s")
    output = proc.stdout + proc.stderr
    if SKIP_MESSAGE in output:
        raise Unavailable(f"p4c's runner skipped BMv2 for {name} ({SKIP_MESSAGE!r}): "
                          "its config.h was not read")
    if proc.returncode == 0:
        shutil.rmtree(case, ignore_errors=True)
        return Outcome(name, True)
    return Outcome(name, False, _reason(output))


def _reason(output: str) -> str:
    for pattern in ("Invalid '", "error:", "Error", "Exception", "expected", "failed"):
        for line in output.splitlines():
            if pattern in line:
                return line.strip()[:200]
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip()[:200] if lines else "failed"


def run_on_embedded(p4: Path, stf: Path) -> Outcome:
    proc = subprocess.run([sys.executable, "-m", "p4target", "stf", "-q", "-I", str(p4.parent), str(p4), str(stf)],
                          cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    return Outcome(p4.stem, proc.returncode == 0, lines[0][:200] if proc.returncode and lines else "")


def conformance_programs() -> list[tuple[Path, list[str]]]:
    out = []
    for p4 in sorted((ROOT / "tests" / "conformance").rglob("*.p4")):
        if p4.with_suffix(".stf").exists():
            # gradlane's data plane runs with 8 strict-priority queues, as `make run` starts it
            gradlane = "gradlane" in p4.relative_to(ROOT).parts
            out.append((p4, ["--priority-queues", "8"] if gradlane else []))
    return out


def p4c_samples(p4c: Path) -> list[Path]:
    samples = p4c / "testdata" / "p4_16_samples"
    return [p4 for p4 in sorted(samples.glob("*.p4"))
            if p4.with_suffix(".stf").exists() and "v1model.p4" in p4.read_text(errors="replace")]


def _report(title: str, outcomes: list[Outcome], verbose: bool) -> int:
    passed = sum(o.ok for o in outcomes)
    for o in outcomes:
        if verbose or not o.ok:
            print(f"  {'PASS' if o.ok else 'FAIL'} {o.name}" + (f": {o.detail}" if o.detail else ""))
    print(f"{title}: {passed} of {len(outcomes)} pass")
    return passed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--p4c", help="p4c source checkout (default $P4C_SRC or /opt/p4ref/src/p4c)")
    ap.add_argument("--python", help="Python with ptf, scapy, ply and thrift for p4c's runner")
    ap.add_argument("--samples", action="store_true",
                    help="run p4c's v1model STF samples (real BMv2 and embedded switch) instead")
    ap.add_argument("-k", dest="pattern", help="only programs whose name contains this")
    ap.add_argument("-v", "--verbose", action="store_true", help="list passing programs too")
    args = ap.parse_args(argv)
    try:
        ref = find_reference(args.p4c, args.python)
    except Unavailable as e:
        print(f"check-reference: {e}", file=sys.stderr)
        return 2
    print(f"check-reference: simple_switch {ref.version} ({ref.simple_switch}), runner from {ref.p4c}")
    if args.samples:
        cases = [(p4, []) for p4 in p4c_samples(ref.p4c)]
    else:
        cases = conformance_programs()
    if args.pattern:
        cases = [(p4, a) for p4, a in cases if args.pattern in p4.stem]
    if not cases:
        print("check-reference: no programs selected", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="check-reference-") as tmp:
        work = Path(tmp)
        build = make_build_dir(work)
        try:
            install_cli_adapter(build, ref)
            on_bmv2 = [run_on_bmv2(ref, build, work, p4, p4.with_suffix(".stf").read_text(), extra)
                       for p4, extra in cases]
        except Unavailable as e:
            print(f"check-reference: {e}", file=sys.stderr)
            return 2
    what = "p4c v1model STF samples" if args.samples else "conformance programs"
    passed = _report(f"our compiler's JSON on real BMv2 ({what})", on_bmv2, args.verbose)
    if args.samples:
        on_embedded = [run_on_embedded(p4, p4.with_suffix(".stf")) for p4, _ in cases]
        _report(f"our compiler's JSON on the embedded switch ({what})", on_embedded, args.verbose)
        differ = [b.name for b, e in zip(on_bmv2, on_embedded) if b.ok != e.ok]
        if differ:
            print("results differ for: " + " ".join(differ))
    return 0 if passed == len(on_bmv2) else 1


if __name__ == "__main__":
    sys.exit(main())
