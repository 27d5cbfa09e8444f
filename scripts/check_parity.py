#!/usr/bin/env python3
"""The same runs on p4c + real BMv2 and on the embedded target, and a table of what must agree.

Not part of CI (`make check-reference` runs it after the STF checks): it needs the locally built
`p4c-bm2-ss` and `simple_switch_grpc` (in `--prefix`, default /opt/p4ref, with their libraries
in `<prefix>/lib`), root and Mininet. Two runs per target, each under /tmp/gradlane-net.lock:
`python -m topo.run --demo` (20 rounds, incast, the default policy) and one `--quick` run of the
`ltp_incast` experiment with its bottleneck lowered to `--bottleneck-pps` (default 1000), so that
BMv2's default build is not the bottleneck (its 3000 pps is most of what BMv2 forwards; the
harness refuses it). Each target compiles p4src/gradlane.p4 with its own compiler. The switches
log at the default level (warn).

Figures and the tolerance within which they must agree (timing differs between switches, so
packet counts may too; the learning and the policy may not):
rounds and policy epochs equal; bound violations equal; accuracy within ACCURACY_TOL; per-layer
mean delivered fraction within DELIVERED_TOL; per switch, the packets its gradient queues sent
within SENT_REL_TOL (relative). Reported beside them, not compared: the gradient packets each
switch saw at ingress and dropped selectively, which at the incast switch count what the switch
could take in from unpaced senders (a faster switch takes in more and tail-drops more; BMv2's
kernel socket drops them before ingress), and wall times and log sizes. Exit 0 when all agree.
`--table-only` tables a kept `--work` folder again without running anything.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOCK = "/tmp/gradlane-net.lock"
ACCURACY_TOL = 0.01
DELIVERED_TOL = 0.02
SENT_REL_TOL = 0.15
TIMEOUT = 900


def target_env(target: str, prefix: Path) -> dict[str, str]:
    """The environment of a run on `target` ("embedded" or "bmv2"), the switch log at its default."""
    env = {k: v for k, v in os.environ.items() if k not in ("SWITCH_LOG", "P4C", "SWITCH")}
    if target == "embedded":
        env["P4C"] = f"{sys.executable} -m p4target compile"
        env["SWITCH"] = f"{sys.executable} -m p4target switch"
    else:
        env["P4C"] = str(prefix / "bin" / "p4c-bm2-ss")
        env["SWITCH"] = str(prefix / "bin" / "simple_switch_grpc")
        env["PATH"] = f"{prefix / 'bin'}:{env.get('PATH', '')}"
        env["LD_LIBRARY_PATH"] = f"{prefix / 'lib'}:{env.get('LD_LIBRARY_PATH', '')}".rstrip(":")
    return env


def compile_program(env: dict[str, str], build: Path) -> None:
    build.mkdir(parents=True, exist_ok=True)
    argv = [*env["P4C"].split(), "--arch", "v1model", "--p4v", "16", "-I", str(ROOT / "p4src"),
            "--p4runtime-files", str(build / "gradlane.p4info.txtpb"), "-o", str(build / "gradlane.json"),
            str(ROOT / "p4src" / "gradlane.p4")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"check-parity: {argv[0]} failed: {done.stderr.strip()[-400:]}")


def locked(argv: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `argv` under the network lock; (result, seconds it ran once it held the lock)."""
    marker = tempfile.NamedTemporaryFile(delete=False)
    marker.close()
    # the time limit starts once the lock is held (others' runs may hold it for long)
    wrapped = ["flock", LOCK, "sh", "-c", f'date +%s.%N > "{marker.name}"; exec timeout {TIMEOUT} "$@"', "_", *argv]
    done = subprocess.run(wrapped, cwd=ROOT, env=env, capture_output=True, text=True)
    started = float(Path(marker.name).read_text() or time.time())
    os.unlink(marker.name)
    return done, time.time() - started


def parse_demo(text: str) -> dict[str, Any]:
    """The figures of a demo's summary text."""
    out: dict[str, Any] = {}
    if m := re.search(r"training: \w+ in [\d.]+ s, (\d+) round", text):
        out["rounds"] = int(m.group(1))
    m = re.search(r"(\d+) round\(s\) closed by the deadline", text)
    out["deadline-closed rounds"] = int(m.group(1)) if m else 0
    if m := re.search(r"bound violations: (\d+)", text):
        out["bound violations"] = int(m.group(1))
    if m := re.search(r"accuracy: ([\d.]+)", text):
        out["accuracy"] = float(m.group(1))
    if m := re.search(r"loss bounds: (.*)", text):
        out["policy epochs"] = " ".join(f"{e}@{r}" for e, r in re.findall(r"epoch (\d+) from round (\d+)", m.group(1)))
    for layer, mean in re.findall(r"^  layer (\d+): \S+ / \S+ / ([\d.]+)", text, re.M):
        out[f"layer {layer} delivered (mean)"] = float(mean)
    for sw, seen, dropped in re.findall(r"^  (s\d+) job \d+ [^:]*: seen (\d+), dropped (\d+)", text, re.M):
        out[f"{sw} gradient packets seen at ingress"] = int(seen)
        out[f"{sw} selectively dropped"] = int(dropped)
    for sw, tx in re.findall(r"^  (s\d+) port \d+ queue \d+: tx (\d+)", text, re.M):
        out[f"{sw} packets sent (gradient queues)"] = out.get(f"{sw} packets sent (gradient queues)", 0) + int(tx)
    return out


def run_demo(env: dict[str, str], build: Path, logs: Path) -> tuple[dict[str, Any], str]:
    done, wall = locked([sys.executable, "-m", "topo.run", "--demo", "--build", str(build), "--log-dir", str(logs)], env)
    figures = parse_demo(done.stdout)
    figures["exit code"] = done.returncode
    figures["wall time s"] = round(wall, 1)
    # stdout and log lines, rotated ones too (BMv2 writes its log lines to s1.log.txt)
    figures["switch log bytes"] = sum(p.stat().st_size for p in logs.glob("s*.log*") if p.suffix != ".json")
    return figures, done.stdout + done.stderr


def run_experiment(env: dict[str, str], build: Path, logs: Path, out: Path, bottleneck: float) -> dict[str, Any]:
    config = out / "ltp_incast.yaml"
    out.mkdir(parents=True, exist_ok=True)
    text = (ROOT / "experiments" / "configs" / "ltp_incast.yaml").read_text()
    config.write_text(re.sub(r"(?m)^(\s+bottleneck_pps:).*$", rf"\g<1> {bottleneck:g}", text, count=1))
    done, wall = locked([sys.executable, "-m", "experiments", "ltp_incast", "--quick", "--config", str(config),
                         "--out", str(out), "--build", str(build), "--log-dir", str(logs)], env)
    (out / "experiment.out").write_text(done.stdout + done.stderr)
    return {"experiment exit code": done.returncode, "experiment wall time s": round(wall, 1), **experiment_figures(out)}


def experiment_figures(out: Path) -> dict[str, Any]:
    """Per arm of the experiment's runs.jsonl in `out`: rounds, violations, accuracy."""
    figures: dict[str, Any] = {}
    runs_files = list(out.glob("ltp_incast/*/runs.jsonl"))
    if not runs_files:
        figures["experiment error"] = "no runs.jsonl (see experiment.out)"
        return figures
    for line in runs_files[0].read_text().splitlines():
        run = json.loads(line)
        m, arm = run.get("metrics") or {}, run["arm"]
        figures[f"{arm}: rounds"] = m.get("rounds")
        figures[f"{arm}: bound violations"] = m.get("violations")
        if m.get("final_accuracy") is not None:
            figures[f"{arm}: accuracy"] = round(m["final_accuracy"], 4)
    return figures


def agree(name: str, a: Any, b: Any) -> tuple[bool | None, str]:
    """(whether `a` and `b` agree, the tolerance) for figure `name`; None: not compared."""
    # reported, not compared: timing; and what arrives at the bottleneck switch, which is what
    # each switch can take in from unpaced senders (the kernel drops the rest before ingress)
    if any(key in name for key in ("wall time", "log bytes", "deadline-closed", "at ingress", "selectively")):
        return None, "reported"
    if a is None or b is None:
        return a == b, "equal"
    if name.endswith("accuracy"):
        return abs(a - b) <= ACCURACY_TOL, f"±{ACCURACY_TOL}"
    if "delivered" in name:
        return abs(a - b) <= DELIVERED_TOL, f"±{DELIVERED_TOL}"
    if name.endswith("packets sent (gradient queues)"):
        return abs(a - b) <= SENT_REL_TOL * max(a, b), f"±{SENT_REL_TOL:.0%}"
    return a == b, "equal"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if value < 10 else f"{value:.1f}"
    return "–" if value is None else str(value)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", default=os.environ.get("P4REF_PREFIX", "/opt/p4ref"),
                    help="where p4c-bm2-ss and simple_switch_grpc are installed (bin/, lib/)")
    ap.add_argument("--bottleneck-pps", type=float, default=1000.0, help="the experiment's bottleneck (default 1000)")
    ap.add_argument("--work", metavar="DIR", help="keep builds, logs and results in DIR (default: a temporary one)")
    ap.add_argument("--table-only", action="store_true", help="table the kept --work folder again, run nothing")
    args = ap.parse_args()
    if args.table_only and not args.work:
        ap.error("--table-only needs --work DIR")
    prefix = Path(args.prefix)
    missing = [str(prefix / "bin" / t) for t in ("p4c-bm2-ss", "simple_switch_grpc") if not os.access(prefix / "bin" / t, os.X_OK)]
    if missing:
        print(f"check-parity: not run: {', '.join(missing)} missing (p4target/README.md, 'Checking against the real BMv2')")
        return 1
    if os.geteuid() != 0:
        print("check-parity: not run: needs root (Mininet)")
        return 1
    work = Path(args.work or tempfile.mkdtemp(prefix="gradlane-parity-"))
    results: dict[str, dict[str, Any]] = {}
    if args.table_only:
        for target in ("embedded", "bmv2"):
            kept = work / target / "figures.json"
            results[target] = json.loads(kept.read_text()) if kept.is_file() else {}
            results[target].update(parse_demo((work / target / "demo.out").read_text()))
            results[target].update(experiment_figures(work / target / "results"))
        return table(results, work)
    for target in ("embedded", "bmv2"):
        env = target_env(target, prefix)
        build = work / target / "build"
        compile_program(env, build)
        print(f"check-parity: {target}: demo ...", flush=True)
        demo, text = run_demo(env, build, work / target / "demo-logs")
        (work / target / "demo.out").write_text(text)
        print(f"check-parity: {target}: ltp_incast --quick (bottleneck {args.bottleneck_pps:g} pps) ...", flush=True)
        results[target] = {**demo, **run_experiment(env, build, work / target / "exp-logs", work / target / "results",
                                                    args.bottleneck_pps)}
        (work / target / "figures.json").write_text(json.dumps(results[target], indent=1))
    return table(results, work)


def table(results: dict[str, dict[str, Any]], work: Path) -> int:
    """Print the table; 0 when every compared figure agrees."""
    names = list(dict.fromkeys([*results["embedded"], *results["bmv2"]]))
    print("\n| figure | embedded | p4c + BMv2 | tolerance | agree |\n|---|---|---|---|---|")
    failed = []
    for name in names:
        a, b = results["embedded"].get(name), results["bmv2"].get(name)
        ok, tol = agree(name, a, b)
        print(f"| {name} | {_fmt(a)} | {_fmt(b)} | {tol} | {'' if ok is None else 'yes' if ok else 'NO'} |")
        if ok is False:
            failed.append(name)
    print(f"\nwork folder: {work}")
    print("check-parity: " + (f"{len(failed)} figure(s) disagree: {', '.join(failed)}" if failed else "all figures agree"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
