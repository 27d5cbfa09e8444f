"""The switch an experiment runs on, and whether it can carry the load the experiment offers.

A software switch forwards a program at some highest loss-free rate: on this kind of machine
3.5 to 5 kpps for gradlane.json on BMv2's default build and 24 to 35 kpps on the embedded switch
(measured as the machine's load allowed). An arm whose bottleneck queue drains at a rate close to it measures the switch's CPU,
not the queue under study. Before the first arm runs, the harness asks `profile()` for the
switch in use (`$SWITCH`: which build) and that rate for the loaded program: looked up in
this machine's cache (`~/.cache/gradlane/switch_capacity.json`, keyed by the build and the
program's digest), measured by `benchmarks/switch_throughput.py` when absent (root, under a
minute) and written there. `verdict()` then refuses a bottleneck of
`REFUSE_SHARE` of the rate or more and flags one of `FLAG_SHARE` or more, or none at all.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from experiments.errors import ExperimentError
from topo.toolchain import BUILD_NAMES, Tool, switch_build, switch_tool

def cache_path() -> Path:
    """This machine's measured rates (`$XDG_CACHE_HOME`, else ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gradlane" / "switch_capacity.json"


BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "switch_throughput.py"
# shares of the loss-free rate: the switch also carries the traffic queued up behind the
# bottleneck, the reverse path and a second switch on the same cores
REFUSE_SHARE = 0.8
FLAG_SHARE = 0.4


@dataclass(frozen=True)
class SwitchProfile:
    """The switch in use and its measured loss-free rate for the loaded program."""

    build: str  # topo.toolchain.switch_build(): embedded, bmv2-default, bmv2-performance, unknown
    command: str
    loss_free_pps: float | None  # None: not known (a switch we cannot measure)
    source: str  # where the rate comes from

    def describe(self) -> str:
        """One line for the run's output and summary.md."""
        rate = (f"loss-free rate {self.loss_free_pps / 1000:.1f} kpps for this program ({self.source})"
                if self.loss_free_pps else f"loss-free rate unknown ({self.source})")
        return f"switch: {BUILD_NAMES[self.build]}; {rate}"


def _program_key(build: str, json_path: Path) -> str:
    digest = hashlib.sha256(json_path.read_bytes()).hexdigest()[:16]
    return f"{build}:{json_path.name}:{digest}"


def _simple_switch_of(tool: Tool) -> str:
    """The Thrift-only simple_switch beside simple_switch_grpc (the benchmark programs it by CLI)."""
    path = tool.argv[0]
    sibling = os.path.join(os.path.dirname(path), "simple_switch")
    return sibling if os.access(sibling, os.X_OK) else path


def measure(tool: Tool, build: str, json_path: Path) -> float:
    """The switch's zero-loss rate for `json_path`, by the throughput benchmark (needs root)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        argv = [sys.executable, str(BENCHMARK), "--programs", "gradlane", "--no-forwarder", "--probes", "100",
                "--duration", "1", "--gradlane-json", str(json_path), "--json-out", out]
        argv += (["--no-simple-switch"] if build == "embedded"
                 else ["--no-embedded", "--simple-switch", _simple_switch_of(tool)])
        done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
        try:
            rows = json.loads(Path(out).read_text())
        except (OSError, ValueError):
            raise ExperimentError(f"could not measure the switch's loss-free rate: "
                                  f"{(done.stdout + done.stderr).strip()[-300:]}") from None
    label = "embedded" if build == "embedded" else "simple_switch"
    rates = [r["zero_loss_pps"] for r in rows if r["switch"].startswith(label)
             and r["zero_loss_pps"] == r["zero_loss_pps"]]  # not NaN
    if not rates:
        raise ExperimentError("could not measure the switch's loss-free rate: the benchmark found none")
    return max(rates)


def profile(build_dir: str, out: Callable[[str], None] = print) -> SwitchProfile:
    """The switch in use and its loss-free rate for `<build_dir>/gradlane.json` (cached)."""
    tool = switch_tool()
    build = switch_build(tool)
    json_path = Path(build_dir) / "gradlane.json"
    if build == "unknown" or not json_path.is_file():
        return SwitchProfile(build, tool.describe(), None, "not measured: a switch of unknown kind")
    cache = cache_path()
    key = _program_key(build, json_path)
    try:
        known = json.loads(cache.read_text())
    except (OSError, ValueError):
        known = {}
    if key in known:
        entry = known[key]
        return SwitchProfile(build, tool.describe(), float(entry["loss_free_pps"]),
                             f"measured {entry['measured']}, {cache}")
    out(f"switch capacity: measuring {BUILD_NAMES[build]} on {json_path} (under a minute; cached in {cache}) ...")
    try:
        pps = measure(tool, build, json_path)
    except ExperimentError as exc:  # flagged (unknown rate), not refused: the runs may still be fine
        return SwitchProfile(build, tool.describe(), None, f"not measured: {exc}")
    known[key] = {"loss_free_pps": round(pps), "measured": time.strftime("%Y-%m-%d %H:%M"), "switch": tool.describe()}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(known, indent=1) + "\n")
    return SwitchProfile(build, tool.describe(), pps, f"measured now, cached in {cache}")


def verdict(prof: SwitchProfile, bottleneck_pps: float | None) -> tuple[str, str]:
    """("ok" | "flag" | "refuse", why) for an arm whose bottleneck drains at `bottleneck_pps`."""
    if prof.loss_free_pps is None:
        return "flag", "the switch's loss-free rate is unknown: its CPU may be the bottleneck"
    if bottleneck_pps is None:
        return "flag", (f"no bottleneck rate: the switch's CPU (about {prof.loss_free_pps:.0f} pps loss-free) "
                        "is the bottleneck")
    share = bottleneck_pps / prof.loss_free_pps
    text = (f"bottleneck {bottleneck_pps:g} pps is {share:.0%} of the switch's loss-free rate "
            f"{prof.loss_free_pps:.0f} pps")
    if share >= REFUSE_SHARE:
        return "refuse", text + f" (>= {REFUSE_SHARE:.0%}): the switch's CPU, not the queue, would be the bottleneck"
    if share >= FLAG_SHARE:
        return "flag", text + f" (>= {FLAG_SHARE:.0%}): bursts into the queue may exceed what the switch forwards"
    return "ok", text


RECORD_NAME = "switch.json"


def check_plan(topologies: list, build_dir: str, results_dir: Path,
               out: Callable[[str], None] = print) -> SwitchProfile:
    """Before the first arm: the switch's profile (also written to `results_dir/switch.json` for
    the summary), a loud line per flagged topology; ExperimentError when one is refused."""
    prof = profile(build_dir, out)
    out(prof.describe())
    flagged, refused = [], []
    for topo in {t.bottleneck_pps: t for t in topologies}.values():
        kind, why = verdict(prof, topo.bottleneck_pps)
        if kind == "refuse":
            refused.append(why)
        elif kind == "flag":
            flagged.append(why)
            out(f"WARNING: SWITCH CPU MAY BE THE BOTTLENECK: {why}")
    record = {"build": prof.build, "name": BUILD_NAMES[prof.build], "command": prof.command,
              "loss_free_pps": prof.loss_free_pps, "source": prof.source, "flags": flagged, "refused": refused}
    (Path(results_dir) / RECORD_NAME).write_text(json.dumps(record, indent=1) + "\n")
    if refused:
        raise ExperimentError(f"refused: {refused[0]}; lower bottleneck_pps, or run on a faster switch "
                              "(the embedded one, or BMv2's performance build)")
    return prof


def summary_lines(results_dir: Path) -> list[str]:
    """The summary's lines on the switch the runs used, then a blank line (none when not recorded)."""
    try:
        rec = json.loads((Path(results_dir) / RECORD_NAME).read_text())
    except (OSError, ValueError):
        return []
    rate = f"{rec['loss_free_pps'] / 1000:.1f} kpps" if rec.get("loss_free_pps") else "unknown"
    lines = [f"Switch: {rec['name']} (`{rec['command']}`); loss-free rate for the loaded program {rate} "
             f"({rec['source']})."]
    lines += [f"**Flagged: {why}.**" for why in rec.get("flags", [])]
    return [*lines, ""]
