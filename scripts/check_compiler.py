#!/usr/bin/env python3
"""The gate before a change to the embedded compiler (`p4target/compiler/`) lands: p4c's v1model
STF samples, compiled by our compiler, on the embedded switch and (where the reference BMv2 is
installed) on real BMv2 through p4c's runner, compared sample by sample with the pass list
recorded in `scripts/p4c_samples_record.json`.

It prints every sample whose result differs from the record (a regression: passed there, fails
now; a fix: failed there, passes now) and exits 1 on any regression, 0 otherwise, 2 when p4c's
checkout (for the samples) is missing. `--record` writes this run's results as the new record
(after a fix, or with a new p4c checkout). Not run in CI (CI has no p4c checkout); its
comparison is unit-tested in tests/unit/test_check_compiler.py. See p4target/README.md,
"Before a compiler change lands".
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the project root is not installed
RECORD = Path(__file__).with_name("p4c_samples_record.json")
TARGETS = ("embedded", "bmv2")
SAMPLE_SECONDS = 120  # per sample on the embedded switch (compile + STF)


@dataclass
class Difference:
    """How one target's results differ from its record."""
    regressions: list[str] = field(default_factory=list)  # recorded pass, fails now
    fixes: list[str] = field(default_factory=list)        # recorded fail, passes now
    new: list[str] = field(default_factory=list)          # not in the record
    missing: list[str] = field(default_factory=list)      # in the record, not run now

    def lines(self, target: str) -> list[str]:
        out = [f"  {target}: REGRESSION {name} (passed in the record, fails now)" for name in self.regressions]
        out += [f"  {target}: fixed {name} (failed in the record, passes now)" for name in self.fixes]
        out += [f"  {target}: new sample {name} (not in the record)" for name in self.new]
        out += [f"  {target}: not run {name} (in the record)" for name in self.missing]
        return out


def compare(recorded: dict[str, bool], now: dict[str, bool]) -> Difference:
    """The difference of ``now`` (sample -> passed) against ``recorded`` (the same)."""
    d = Difference()
    for name in sorted(now):
        if name not in recorded:
            d.new.append(name)
        elif recorded[name] and not now[name]:
            d.regressions.append(name)
        elif not recorded[name] and now[name]:
            d.fixes.append(name)
    d.missing = sorted(set(recorded) - set(now))
    return d


def load_record(path: Path) -> dict:
    """The recorded results: ``{"p4c_commit": ..., "targets": {target: {sample: passed}}}``."""
    if not path.exists():
        return {"targets": {}}
    return json.loads(path.read_text())


def record_document(results: dict[str, dict[str, bool]], previous: dict, p4c_commit: str, note: str) -> dict:
    """A record with this run's results for the targets it ran, the previous ones for the rest."""
    targets = dict(previous.get("targets", {}))
    targets.update({t: dict(sorted(r.items())) for t, r in results.items()})
    return {"p4c_commit": p4c_commit or previous.get("p4c_commit", ""), "note": note or previous.get("note", ""),
            "targets": targets}


def summary(target: str, results: dict[str, bool]) -> str:
    failing = sorted(n for n, ok in results.items() if not ok)
    return (f"{target}: {sum(results.values())} of {len(results)} pass"
            + (f" (failing: {', '.join(failing)})" if failing else ""))


# --------------------------------------------------------------------------- runs
def v1model_samples(p4c: Path) -> list[Path]:
    """p4c's v1model samples with an STF test (as `check_reference.py --samples` picks them)."""
    samples = p4c / "testdata" / "p4_16_samples"
    return [p4 for p4 in sorted(samples.glob("*.p4"))
            if p4.is_file() and p4.with_suffix(".stf").is_file() and "v1model.p4" in p4.read_text(errors="replace")]


def _on_embedded(p4: Path) -> tuple[str, bool, str]:
    """One sample compiled by our compiler and run by `p4target stf` (in a worker process)."""
    from p4target.compiler import compile_file
    from p4target.stf.cli import run_stf

    signal.alarm(SAMPLE_SECONDS)  # a sample that hangs fails instead of stopping the gate
    try:
        program = compile_file(str(p4), include_dirs=(str(p4.parent),)).bmv2_json
        stf = p4.with_suffix(".stf")
        result = run_stf(program, stf.read_text(), str(stf))
    except BaseException as e:  # noqa: BLE001  (a compile or load error is this sample's failure)
        return p4.stem, False, f"{type(e).__name__}: {e}".splitlines()[0][:160]
    finally:
        signal.alarm(0)
    first = next((line.strip() for line in result.lines if "FAIL" in line), "")
    return p4.stem, result.ok, first[:160]


def run_embedded(samples: list[Path], jobs: int) -> dict[str, bool]:
    results: dict[str, bool] = {}
    with ProcessPoolExecutor(jobs) as pool:
        for name, ok, detail in pool.map(_on_embedded, samples):
            results[name] = ok
            if not ok:
                print(f"  embedded FAIL {name}: {detail}", flush=True)
    return results


def run_bmv2(samples: list[Path], p4c: Path, python: str | None, jobs: int) -> dict[str, bool] | None:
    """Our JSON of each sample on real BMv2 through p4c's runner (check_reference's machinery),
    or None when the reference BMv2 is not installed here."""
    sys.path.insert(0, str(Path(__file__).parent))
    import check_reference as ref_mod

    try:
        ref = ref_mod.find_reference(str(p4c), python)
    except ref_mod.Unavailable as e:
        print(f"check-compiler: real BMv2 skipped: {e}")
        return None
    print(f"check-compiler: real BMv2 {ref.version} ({ref.simple_switch})", flush=True)
    from concurrent.futures import ThreadPoolExecutor
    with tempfile.TemporaryDirectory(prefix="check-compiler-") as tmp:
        work = Path(tmp)
        build = ref_mod.make_build_dir(work)
        ref_mod.install_cli_adapter(build, ref)

        def run(batch_samples: list[Path], n: int, quiet: bool) -> dict[str, bool]:
            out: dict[str, bool] = {}
            with ThreadPoolExecutor(n) as pool:
                start = 0
                while start < len(batch_samples):
                    with ref_mod.NetworkLock():
                        while start < len(batch_samples) and ref_mod.NetworkLock.may_continue():
                            batch = batch_samples[start:start + n]
                            start += len(batch)
                            for o in pool.map(lambda p4: ref_mod.run_on_bmv2(
                                    ref, build, work, p4, p4.with_suffix(".stf").read_text(), [],
                                    translate=False), batch):
                                out[o.name] = o.ok
                                if not o.ok and not quiet:
                                    print(f"  bmv2 FAIL {o.name}: {o.detail}", flush=True)
            return out

        results = run(samples, jobs, quiet=True)
        # p4c's runner sends a test's packets at once and waits on timers: on a loaded machine a
        # sample can fail that passes alone, so each failing one gets a second run by itself
        failed = [p for p in samples if not results[p.stem]]
        if failed:
            print(f"check-compiler: {len(failed)} failed on real BMv2, each run again alone", flush=True)
            again = run(failed, 1, quiet=False)
            for name, ok in again.items():
                if ok:
                    print(f"  bmv2 passed on its second run: {name}", flush=True)
                results[name] = ok
    return results


def p4c_commit(p4c: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(p4c), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=30).stdout.strip()
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--p4c", help="p4c source checkout (default $P4C_SRC or /opt/p4ref/src/p4c)")
    ap.add_argument("--python", help="Python with ptf, scapy, ply and thrift for p4c's runner")
    ap.add_argument("--only", choices=TARGETS, action="append", help="run only this target (repeatable)")
    ap.add_argument("-k", dest="pattern", action="append", help="only samples whose name contains this")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="samples at once (default 2)")
    ap.add_argument("--record", action="store_true", help="write this run's results as the new record")
    ap.add_argument("--record-file", default=str(RECORD), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    p4c = Path(args.p4c or os.environ.get("P4C_SRC") or "/opt/p4ref/src/p4c")
    samples = v1model_samples(p4c)
    if not samples:
        print(f"check-compiler: no p4c checkout with testdata/p4_16_samples at {p4c} "
              "(pass --p4c DIR or set P4C_SRC)", file=sys.stderr)
        return 2
    if args.pattern:
        samples = [p for p in samples if any(k in p.stem for k in args.pattern)]
    targets = args.only or list(TARGETS)
    print(f"check-compiler: {len(samples)} v1model STF samples from {p4c} (p4c {p4c_commit(p4c) or '?'})",
          flush=True)
    results: dict[str, dict[str, bool]] = {}
    if "embedded" in targets:
        results["embedded"] = run_embedded(samples, args.jobs)
    if "bmv2" in targets:
        bmv2 = run_bmv2(samples, p4c, args.python, max(args.jobs, 1))
        if bmv2 is not None:
            results["bmv2"] = bmv2
    record_path = Path(args.record_file)
    record = load_record(record_path)
    regressed = False
    print("check-compiler: against the record " + str(record_path.relative_to(ROOT) if record_path.is_relative_to(ROOT)
                                                   else record_path))
    for target, now in results.items():
        print(summary(target, now))
        recorded = record.get("targets", {}).get(target)
        if recorded is None:
            print(f"  {target}: nothing recorded yet")
            continue
        if args.pattern:  # a partial run: compare only what ran
            recorded = {n: ok for n, ok in recorded.items() if n in now}
        diff = compare(recorded, now)
        lines = diff.lines(target)
        print("\n".join(lines) if lines else f"  {target}: as recorded "
              f"({sum(recorded.values())} of {len(recorded)} pass)")
        regressed = regressed or bool(diff.regressions)
    if args.record:
        if args.pattern:
            print("check-compiler: --record needs a full run (no -k)", file=sys.stderr)
            return 2
        note = "; ".join(summary(t, r) for t, r in results.items())
        record_path.write_text(json.dumps(record_document(results, record, p4c_commit(p4c), note), indent=1) + "\n")
        print(f"check-compiler: recorded in {record_path}")
    return 1 if regressed else 0


if __name__ == "__main__":
    sys.exit(main())
