#!/usr/bin/env python3
"""Run P4 programs compiled by our compiler on the real BMv2 `simple_switch`, through p4c's own
STF runner (`backends/bmv2/run-bmv2-test.py`), and print how many pass.

Not part of CI: it needs a locally built `simple_switch` (on PATH or in /opt/p4ref/bin) and a
p4c source checkout (for the runner; p4c itself need not be built), see p4target/README.md,
"Checking against the real BMv2". By default it runs the project's conformance programs
(`tests/conformance/**/X.p4` with an `X.stf`); `--samples` runs p4c's v1model STF samples
instead, on real BMv2 and on the embedded switch (`p4target stf`), and prints both counts.

For the conformance programs it also runs each STF test on real BMv2 with our own STF runner
(`bmv2_stf.py`: command by command over Thrift and nanomsg, so range keys, state changes between
packets, counter and register checks all run as written), and, when p4c's `p4c-bm2-ss` is on
PATH (or given with --p4c-bm2-ss), compiles them with p4c and runs p4c's JSON on the embedded
switch. `--switch embedded` puts the embedded switch (`p4target switch`) in place of the real
`simple_switch` under p4c's runner.

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
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from p4target.compiler import compile_file  # noqa: E402  (the project root is not installed)
from p4target.errors import CompileError  # noqa: E402

DEFAULT_PREFIX = Path(os.environ.get("P4REF_PREFIX", "/opt/p4ref"))  # where the reference build lives
LOCK = "/tmp/gradlane-net.lock"
SKIP_MESSAGE = "Will skip running BMv2 tests"
RUNNER_MODULES = ("ptf", "scapy", "ply", "thrift")
TIMEOUT = 180  # seconds per program; the runner itself gives the switch 60 s to come up
LOCK_HOLD = 420  # seconds of runs started per hold of the network lock (others wait for it)


class NetworkLock:
    """The machine-wide network lock, held while switches run; `may_continue` says whether
    another batch may still start in this hold (the hold stays well under COMMON.md's 12 min)."""

    _since = 0.0

    def __enter__(self) -> "NetworkLock":
        self._file = open(LOCK, "a")
        fcntl.flock(self._file, fcntl.LOCK_EX)
        NetworkLock._since = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    @staticmethod
    def may_continue() -> bool:
        return time.monotonic() - NetworkLock._since < LOCK_HOLD


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
    runner_limit: str = ""  # why p4c's runner cannot run this test as written, if it cannot


# STF commands that change switch state; p4c's runner sends all of them before any packet
_STATE_COMMANDS = ("add", "setdefault", "remove", "register_write", "register_reset", "counter_write",
                   "mirroring_add", "mc_", "meter_set_rates", "meter_array_set_rates")


def runner_limit(stf_text: str, output: str) -> str:
    """Why p4c's runner cannot run this STF test as written ("" when it can)."""
    if "Unexpected key type range" in output:
        return "p4c's runner has no range match keys"
    seen_packet = False
    for line in stf_text.splitlines():
        word = line.split("#")[0].strip().split(" ")[0]
        if word == "packet":
            seen_packet = True
        elif seen_packet and word.startswith(_STATE_COMMANDS):
            return "state changes between packets (p4c's runner sends every command before the first packet)"
    return ""


def find_reference(p4c: str | None, python: str | None) -> Reference:
    found = shutil.which("simple_switch")
    switch = Path(found) if found else DEFAULT_PREFIX / "bin" / "simple_switch"
    if not os.access(switch, os.X_OK):
        raise Unavailable(f"simple_switch is neither on PATH nor in {DEFAULT_PREFIX / 'bin'} "
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
    build = Path(tempfile.mkdtemp(prefix="build-", dir=where))
    # a copy of the compiler as it is now: edits during a long run do not change its results
    shutil.copytree(ROOT / "p4target", build / "p4target", ignore=shutil.ignore_patterns("__pycache__"))
    wrapper = build / "p4c-bm2-ss"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{build}${{PYTHONPATH:+:$PYTHONPATH}}" '
                       f'exec "{sys.executable}" -m p4target compile "$@"\n')
    wrapper.chmod(0o755)
    (build / "config.h").write_text("#define HAVE_SIMPLE_SWITCH 1\n")
    return build


def install_cli_adapter(build: Path, ref: Reference) -> None:
    """`check_reference_cli.py` as the runner's simple_switch_CLI (first on its PATH)."""
    real = shutil.which("simple_switch_CLI", path=ref.env["PATH"])
    if real is None:
        raise Unavailable("simple_switch_CLI is not next to simple_switch")
    bin_dir = build / "bin"
    bin_dir.mkdir()
    adapter = bin_dir / "simple_switch_CLI"
    adapter.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).with_name("check_reference_cli.py")}" "$@"\n')
    adapter.chmod(0o755)
    ref.env["CHECK_REFERENCE_CLI"] = real
    ref.env["PATH"] = os.pathsep.join([str(bin_dir), ref.env["PATH"]])


def install_embedded_switch(build: Path, ref: Reference) -> None:
    """The embedded switch (`p4target switch`, from the copy in `build`) as the runner's
    `simple_switch`; the real simple_switch_CLI talks to its Thrift server."""
    wrapper = build / "bin" / "simple_switch"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{build}${{PYTHONPATH:+:$PYTHONPATH}}" '
                       f'exec "{sys.executable}" -m p4target switch "$@"\n')
    wrapper.chmod(0o755)


def find_p4c_backend(given: str | None) -> str | None:
    """p4c's `p4c-bm2-ss` (given, on PATH, or in the reference prefix), if there is one."""
    for candidate in (given, shutil.which("p4c-bm2-ss"), str(DEFAULT_PREFIX / "bin" / "p4c-bm2-ss")):
        if candidate and os.access(candidate, os.X_OK) and not Path(candidate).is_dir():
            return candidate
    return None


def run_p4c_json_on_embedded(p4c: str, includes: list[str], work: Path, p4: Path,
                             priority_queues: int) -> Outcome:
    """p4c's JSON of `p4` on the embedded switch (in this process, as CI runs the fixtures)."""
    from make_p4c_fixtures import compile_p4c
    from p4target.stf import run_stf

    out = Path(tempfile.mkdtemp(prefix=p4.stem + "-p4c-", dir=work)) / (p4.stem + ".json")
    error = compile_p4c(p4c, includes, p4, out)
    if error:
        return Outcome(p4.stem, False, f"p4c: {error}")
    stf = p4.with_suffix(".stf")
    try:
        result = run_stf(json.loads(out.read_text()), stf.read_text(), str(stf), priority_queues=priority_queues)
    except Exception as e:  # a load error of the embedded switch is this program's failure
        return Outcome(p4.stem, False, f"{type(e).__name__}: {e}"[:200])
    first = next((line for line in result.lines if "FAIL" in line), "")
    return Outcome(p4.stem, result.ok, first.strip()[:200])


def run_with_our_driver(ref: Reference, work: Path, p4: Path, priority_queues: int) -> Outcome:
    """Our compiler's JSON on real BMv2, the STF test run command by command (`bmv2_stf`)."""
    from bmv2_stf import Bmv2Unavailable, run_stf_on_bmv2

    try:
        program = compile_file(str(p4), include_dirs=(str(p4.parent),)).bmv2_json
    except CompileError as e:
        return Outcome(p4.stem, False, f"our compiler: {e}")
    case = Path(tempfile.mkdtemp(prefix=p4.stem + "-driver-", dir=work))
    path = case / (p4.stem + ".json")
    path.write_text(json.dumps(program))
    stf = p4.with_suffix(".stf")
    try:
        result = run_stf_on_bmv2(str(ref.simple_switch), ref.env, program, str(path), stf.read_text(), str(stf),
                                 priority_queues, log=str(case / "simple_switch.log"))
    except Bmv2Unavailable as e:
        return Outcome(p4.stem, False, str(e))
    except Exception as e:  # noqa: BLE001  (the runner's own errors: this program fails)
        return Outcome(p4.stem, False, f"{type(e).__name__}: {e}"[:200])
    if result.ok:
        shutil.rmtree(case, ignore_errors=True)
        return Outcome(p4.stem, True)
    (case / "result.txt").write_text("\n".join(result.lines) + "\n")
    first = next((line for line in result.lines if "FAIL" in line), "")
    return Outcome(p4.stem, False, first.strip()[:200] + f" (all: {case / 'result.txt'})")


def table_shapes(bmv2_json: dict) -> dict:
    """What the CLI adapter needs: each table's action profile and key match kinds, and the
    number of parameters of each action."""
    return {"params": {a["name"]: len(a["runtime_data"]) for a in bmv2_json["actions"]},
            "tables": {t["name"]: {"profile": t.get("action_profile"),
                                   "keys": [k["match_type"] for k in t["key"]]}
                       for p in bmv2_json["pipelines"] for t in p["tables"]}}


_NUMBER = r"(?:0x[0-9a-fA-F]+|0b[01]+|\d+)"
_LPM = re.compile(rf"(:\s*)({_NUMBER})/(\d+)")
_TERNARY = re.compile(rf"(:\s*)({_NUMBER})&&&({_NUMBER})")
_RANGE = re.compile(rf"(:\s*)({_NUMBER})(?:\.\.|->)({_NUMBER})")
RANGE_SHIFT = 128  # a range key passes p4c's runner as one number, lo << 128 | hi


def _literal(text: str) -> tuple[int, int]:
    """Value and written width in bits of an STF number."""
    if text.startswith("0x"):
        return int(text, 16), 4 * (len(text) - 2)
    if text.startswith("0b"):
        return int(text, 2), len(text) - 2
    value = int(text)
    return value, max(4, value.bit_length() + -value.bit_length() % 4)


def _wildcards(value: int, mask: int, width: int) -> str:
    """`value&&&mask` as p4c's STF writes it: the digits of `value`, `*` where `mask` is 0."""
    width = max(width, mask.bit_length() + -mask.bit_length() % 4)
    nibbles = [(i, (mask >> (4 * i)) & 0xF) for i in reversed(range(width // 4))]
    if all(n in (0, 0xF) for _, n in nibbles):
        return "0x" + "".join("*" if n == 0 else format((value >> (4 * i)) & 0xF, "x") for i, n in nibbles)
    return "0b" + "".join("*" if not (mask >> i) & 1 else str((value >> i) & 1) for i in reversed(range(width)))


_REGISTER_READ = re.compile(r"^([ \t]*register_read[ \t]+\S+[ \t]+\S+)[ \t]+\S+", re.MULTILINE)
_CHECK_COUNTER = re.compile(r"^[ \t]*check_counter\b.*$", re.MULTILINE)
_REGISTER_WRITE = re.compile(r"^([ \t]*register_write[ \t]+\S+[ \t]+\S+[ \t]+)(0x[0-9a-fA-F]+|0b[01]+)", re.MULTILINE)


def runner_stf(text: str) -> str:
    """Our STF dialect in the forms p4c's runner reads: an LPM key `value/length` (its parser
    makes a tuple of it that its table code cannot read) and a ternary `value&&&mask` become
    `*` wildcards; a range `lo..hi` or `lo->hi` (no p4c STF form) becomes one number that the CLI adapter
    turns back into BMv2's `lo->hi`. The runner checks packets only: it ignores counter checks
    (and cannot parse ours, whose counter names have dots) and passes `register_read` to the
    CLI without comparing, so those expectations are left out; a `register_write` value is
    written in decimal, the only form simple_switch_CLI reads."""
    text = _CHECK_COUNTER.sub("", _REGISTER_READ.sub(r"\1", text))
    # simple_switch_CLI's register_write takes a decimal value only
    text = _REGISTER_WRITE.sub(lambda m: m.group(1) + str(_literal(m.group(2))[0]), text)
    def lpm(m: re.Match) -> str:
        value, width = _literal(m.group(2))
        length = int(m.group(3))
        width = max(width, length + -length % 4)
        return m.group(1) + _wildcards(value, ((1 << length) - 1) << (width - length), width)

    def ternary(m: re.Match) -> str:
        value, width = _literal(m.group(2))
        return m.group(1) + _wildcards(value, _literal(m.group(3))[0], width)

    def span(m: re.Match) -> str:
        return m.group(1) + hex(_literal(m.group(2))[0] << RANGE_SHIFT | _literal(m.group(3))[0])

    return _RANGE.sub(span, _TERNARY.sub(ternary, _LPM.sub(lpm, text)))



def run_on_bmv2(ref: Reference, build: Path, work: Path, p4: Path, stf_text: str,
                target_args: list[str], translate: bool = True) -> Outcome:
    name = p4.stem
    case = Path(tempfile.mkdtemp(prefix=name + "-", dir=work))
    stf = case / (name + ".stf")
    stf.write_text(runner_stf(stf_text) if translate else stf_text)
    try:
        program = compile_file(str(p4), include_dirs=(str(p4.parent),)).bmv2_json
    except CompileError as e:
        return Outcome(name, False, f"our compiler: {e}")
    shapes = case / "tables.json"
    shapes.write_text(json.dumps(table_shapes(program)))
    env = dict(ref.env, CHECK_REFERENCE_TABLES=str(shapes))
    cmd = [ref.python, str(ref.p4c / "backends" / "bmv2" / "run-bmv2-test.py"), str(ref.p4c), str(p4),
           "-tf", str(stf), "-bd", str(build), "-td", str(case)]
    cmd += [f"--target-specific-switch-arg={a}" for a in target_args]
    try:
        # the runner keeps its Thrift port locks in its working directory: one for all runs
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return Outcome(name, False, f"timed out after {TIMEOUT} s")
    output = proc.stdout + proc.stderr
    if SKIP_MESSAGE in output:
        raise Unavailable(f"p4c's runner skipped BMv2 for {name} ({SKIP_MESSAGE!r}): "
                          "its config.h was not read")
    if proc.returncode == 0:
        shutil.rmtree(case, ignore_errors=True)
        return Outcome(name, True)
    return Outcome(name, False, _reason(output), runner_limit(stf_text, output))


def _reason(output: str) -> str:
    for pattern in ("Invalid '", "error:", "Error", "Exception", "expected", "failed"):
        for line in output.splitlines():
            if pattern in line:
                return line.strip()[:200]
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip()[:200] if lines else "failed"


def run_on_embedded(build: Path, p4: Path, stf: Path) -> Outcome:
    """`p4target stf` (our compiler and switch, from the copy in `build`) on one program."""
    env = dict(os.environ, PYTHONPATH=str(build))
    proc = subprocess.run([sys.executable, "-m", "p4target", "stf", "-q", "-I", str(p4.parent), str(p4), str(stf)],
                          cwd=build, env=env, capture_output=True, text=True, timeout=TIMEOUT)
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
            if p4.is_file() and p4.with_suffix(".stf").is_file() and "v1model.p4" in p4.read_text(errors="replace")]


def _show(where: str, o: Outcome, verbose: bool) -> Outcome:
    if verbose or not o.ok:
        detail = f"{o.runner_limit}; {o.detail}" if o.runner_limit else o.detail
        print(f"  {where} {'PASS' if o.ok else 'FAIL'} {o.name}" + (f": {detail}" if detail else ""), flush=True)
    return o


def _report(title: str, outcomes: list[Outcome]) -> int:
    passed = sum(o.ok for o in outcomes)
    limited = sum(bool(o.runner_limit) for o in outcomes)
    print(f"{title}: {passed} of {len(outcomes)} pass"
          + (f" ({limited} of the failing ones cannot run as written through p4c's runner)" if limited else ""))
    return passed


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--p4c", help="p4c source checkout (default $P4C_SRC or /opt/p4ref/src/p4c)")
    ap.add_argument("--python", help="Python with ptf, scapy, ply and thrift for p4c's runner")
    ap.add_argument("--samples", action="store_true",
                    help="run p4c's v1model STF samples (real BMv2 and embedded switch) instead")
    ap.add_argument("-k", dest="pattern", action="append", help="only programs whose name contains this (repeatable)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list passing programs too")
    ap.add_argument("-j", "--jobs", type=int, default=4,
                    help="programs run at once (each runner mostly waits; default 4)")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep the runner's files of failing programs")
    ap.add_argument("--switch", choices=("bmv2", "embedded"), default="bmv2",
                    help="the simple_switch under p4c's runner: the real one (default) or the embedded switch")
    ap.add_argument("--p4c-bm2-ss", help="p4c's BMv2 back end for p4c's JSON on the embedded switch "
                    "(default: on PATH or in the reference prefix)")
    ap.add_argument("--p4c-include", help="p4c's p4include folder (when p4c is not installed; "
                    "default: p4include of the p4c checkout)")
    ap.add_argument("--lock-hold", type=int, default=LOCK_HOLD, metavar="S",
                    help=f"seconds of runs started per hold of the network lock (default {LOCK_HOLD}, at most 660)")
    ap.add_argument("--only", choices=("runner", "driver", "p4c"), action="append",
                    help="run only these parts for the conformance programs (repeatable)")
    return ap


Case = tuple[Path, list[str]]   # a program and the target arguments its STF test needs


def _select_cases(args: argparse.Namespace, ref: Reference) -> list[Case]:
    """p4c's samples or our conformance programs, narrowed by -k."""
    cases = [(p4, []) for p4 in p4c_samples(ref.p4c)] if args.samples else conformance_programs()
    if args.pattern:
        cases = [(p4, a) for p4, a in cases if any(k in p4.stem for k in args.pattern)]
    return cases


def _select_parts(args: argparse.Namespace) -> set[str]:
    """Which runs to make: p4c's runner, our STF driver, p4c's JSON on the embedded switch."""
    if args.samples:
        return {"runner"}
    parts = set(args.only or ("runner", "driver", "p4c"))
    return parts & {"runner"} if args.switch == "embedded" else parts


@dataclass
class Runs:
    """Every outcome of one check, by the way it was run."""
    on_bmv2: list[Outcome] = field(default_factory=list)           # our JSON, p4c's runner
    on_embedded: list[Outcome] = field(default_factory=list)       # our JSON, p4target stf (samples)
    with_driver: list[Outcome] = field(default_factory=list)       # our JSON, our STF runner on BMv2
    p4c_on_embedded: list[Outcome] = field(default_factory=list)   # p4c's JSON, embedded switch


def _run_runner(args: argparse.Namespace, ref: Reference, build: Path, work: Path,
                cases: list[Case]) -> list[Outcome]:
    """Each program through p4c's runner, a few at a time under the network lock (p4c's samples
    are in the runner's own STF dialect; ours is translated)."""
    outcomes: list[Outcome] = []
    with ThreadPoolExecutor(args.jobs) as pool:
        start = 0
        while start < len(cases):
            with NetworkLock():  # batches of a few programs for up to LOCK_HOLD seconds
                while start < len(cases) and NetworkLock.may_continue():
                    batch = cases[start:start + args.jobs]
                    start += len(batch)
                    done = list(pool.map(lambda case: run_on_bmv2(
                        ref, build, work, case[0], case[0].with_suffix(".stf").read_text(), case[1],
                        translate=not args.samples), batch))
                    outcomes += [_show(args.switch, o, args.verbose) for o in done]
    return outcomes


def _run_driver(args: argparse.Namespace, ref: Reference, work: Path, cases: list[Case]) -> list[Outcome]:
    """Each program on real BMv2 through our own STF runner, one switch at a time."""
    sys.path.insert(0, str(Path(__file__).parent))
    sys.path[:0] = [p for p in ref.env.get("PYTHONPATH", "").split(os.pathsep) if p]
    outcomes: list[Outcome] = []
    pending = list(cases)
    while pending:
        with NetworkLock():  # one switch at a time, for up to LOCK_HOLD seconds per hold
            while pending and NetworkLock.may_continue():
                p4, target_args = pending.pop(0)
                queues = 8 if "--priority-queues" in target_args else 1
                outcomes.append(_show("driver", run_with_our_driver(ref, work, p4, queues), args.verbose))
    return outcomes


def _run_p4c_json(args: argparse.Namespace, ref: Reference, p4c: str, work: Path,
                  cases: list[Case]) -> list[Outcome]:
    """Each program compiled by p4c, its JSON run on the embedded switch."""
    sys.path.insert(0, str(Path(__file__).parent))
    include = args.p4c_include or str(ref.p4c / "p4include")
    outcomes: list[Outcome] = []
    for p4, target_args in cases:
        queues = 8 if "--priority-queues" in target_args else 1
        outcomes.append(_show("p4c-json", run_p4c_json_on_embedded(p4c, [include], work, p4, queues), args.verbose))
    return outcomes


def _run_all(args: argparse.Namespace, ref: Reference, cases: list[Case], parts: set[str],
             p4c: str | None) -> Runs:
    """Make every selected run in one work folder (kept with --keep); Unavailable if p4c's runner
    cannot be set up."""
    runs = Runs()
    with tempfile.TemporaryDirectory(prefix="check-reference-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        build = make_build_dir(work)
        install_cli_adapter(build, ref)
        if args.switch == "embedded":
            install_embedded_switch(build, ref)
        if "runner" in parts:
            runs.on_bmv2 = _run_runner(args, ref, build, work, cases)
        if args.samples:
            runs.on_embedded = [_show("embedded", run_on_embedded(build, p4, p4.with_suffix(".stf")), args.verbose)
                                for p4, _ in cases]
        if "driver" in parts:
            runs.with_driver = _run_driver(args, ref, work, cases)
        if p4c is not None:
            runs.p4c_on_embedded = _run_p4c_json(args, ref, p4c, work, cases)
    return runs


def _summarise(args: argparse.Namespace, runs: Runs, parts: set[str], p4c: str | None) -> bool:
    """Print one count per kind of run; True when every run passed."""
    what = "p4c v1model STF samples" if args.samples else "conformance programs"
    switch_name = "the embedded switch" if args.switch == "embedded" else "real BMv2"
    passed = len(runs.on_bmv2)
    if "runner" in parts:
        passed = _report(f"our compiler's JSON on {switch_name}, p4c's runner ({what})", runs.on_bmv2)
    if args.samples:
        _report(f"our compiler's JSON on the embedded switch, p4target stf ({what})", runs.on_embedded)
        differ = [b.name for b, e in zip(runs.on_bmv2, runs.on_embedded) if b.ok != e.ok]
        if differ:
            print("results differ for: " + " ".join(differ))
    ok = passed == len(runs.on_bmv2)
    if runs.with_driver:
        ok = _report(f"our compiler's JSON on real BMv2, our STF runner ({what})", runs.with_driver) \
            == len(runs.with_driver) and ok
    if p4c is not None:
        ok = _report(f"p4c's JSON ({p4c_version_text(p4c)}) on the embedded switch ({what})", runs.p4c_on_embedded) \
            == len(runs.p4c_on_embedded) and ok
    elif "p4c" in parts:
        print("p4c's JSON on the embedded switch: skipped, no p4c-bm2-ss on PATH (pass --p4c-bm2-ss)")
    return ok


def main(argv: list[str] | None = None) -> int:
    global LOCK_HOLD
    args = _parser().parse_args(argv)
    LOCK_HOLD = max(30, min(660, args.lock_hold))
    try:
        ref = find_reference(args.p4c, args.python)
    except Unavailable as e:
        print(f"check-reference: {e}", file=sys.stderr)
        return 2
    print(f"check-reference: simple_switch {ref.version} ({ref.simple_switch}), runner from {ref.p4c}")
    cases = _select_cases(args, ref)
    if not cases:
        print("check-reference: no programs selected", file=sys.stderr)
        return 2
    parts = _select_parts(args)
    p4c = find_p4c_backend(args.p4c_bm2_ss) if "p4c" in parts else None
    try:
        runs = _run_all(args, ref, cases, parts, p4c)
    except Unavailable as e:
        print(f"check-reference: {e}", file=sys.stderr)
        return 2
    return 0 if _summarise(args, runs, parts, p4c) else 1


def p4c_version_text(exe: str) -> str:
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.split()
    return " ".join(out[1:3]) if len(out) > 2 else exe


if __name__ == "__main__":
    sys.exit(main())
