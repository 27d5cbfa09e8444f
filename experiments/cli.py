"""Command line of `python -m experiments` (`make experiment NAME=...`, `make experiments`)."""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import experiments
from experiments import config as configs
from experiments import report
from experiments.errors import ExperimentError
from experiments.records import ResultsDir
from sim.errors import SimError
from topo.errors import TopoError

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _listing() -> str:
    lines = []
    for name in experiments.names():
        module = experiments.get(name)
        lines.append(f"  {name:<18} {getattr(module, 'TITLE', '')}")
    return "\n".join(lines) or "  (none registered)"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m experiments", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run gradlane's experiments: each paper's headline figures reproduced in "
                    "emulation (root; under /tmp/gradlane-net.lock on a shared machine).",
        epilog="experiments:\n" + _listing() + "\n\nresults go to OUT/NAME/<timestamp>/ (config.yaml, "
               "rounds.jsonl, runs.jsonl, summary.md, *.png); `make stop` ends an interrupted run.")
    p.add_argument("name", nargs="?", help="experiment to run, or 'all'")
    p.add_argument("--list", action="store_true", help="list the experiments and exit")
    p.add_argument("--quick", action="store_true", help="smoke run (the config's quick: overrides), ~1-2 min")
    p.add_argument("--reps", type=int, metavar="N", help="repetitions per arm (default: the config's)")
    p.add_argument("--arms", metavar="A,B", help="run only these arms of the config (comma-separated names)")
    p.add_argument("--config", metavar="FILE", help="config file (default experiments/configs/NAME.yaml)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="settings",
                   help="override one config key (dotted, e.g. topology.loss_pct=1 or rounds=6; the "
                        "value is read as YAML); repeatable, recorded in the summary's command")
    p.add_argument("--resume", metavar="DIR", help="continue an interrupted run in DIR (its saved config)")
    p.add_argument("--out", default="results", metavar="DIR", help="results root (default results)")
    p.add_argument("--publish", action="store_true",
                   help="copy summary.md and the plots to docs/results/NAME/ (NAME-ns3/ when simulated)")
    p.add_argument("--report-only", metavar="DIR", help="rewrite summary.md and plots of DIR, run nothing")
    p.add_argument("--build", default="build", help="folder with gradlane.json and its P4Info")
    p.add_argument("--log-dir", default="logs", help="switch/agent logs and run record (default logs)")
    p.add_argument("--backend", choices=("emulation", "ns3"), default="emulation",
                   help="emulation (Mininet, default) or ns3 (simulated; docs/ns3.md says which arms)")
    return p


def _load_config(name: str, args: argparse.Namespace) -> configs.ExperimentConfig:
    overrides = {}
    if args.reps is not None:
        if args.reps < 1:
            raise ExperimentError("--reps must be at least 1")
        overrides["repetitions"] = args.reps
    if args.arms is not None:
        overrides["only_arms"] = [a.strip() for a in args.arms.split(",") if a.strip()]
        if not overrides["only_arms"]:
            raise ExperimentError("--arms names no arm")
    settings = list(args.settings or [])
    if settings:
        overrides = configs.merge_overrides(overrides, configs.parse_settings(settings))
    path = Path(args.config) if args.config else configs.default_path(name)
    if args.backend == "ns3" and not args.config:
        from experiments.backends.ns3 import harness  # noqa: PLC0415 (ns-3 only when asked for)
        simulation = harness.simulation(name)
        if simulation is not None and simulation.config:
            path = harness.REPO / simulation.config
    cfg = configs.load(path, quick=args.quick, overrides=overrides)
    if args.arms is not None:     # recorded, so that the summary's command names them
        cfg = replace(cfg, params={**cfg.params, "arms_selected": overrides["only_arms"]})
    if settings:
        cfg = replace(cfg, params={**cfg.params, "cli_settings": settings})
    if cfg.name != name:
        raise ExperimentError(f"{path}: name '{cfg.name}' is not experiment '{name}'")
    module = experiments.get(name)
    if args.backend == "ns3":
        from experiments.backends.ns3 import harness  # noqa: PLC0415 (ns-3 only when asked for)
        return harness.setup(cfg)
    setup = getattr(module, "setup", None)
    return setup(cfg) if setup else cfg


def run_one(name: str, args: argparse.Namespace) -> int:
    """Run (or resume) one experiment, write its summary and plots; the exit code."""
    module = experiments.get(name)
    if args.report_only:
        rd = ResultsDir.existing(args.report_only)
        cfg = configs.load_saved(rd.config_path)
    elif args.resume:
        rd = ResultsDir.existing(args.resume)
        cfg = configs.load_saved(rd.config_path)
        if cfg.name != name:
            raise ExperimentError(f"{args.resume} holds experiment '{cfg.name}', not '{name}'")
        print(f"[{name}] resuming {rd.path} ({len(rd.completed())} run(s) already recorded)", flush=True)
    else:
        cfg = _load_config(name, args)
        rd = ResultsDir.create(args.out, cfg.label)
        configs.save(cfg, rd.config_path)
    simulated = cfg.params.get("backend") == "ns3"
    reported: Any = module          # what the summary and plots are made by
    if simulated:
        from experiments.backends.ns3 import harness  # noqa: PLC0415 (ns-3 only when asked for)
        simulation = harness.simulation(name)
        if simulation is None:
            raise ExperimentError(f"experiment {name} is not simulated yet")
        reported = harness.SimulatedReport(module, simulation)
    if not args.report_only:
        try:
            if simulated:
                harness.run(cfg, rd)
            else:
                from experiments.backends.emulation import Runner  # noqa: PLC0415 (Mininet only when emulating)
                Runner(module, cfg, rd, build_dir=args.build, log_dir=args.log_dir).run()
        except KeyboardInterrupt:
            return EXIT_INTERRUPTED
    summary_path, plots = report.finish(reported, cfg, rd)
    print(f"[{name}] summary: {summary_path}; plots: {', '.join(p.name for p in plots) or 'none'}", flush=True)
    print(summary_path.read_text(), flush=True)
    if args.publish:
        dest = report.publish(f"{cfg.label}-ns3" if simulated else cfg.label, rd, plots)
        print(f"[{name}] published to {dest}/", flush=True)
    results = rd.load()
    if not any(r.get("ok") for r in results.runs):
        print(f"[{name}] error: no run finished", file=sys.stderr)
        return EXIT_FAILED
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        if args.list:
            print(_listing())
            return 0
        if not args.name:
            _parser().print_usage(sys.stderr)
            print("python -m experiments: error: name an experiment (or 'all'; --list shows them)", file=sys.stderr)
            return EXIT_USAGE
        if args.name == "all":
            if args.config or args.resume or args.report_only:
                raise ExperimentError("--config, --resume and --report-only name one experiment, not 'all'")
            worst = 0
            names = experiments.names()
            if args.backend == "ns3":
                from experiments.backends.ns3 import harness  # noqa: PLC0415
                names = harness.simulated_names()
            for name in names:
                code = run_one(name, args)
                if code == EXIT_INTERRUPTED:
                    return code
                worst = max(worst, code)
            return worst
        return run_one(args.name, args)
    except (ExperimentError, TopoError, SimError) as exc:
        print(f"python -m experiments: error: {exc}", file=sys.stderr)
        return EXIT_FAILED if not isinstance(exc, configs.ConfigError) else EXIT_USAGE
