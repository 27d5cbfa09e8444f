"""Parameter server agent: synchronous data-parallel SGD over the gradient transport.

Each round: gather every worker's gradient push (loss-tolerant on ltp/mlt), average per element
(holes filled per --hole-fill), take an SGD step, pull the parameters back to the workers.
Logs JSON lines: `start` (the transport as configured), `bounds` (bounds too small to let one
chunk go: that stage runs reliable), `round` (completion time and its parts push_s, pull_s,
compute_s, control_s; per-layer delivered fraction and over the whole tensor, mean and worst
worker; closed_by per worker, resends (push resends received + pull resends sent), bound
violations, deadline, the switches' telemetry (and the deepest switch
queue the push met), bytes, retransmissions and fast_resends, those of them sent on the ACKs'
evidence rather than after a probe), `violation` (a push closed by its deadline with more
loss than the bound), `adaptation` (the Early Close deadline changed: round from which it applies,
value, reason; docs/control-laws.md), `epoch` (loss, accuracy on the held-out digits), `eval`
(test accuracy every --eval-every rounds), `policy`
(with --controller: the round from which a generation of the job's policy applies, its epoch and
bounds), `member` (a worker left behind after its absence timeout, re-admitted, or rebound
to the new address it joined from; the round records list the ranks each round went without, docs/faults.md) and `done` (violations per layer
over the run, lost contributions and re-admissions per rank).
With --controller the PS follows the controller's policy for its job and reports each round
(regime per DBLP, delivered fractions, violations) from a thread while the round's pull runs; it
announces the next round's policy epoch to the workers (KIND_EPOCH) once the answer is back.
Run: python -m hosts.ps --workers N [--port 19527] [--transport ltp|tcp|mlt] ...
"""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from hosts import wire
from hosts.cli import agent_main, check_port
from hosts.errors import ConfigError, ControllerUnreachable
from hosts.exchange import job_key
from hosts.exchange.config import (add_transport_arguments, config_from_args, following,
                                   with_chunk_plan)
from hosts.exchange.factory import server_exchange
from hosts.exchange.results import Gathered
from hosts.exchange.membership import Membership, add_fault_arguments, check_fault_arguments
from hosts.jsonlog import JsonLog
from hosts.policy_client import PolicyClient, PolicyView
from hosts.training import dataset
from hosts.training.aggregate import PushAggregator
from hosts.training.mlp import MomentumSGD
from hosts.training.model_args import add_model_arguments, model_spec, preload_model
from hosts.transport.bounds import sub_chunk_notes, violated_layers
from hosts.transport.chunking import ChunkPlan
from hosts.transport.phase import PhaseSchedule


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m hosts.ps", description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, required=True, help="number of workers (ranks 0..N-1)")
    ap.add_argument("--bind", default="0.0.0.0", help="address to listen on")
    ap.add_argument("--port", type=int, default=wire.GRADLANE_UDP_PORT,
                    help="UDP (or TCP for --transport tcp) port, default 19527")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--rounds", type=int, help="total rounds (default: epochs x rounds per epoch)")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--eval-every", type=int, default=0, metavar="N",
                    help="also log test accuracy every N rounds as an `eval` record (0 = only at "
                         "epoch ends; for time-to-accuracy curves)")
    ap.add_argument("--log", help="JSON-lines log file (default stdout)")
    ap.add_argument("--pid-file", help="write this process's PID here")
    ap.add_argument("--die-with-parent", action="store_true", help="exit when the parent dies")
    add_model_arguments(ap)
    add_transport_arguments(ap)
    add_fault_arguments(ap, ps=True)
    return ap


def _check_arguments(args: argparse.Namespace) -> None:
    """ConfigError naming the flag whose value makes no sense."""
    if args.workers < 1:
        raise ConfigError(f"--workers {args.workers} must be at least 1")
    if args.epochs < 1 or (args.rounds is not None and args.rounds < 1):
        raise ConfigError("--epochs and --rounds must be at least 1")
    if args.eval_every < 0:
        raise ConfigError(f"--eval-every {args.eval_every} must be >= 0")
    check_port(args.port, "--port")
    check_fault_arguments(args, args.workers)


def _push_violations(log: JsonLog, rnd: int, gathered: Gathered, bounds: tuple[float, ...],
                     scope: str, plan: ChunkPlan) -> list[int]:
    """Per layer, the workers whose push of ``rnd`` closed below its bound (each logged)."""
    counts = [0] * plan.num_layers
    for rank in sorted(gathered.fractions):
        fractions = gathered.fractions[rank]
        for layer in violated_layers(fractions, bounds, scope, plan.layer_sizes):
            counts[layer] += 1
            log.write("violation", round=rnd, stage="push", rank=rank, layer=layer,
                      delivered=round(fractions[layer], 4), bound=bounds[layer],
                      closed_by=gathered.closed_by[rank])
    return counts


def _evaluate(log: JsonLog, model: Any, data: Any, args: argparse.Namespace, rnd: int,
              per_epoch: int, last: bool, started: float) -> None:
    """The epoch's training and test figures at an epoch's end (or the last round), else the
    test figures every --eval-every rounds."""
    if (rnd + 1) % per_epoch == 0 or last:
        train_loss, _ = model.evaluate(data.x_train, data.y_train)
        test_loss, accuracy = model.evaluate(data.x_test, data.y_test)
        log.write("epoch", epoch=rnd // per_epoch, round=rnd, loss=round(train_loss, 6),
                  test_loss=round(test_loss, 6), accuracy=round(accuracy, 6),
                  elapsed_s=round(time.monotonic() - started, 3))
    elif args.eval_every and (rnd + 1) % args.eval_every == 0:
        test_loss, accuracy = model.evaluate(data.x_test, data.y_test)
        log.write("eval", round=rnd, test_loss=round(test_loss, 6), accuracy=round(accuracy, 6),
                  elapsed_s=round(time.monotonic() - started, 3))


def _round_figures(gathered: Gathered, pull_s: float, delta: dict[str, int],
                   plan: ChunkPlan) -> dict[str, Any]:
    """The timing, delivery and counter fields of a round's record."""
    total_elems = sum(plan.layer_sizes)
    pooled = [sum(f * n for f, n in zip(fr, plan.layer_sizes)) / total_elems
              for fr in gathered.fractions.values()]
    return dict(
        time_s=round(gathered.seconds + pull_s, 6),
        push_s=round(gathered.seconds, 6), pull_s=round(pull_s, 6),
        push_spread_ms=(None if gathered.start_spread is None
                        else round(gathered.start_spread * 1000, 3)),
        resends=delta.get("retx_received", 0) + delta.get("retransmissions", 0),
        delivered=[round(f, 4) for f in gathered.mean_fractions()],
        delivered_min=[round(f, 4) for f in gathered.min_fractions()],
        # None when no worker's push reached the PS (every one absent)
        delivered_tensor=round(sum(pooled) / len(pooled), 4) if pooled else None,
        delivered_tensor_min=round(min(pooled), 4) if pooled else None,
        closed_by=sorted(set(str(c) for c in gathered.closed_by.values())),
        deadline_ms=_ms(gathered.deadline),
        telemetry=gathered.telemetry, deadline_adaptation=gathered.adaptation,
        bytes=delta.get("bytes_sent", 0) + delta.get("bytes_received", 0),
        retransmissions=delta.get("retransmissions", 0),
        fast_resends=delta.get("fast_resends", 0),      # of those, on the ACKs' evidence (no timer)
        retx_received=delta.get("retx_received", 0),
        drops={k: v for k, v in delta.items() if k.startswith("drop_")},
        queue_depth=gathered.max_qdepth, lost=gathered.lost)


def _step(model: Any, optimizer: MomentumSGD, aggregator: PushAggregator,
          gathered: Gathered) -> tuple[list[np.ndarray], list[float]]:
    """One optimizer step on the round's aggregate: the new parameters and each layer's
    gradient norm (every worker absent: nothing to learn from, the model stays)."""
    if gathered.values:
        grads = aggregator.aggregate(gathered.values, gathered.delivered)
        params = optimizer.step(model.get_flat(), grads)
        model.set_flat(params)
    else:
        params = model.get_flat()
        grads = [np.zeros_like(p) for p in params]
    return params, [float(np.sqrt(np.dot(g, g))) for g in grads]


def _report(reporter: "PolicyReporter", rnd: int, gathered: Gathered, phase: PhaseSchedule | None,
            round_time: float | None, bounds: tuple[float, ...], violations: list[int],
            epoch: int | None) -> None:
    """What the controller's control laws read about round ``rnd``'s push."""
    reporter.report(
        rnd, regime=None if phase is None else ("normal" if phase.phase == "high" else "critical"),
        push_s=round(gathered.seconds, 6), round_time_s=round_time,
        delivered=[round(f, 4) for f in gathered.mean_fractions()],
        bounds=list(bounds), violations=violations,
        deadline_s=None if gathered.deadline == float("inf") else gathered.deadline,
        tele_max_qdepth=gathered.telemetry.get("max_qdepth"),
        tele_qdelay_us=gathered.telemetry.get("max_qdelay_us"),
        deadline_adaptation=gathered.adaptation, epoch=epoch)


def serve(args: argparse.Namespace) -> None:
    _check_arguments(args)
    spec = model_spec(args)
    data = spec.load_data(args.seed)
    model = spec.build(data.num_features, data.num_classes, args.seed)
    job_key.require_flag(args.job_key)
    config = config_from_args(args, model.num_layers, args.seed, create_key=True)
    per_epoch = dataset.rounds_per_epoch(data, args.workers, args.batch)
    total = args.rounds if args.rounds is not None else args.epochs * per_epoch
    optimizer = MomentumSGD(args.lr, args.momentum)
    # With a controller the PS always detects its regime (DBLP) and reports it; the policy's
    # phases turn it into bounds. Without one, --phase-aware applies P_high itself.
    phase = (PhaseSchedule(model.num_layers, config.phase_high_delta,
                           check_every=config.phase_check_rounds, per_layer=config.phase_per_layer)
             if config.phase_aware or config.controller else None)
    flag_hole_fill = config.hole_fill
    client = PolicyClient(config.controller, config.job_id, model.num_layers) if config.controller else None
    view: PolicyView | None = client.fetch() if client else None
    reporter = PolicyReporter(client, view) if client is not None and view is not None else None
    if view is not None:
        config = following(config, view.at(0), flag_hole_fill)
    config, plan = with_chunk_plan(config, model.layer_sizes())
    push_bounds = config.bounds.push
    aggregator = PushAggregator(config.hole_fill)
    log = JsonLog(args.log, role="ps", transport=config.kind)
    if view is not None:
        log.write("policy", round=0, effective_round=view.effective_round, **view.at(0).summary())
    exchange = server_exchange(config, plan, args.workers, (args.bind, args.port))
    membership: Membership | None = getattr(exchange, "membership", None)
    if membership is not None:
        membership.min_workers, membership.horizon = args.min_workers, args.outage_horizon
    log.write("start", workers=args.workers, port=args.port, model=spec.describe(),
              layer_sizes=plan.layer_sizes, chunks=plan.chunk_counts, rounds=total,
              rounds_per_epoch=per_epoch, push_bounds=list(push_bounds),
              pull_bounds=list(config.bounds.pull), config=config.summary())
    log.write("bounds", scope=config.bounds.scope, notes=sub_chunk_notes(config.bounds, plan))
    violations = [0] * model.num_layers
    started = time.monotonic()
    round_time: float | None = None
    try:
        for rnd in range(total):
            before = exchange.counters.snapshot()
            bounds_now = push_bounds
            epoch_now = reporter.view.at(rnd).epoch if reporter is not None else None
            gathered = exchange.gather(rnd, tuple(1.0 - b for b in bounds_now))
            t_compute = time.monotonic()
            round_violations = _push_violations(log, rnd, gathered, bounds_now, config.bounds.scope,
                                                plan)
            violations = [a + b for a, b in zip(violations, round_violations)]
            if gathered.adaptation is not None:
                log.write("adaptation", law="early_close", stage="push", **gathered.adaptation)
            _log_members(exchange, log)
            params, layer_norms = _step(model, optimizer, aggregator, gathered)
            norm = float(np.sqrt(sum(n * n for n in layer_norms)))
            checked = phase.observe(layer_norms) if phase is not None else False
            last = rnd == total - 1
            compute_s = time.monotonic() - t_compute
            next_round = None
            if reporter is not None:
                # this round's pull keeps this round's generation; the next push gets its own,
                # which the report's answer gives while the pull runs (off the critical path)
                exchange.config = following(config, reporter.view.at(rnd), flag_hole_fill)
                _report(reporter, rnd, gathered, phase, round_time, bounds_now, round_violations,
                        epoch_now)
                next_round = reporter.next_round(rnd)
            elif checked and config.phase_aware:
                push_bounds = phase.bounds(config.bounds.push)   # type: ignore[union-attr]
            pull_s = exchange.scatter(rnd, params, last,
                                      None if last else tuple(1.0 - b for b in push_bounds),
                                      next_round=None if last else next_round)
            control_s = 0.0
            if reporter is not None:
                control_s = reporter.settle(log)
                view = reporter.view
                upcoming = view.at(rnd + 1)
                if upcoming.epoch != view.at(rnd).epoch:
                    log.write("policy", round=rnd + 1, effective_round=view.effective_round,
                              **upcoming.summary())
                push_bounds = upcoming.bounds.push
                aggregator.fill = following(config, upcoming, flag_hole_fill).hole_fill
            _log_members(exchange, log)
            round_time = round(gathered.seconds + pull_s, 6)
            figures = _round_figures(gathered, pull_s, exchange.counters.since(before), plan)
            log.write("round", round=rnd, epoch=rnd // per_epoch, **figures,
                      compute_s=round(compute_s, 6), control_s=round(control_s, 6),
                      violations=round_violations,
                      bounds=[round(b, 6) for b in bounds_now], grad_norm=round(norm, 6),
                      phase=None if phase is None else phase.phase, policy_epoch=epoch_now,
                      switch_push=None if view is None else view.switch_push,
                      absent=[] if membership is None else sorted(membership.absent))
            _evaluate(log, model, data, args, rnd, per_epoch, last, started)
        log.write("done", rounds=total, elapsed_s=round(time.monotonic() - started, 3),
                  violations=violations, counters=exchange.counters.snapshot(),
                  **({} if membership is None else membership.summary()), **exchange.describe())
    finally:
        if reporter is not None:
            reporter.close()
        exchange.close()
        log.close()


class PolicyReporter:
    """The PS's side of the job policy: each round's report goes to the controller from a
    thread while the pull runs, and its answer is adopted as soon as it is back (docs/contracts.md,
    Job policy). The PS waits for it only when the pull finished first (`control_s`)."""

    def __init__(self, client: PolicyClient, view: PolicyView) -> None:
        self.client = client
        self.view = view
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="policy-report")
        self._pending: Future | None = None
        self._round = 0
        self._waited = 0.0
        self._error: str | None = None

    def report(self, round_: int, **stats: object) -> None:
        self._round = round_
        self._pending = self._pool.submit(self.client.report, round_, **stats)

    def next_round(self, round_: int) -> Callable[[bool], tuple[tuple[float, ...], int] | None]:
        """For the scatter: once the answer is back (or, with `wait`, after waiting for it), the
        push requirement and the policy epoch of round `round_` + 1."""
        def upcoming(wait: bool) -> tuple[tuple[float, ...], int] | None:
            if not wait and self._pending is not None and not self._pending.done():
                return None
            t0 = time.monotonic()
            self._adopt()
            self._waited += time.monotonic() - t0
            generation = self.view.at(round_ + 1)
            return tuple(1.0 - b for b in generation.bounds.push), generation.epoch
        return upcoming

    def _adopt(self) -> None:
        if self._pending is None:
            return
        pending, self._pending = self._pending, None
        try:
            self.view = pending.result()
        except ControllerUnreachable as exc:   # a restart mid-job: keep the last view
            self._error = str(exc)
            self.view = PolicyView(self.view.at(self._round + 1), 0, None)

    def settle(self, log: JsonLog) -> float:
        """Adopt the answer of the last report (waiting for it); seconds waited this round."""
        t0 = time.monotonic()
        self._adopt()
        waited = self._waited + time.monotonic() - t0
        self._waited = 0.0
        if self._error is not None:
            log.write("controller", round=self._round, error=self._error,
                      kept_epoch=self.view.at(self._round + 1).epoch)
            self._error = None
        return waited

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def _log_members(exchange: object, log: JsonLog) -> None:
    """A `member` record per worker gone absent, rebound or re-admitted since the last call."""
    events = getattr(exchange, "member_events", None)
    while events:
        log.write("member", **events.pop(0))


def _ms(seconds: float) -> float | None:
    """Milliseconds for a JSON record (None = no deadline)."""
    return None if seconds == float("inf") else round(seconds * 1000, 3)


def main(argv: list[str] | None = None) -> int:
    return agent_main(build_parser(), serve, "hosts.ps", argv, preload=preload_model)


if __name__ == "__main__":
    sys.exit(main())
