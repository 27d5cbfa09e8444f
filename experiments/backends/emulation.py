"""The shared runner: every repetition of every arm on a `topo.session.RunSession`.

Arms alternate within a run (for rep: for arm: ...), so machine noise hits them alike. The
network is (re)started only when an arm needs other topology settings than the running one;
between arms only the job settings (transport, congestion control, ECN, agent flags) change.
Each finished run is written at once with its conditions; `--resume DIR` skips those already
in DIR. The session records every process in logs/run.pids.json, so `make stop` ends an
interrupted run (this process included) and removes its interfaces.
"""
from __future__ import annotations

import signal
import time
from dataclasses import replace
from types import FrameType, ModuleType
from typing import Any, Callable

from experiments import conditions, switch_capacity
from experiments.api import ArmContext, ArmResult
from experiments.config import Arm, ExperimentConfig, TopologySettings
from experiments.errors import ExperimentError
from experiments.records import Results, ResultsDir
from topo.errors import TopoError
from topo.session import RunConfig, RunSession
from topo.topologies import TopoParams


def session_config(cfg: ExperimentConfig, topo: TopologySettings, build_dir: str, log_dir: str) -> RunConfig:
    """The RunConfig of a network with these topology settings (job settings come per arm)."""
    params = TopoParams(workers=topo.workers, background=topo.background, bottleneck_pps=topo.bottleneck_pps,
                        queue_depth=topo.queue_depth, delay_ms=topo.delay_ms, loss_pct=topo.loss_pct,
                        bw_mbps=topo.bw_mbps, log_dir=log_dir)
    return RunConfig(topo_name=topo.name, build_dir=build_dir, log_dir=log_dir, params=params,
                     policy=topo.policy, bursts=tuple(topo.bursts), rounds=cfg.rounds)


def job_settings(run_config: RunConfig, cfg: ExperimentConfig, arm: Arm, seed: int) -> RunConfig:
    """`run_config` with the arm's job settings: transport, pacing, ECN, and the agent flags
    common to PS and workers (seed, packet size, the config's and the arm's flags, TCP CC)."""
    args: list[str] = ["--seed", str(seed)]
    if cfg.chunk_elems is not None:
        args += ["--chunk-elems", str(cfg.chunk_elems)]
    args += [*cfg.agent_args, *arm.agent_args]
    if arm.tcp_cc:
        args += ["--tcp-cc", arm.tcp_cc]
    return replace(run_config, transport=arm.transport, pace=arm.pace, tcp_ecn=arm.tcp_ecn,
                   agent_args=tuple(args), rounds=cfg.rounds_of(arm))


def _fmt_s(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


class Runner:
    """Runs one experiment module with one config into one results directory."""

    def __init__(self, module: ModuleType, config: ExperimentConfig, results: ResultsDir,
                 build_dir: str = "build", log_dir: str = "logs",
                 out: Callable[[str], None] = lambda s: print(s, flush=True)) -> None:
        self.module = module
        self.config = config
        self.results = results
        self.build_dir = build_dir
        self.log_dir = log_dir
        self.out = out
        self.session: RunSession | None = None
        self._network: TopologySettings | None = None
        self._started = 0.0
        self._durations: list[float] = []
        self._todo = 0

    # -- plan ---------------------------------------------------------------------------------
    def plan(self) -> list[tuple[int, Arm]]:
        """(rep, arm) in run order, without those already recorded."""
        done = self.results.completed()
        return [(rep, arm) for rep in range(self.config.repetitions) for arm in self.config.arms
                if rep < self.config.repetitions_of(arm) and (arm.name, rep) not in done]

    # -- run ----------------------------------------------------------------------------------
    def run(self) -> Results:
        """Run every planned repetition; returns everything recorded in the directory."""
        name = self.config.name
        todo = self.plan()
        self._todo = len(todo)
        self._started = time.monotonic()
        total = sum(self.config.repetitions_of(a) for a in self.config.arms)
        self.out(f"[{name}] {len(todo)} run(s) to do of {total} ({len(self.config.arms)} arm(s) x "
                 f"{self.config.repetitions} repetition(s)); results in {self.results.path}")
        if todo:  # refuses a config that would measure the switch's CPU instead of the queue
            switch_capacity.check_plan([self.config.topology_of(a) for _, a in todo], self.build_dir,
                                       self.results.path, self.out)
        old = {s: signal.signal(s, _raise_exit) for s in (signal.SIGTERM, signal.SIGHUP)}
        self.results.set_state("running", todo=len(todo), total=total)
        status = "interrupted"
        try:
            for index, (rep, arm) in enumerate(todo):
                self._run_one(index, rep, arm)
            status = "done"
        except KeyboardInterrupt:
            self.out(f"[{name}] interrupted; resume with --resume {self.results.path}")
        except SystemExit:
            self.out(f"[{name}] stopped by a signal; resume with --resume {self.results.path}")
            raise
        except BaseException:
            status = "failed"
            raise
        finally:
            self.results.set_state(status, remaining=len(self.plan()))
            self._stop_network()
            for sig, handler in old.items():
                signal.signal(sig, handler)
        if status != "done":
            raise KeyboardInterrupt
        return self.results.load()

    def _run_one(self, index: int, rep: int, arm: Arm) -> None:
        cfg = self.config
        tag = f"[{cfg.name}] run {index + 1}/{self._todo} arm {arm.name} rep {rep + 1}/{cfg.repetitions_of(arm)}"

        def progress(text: str) -> None:
            self.out(f"{tag}: {text}  | elapsed {_fmt_s(time.monotonic() - self._started)}{self._eta(index)}")

        progress("starting")
        t0 = time.monotonic()
        session = self._network_for(arm, progress)
        seed = cfg.seed + rep
        session.config = job_settings(session.config, cfg, arm, seed)
        before = conditions.snapshot(session)
        ctx = ArmContext(session=session, config=cfg, arm=arm, rep=rep, seed=seed,
                         out_dir=self.results.path, progress=progress)
        try:
            result = self.module.run_arm(ctx)
            if not isinstance(result, ArmResult):
                raise ExperimentError(f"{cfg.name}.run_arm returned {type(result).__name__}, not ArmResult")
        except (TopoError, ExperimentError, OSError) as exc:
            # The network may be broken: the next arm starts a fresh one.
            result = ArmResult(rounds=[], metrics={}, ok=False, error=f"{type(exc).__name__}: {exc}")
            self._network = None
        after = conditions.snapshot(session) if self.session is not None else before
        cond, switch = conditions.compare(before, after)
        if self._network is None:
            self._stop_network()
        elapsed = time.monotonic() - t0
        self._durations.append(elapsed)
        run: dict[str, Any] = {
            "arm": arm.name, "rep": rep, "seed": seed, "ok": result.ok, "error": result.error,
            "elapsed_s": round(elapsed, 3), "transport": arm.transport, "tcp_cc": arm.tcp_cc,
            "tcp_ecn": arm.tcp_ecn, "pace": arm.pace, "workers": cfg.workers_of(arm),
            "rounds_planned": cfg.rounds_of(arm), "metrics": result.metrics, "switch": switch,
            "conditions": cond, **result.extra,
        }
        rounds = [{**r, "arm": arm.name, "rep": rep} for r in result.rounds]
        self.results.append_run(run, rounds)
        flag = "  SWITCH PROCESS DROPPED PACKETS" if cond["switch_dropped"] else ""
        m = result.metrics
        brief = ", ".join(f"{k} {m[k]:.3g}" for k in ("rounds_per_s", "round_time_p99_s", "final_accuracy")
                          if isinstance(m.get(k), (int, float)))
        progress(("done" if result.ok else f"FAILED: {result.error}") + (f" ({brief})" if brief else "")
                 + f" in {elapsed:.0f} s; load {cond['load1_end']}, switch CPU max "
                 f"{cond['switch_cpu_pct_max']}%{flag}")

    def _eta(self, index: int) -> str:
        if not self._durations:
            return ""
        left = self._todo - len(self._durations)
        if left <= 0:
            return ""
        return f", ETA {_fmt_s(left * sum(self._durations) / len(self._durations))}"

    # -- network ------------------------------------------------------------------------------
    def _network_for(self, arm: Arm, progress: Callable[[str], None]) -> RunSession:
        wanted = self.config.topology_of(arm)
        if self.session is not None and self._network == wanted:
            return self.session
        self._stop_network()
        progress(f"starting network '{wanted.name}' ({wanted.workers} workers, bottleneck "
                 f"{wanted.bottleneck_pps or 'unlimited'} pps, queue {wanted.queue_depth})")
        session = RunSession(session_config(self.config, wanted, self.build_dir, self.log_dir))
        try:
            session.start()
            if wanted.background_flows:
                session.start_background(wanted.background_flows, cc=wanted.background_cc)
        except TopoError as exc:
            session.stop()
            raise ExperimentError(f"network did not start: {exc}") from None
        except BaseException:
            session.stop()
            raise
        self.session = session
        self._network = wanted
        return session

    def _stop_network(self) -> None:
        if self.session is not None:
            self.session.stop()
        self.session = None
        self._network = None
