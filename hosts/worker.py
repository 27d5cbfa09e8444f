"""Worker agent: computes gradients of the shared model on its shard of the digits and exchanges
them with the parameter server every round (push gradients, pull parameters).

Logs JSON lines `start` (the transport as configured), `bounds` (bounds too small to let one
chunk go: that stage runs reliable), `round` (time_s = compute_s + push_s + wait_s + pull_s +
control_s + the rest; pull delivered fraction, pull bound violations, closed_by of the push,
resends, bytes), `violation` (a pull closed by its deadline with more loss than the pull
bound), `policy` (with --controller: the round from which a generation of the job's policy
applies), `outage` and `rejoin` (the PS went silent: the worker joined again and took the
current model whole; docs/faults.md) and `done` (violations per layer over the run).
With --controller the worker fetches its job's policy view at start-up, and again only when the
PS announces a new policy epoch for a coming round (no per-round call to the controller).
Run: python -m hosts.worker --rank R --workers N --ps IP [--ps-port 19527] [--transport ...]
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from hosts import wire
from hosts.cli import agent_main, check_port, resolve_ipv4
from hosts.errors import ConfigError, ControllerUnreachable, PeerTimeout
from hosts.exchange import job_key
from hosts.exchange.config import (add_transport_arguments, config_from_args, following,
                                   with_chunk_plan)
from hosts.exchange.factory import worker_exchange
from hosts.exchange.membership import add_fault_arguments, check_fault_arguments
from hosts.exchange.results import Pulled
from hosts.jsonlog import JsonLog
from hosts.policy_client import HostPolicy, PolicyClient
from hosts.training import dataset
from hosts.training.model_args import add_model_arguments, model_spec, preload_model
from hosts.transport.bounds import LayerBounds, sub_chunk_notes, violated_layers
from hosts.transport.chunking import ChunkPlan
from hosts.transport.holes import keep_previous


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m hosts.worker", description=__doc__.splitlines()[0])
    ap.add_argument("--rank", type=int, required=True, help="this worker's rank (0..N-1)")
    ap.add_argument("--workers", type=int, required=True, help="number of workers N (for sharding)")
    ap.add_argument("--ps", required=True, help="parameter server IPv4 address")
    ap.add_argument("--ps-port", type=int, default=wire.GRADLANE_UDP_PORT)
    ap.add_argument("--bind", default="0.0.0.0", help="local address")
    ap.add_argument("--port", type=int, default=wire.GRADLANE_UDP_PORT,
                    help="local UDP port (default 19527; 0 = any, e.g. several workers on one host)")
    ap.add_argument("--rounds", type=int, help="stop after this many rounds even without LAST")
    ap.add_argument("--log", help="JSON-lines log file (default stdout)")
    ap.add_argument("--pid-file", help="write this process's PID here")
    ap.add_argument("--die-with-parent", action="store_true", help="exit when the parent dies")
    add_model_arguments(ap)
    add_transport_arguments(ap)
    add_fault_arguments(ap, ps=False)
    return ap


def _pull_violations(log: JsonLog, rnd: int, rank: int, pulled: Pulled, bounds: LayerBounds,
                     plan: ChunkPlan) -> list[int]:
    """Per layer, 1 where round ``rnd``'s pull closed below its bound (each logged)."""
    counts = [0] * plan.num_layers
    for layer in violated_layers(pulled.fractions, bounds.pull, bounds.scope, plan.layer_sizes):
        counts[layer] += 1
        log.write("violation", round=rnd, stage="pull", rank=rank, layer=layer,
                  delivered=round(pulled.fractions[layer], 4), bound=bounds.pull[layer],
                  closed_by=pulled.closed_by)
    return counts


def _exchange_figures(push: dict[str, Any], pulled: Pulled, delta: dict[str, int]) -> dict[str, Any]:
    """The push's and the pull's fields of a round's record (times, delivery, counters)."""
    return dict(
        wait_s=None if pulled.wait is None else round(pulled.wait, 6),
        pull_s=round(pulled.seconds - (pulled.wait or 0.0), 6),
        resends=(push.get("retransmissions", 0) + delta.get("retx_received", 0)),
        pull_delivered=[round(f, 4) for f in pulled.fractions],
        pull_closed_by=pulled.closed_by,
        pull_deadline_ms=(None if pulled.deadline == float("inf")
                          else round(pulled.deadline * 1000, 3)),
        pull_telemetry=pulled.telemetry, pull_deadline_adaptation=pulled.adaptation,
        bytes=delta.get("bytes_sent", 0) + delta.get("bytes_received", 0),
        drops={k: v for k, v in delta.items() if k.startswith("drop_")},
        **{k: (round(v, 6) if isinstance(v, float) else v) for k, v in push.items()})


def work(args: argparse.Namespace) -> None:
    if not 0 <= args.rank < args.workers:
        raise ConfigError(f"--rank {args.rank} is outside 0..{args.workers - 1}")
    if args.rank >= wire.PS_RANK:
        raise ConfigError(f"--rank {args.rank} is reserved")
    check_fault_arguments(args)
    spec = model_spec(args)
    data = spec.load_data(args.seed)
    x, y = dataset.shard(data, args.rank, args.workers)
    model = spec.build(data.num_features, data.num_classes, args.seed)
    job_key.require_flag(args.job_key)
    config = config_from_args(args, model.num_layers, args.seed + args.rank)
    per_epoch = dataset.rounds_per_epoch(data, args.workers, args.batch)
    log = JsonLog(args.log, role="worker", rank=args.rank, transport=config.kind)
    ps = (resolve_ipv4(args.ps, "--ps"), check_port(args.ps_port, "--ps-port"))
    local = (args.bind, check_port(args.port, "--port") if config.udp else 0)
    flag_hole_fill = config.hole_fill
    client = PolicyClient(config.controller, config.job_id, model.num_layers) if config.controller else None
    generation = client.fetch().at(0) if client is not None else None
    if generation is not None:
        config = following(config, generation, flag_hole_fill)
    config, plan = with_chunk_plan(config, model.layer_sizes())
    exchange = worker_exchange(config, plan, args.rank, ps, local)
    log.write("start", workers=args.workers, ps=f"{ps[0]}:{ps[1]}",
              pull_bounds=list(config.bounds.pull), config=config.summary())
    log.write("bounds", scope=config.bounds.scope, notes=sub_chunk_notes(config.bounds, plan))
    violations = [0] * model.num_layers
    rnd = 0
    epoch: int | None = None
    try:
        rnd = exchange.join() or 0
        if rnd > 0:   # the job runs already (this worker restarted): the current model first
            log.write("rejoin", first_push=rnd, pulls_whole=rnd - 1)
            pulled = exchange.catch_up(rnd - 1)
            model.set_flat(pulled.values)
            if pulled.last:
                args.rounds = rnd
        while args.rounds is None or rnd < args.rounds:
            t0 = time.monotonic()
            if client is not None and generation is not None:
                generation = _follow(client, generation, exchange, rnd, log)
                if generation.epoch != epoch:
                    log.write("policy", round=rnd, **generation.summary())
                    epoch = generation.epoch
                exchange.config = following(config, generation, flag_hole_fill)
            control_s = time.monotonic() - t0
            before = exchange.counters.snapshot()
            t_compute = time.monotonic()
            idx = dataset.batch_indices(len(y), args.batch, rnd, per_epoch, args.seed, args.rank)
            loss, grads = model.loss_and_gradients(x[idx], y[idx])
            compute_s = time.monotonic() - t_compute
            try:
                push = exchange.push(rnd, grads)
                pulled = exchange.pull(rnd)
            except PeerTimeout as exc:
                rnd, pulled = _ride_out(exchange, log, rnd, str(exc), args.outage_horizon)
                model.set_flat(pulled.values)
                if pulled.last:
                    break
                continue
            t_compute = time.monotonic()
            # Pull-stage holes keep this worker's previous parameters (MLT); zero-filling
            # weights would wreck the model, so --hole-fill applies to the push stage only.
            model.set_flat([keep_previous(v, d, p) for v, d, p in
                            zip(pulled.values, pulled.delivered, model.get_flat())])
            compute_s += time.monotonic() - t_compute
            round_violations = _pull_violations(log, rnd, args.rank, pulled, exchange.config.bounds,
                                                plan)
            violations = [a + b for a, b in zip(violations, round_violations)]
            if pulled.adaptation is not None:
                log.write("adaptation", law="early_close", stage="pull", **pulled.adaptation)
            log.write("round", round=rnd, time_s=round(time.monotonic() - t0, 6),
                      batch_loss=round(loss, 6), compute_s=round(compute_s, 6),
                      control_s=round(control_s, 6), pull_violations=round_violations,
                      pull_bounds=[round(b, 6) for b in exchange.config.bounds.pull],
                      push_bounds=[round(b, 6) for b in exchange.config.bounds.push],
                      policy_epoch=epoch,
                      **_exchange_figures(push, pulled, exchange.counters.since(before)))
            rnd += 1
            if pulled.last:
                break
        exchange.linger()
        log.write("done", rounds=rnd, violations=violations,
                  counters=exchange.counters.snapshot(), **exchange.describe())
    finally:
        exchange.close()
        log.close()


# How long a worker waits, at the start of a round, for the PS's announcement of its policy
# epoch (sent while the PS scatters the round before; normally here before the pull closes).
_ANNOUNCE_WAIT = 0.5


def _follow(client: PolicyClient, generation: HostPolicy, exchange, rnd: int,
            log: JsonLog) -> HostPolicy:
    """The generation to follow in `rnd`: the current one unless the PS announced another
    epoch; then (only then) the controller is asked for the view that holds it."""
    if rnd == 0:
        return generation
    announced = exchange.announced_epoch(rnd, _ANNOUNCE_WAIT)
    if announced is None:
        log.write("controller", round=rnd, error="no policy epoch announced by the PS",
                  kept_epoch=generation.epoch)
        return generation
    if announced == generation.epoch:
        return generation
    try:
        view = client.fetch()
    except ControllerUnreachable as exc:   # a restart mid-job: keep the last one
        log.write("controller", round=rnd, error=str(exc), kept_epoch=generation.epoch)
        return generation
    for candidate in (view.at(rnd), view.current, view.previous):
        if candidate is not None and candidate.epoch == announced:
            return candidate
    log.write("controller", round=rnd, error=f"the PS announced epoch {announced}, the controller "
              f"offers {view.current.epoch}", kept_epoch=view.at(rnd).epoch)
    return view.at(rnd)


def _ride_out(exchange, log: JsonLog, round_: int, error: str,   # noqa: ANN001 - an exchange
              horizon: float) -> tuple[int, object]:
    """The PS went silent in ``round_``: join it again (the same HELLO as at the start) and take
    the current model whole, retrying until ``horizon`` s have passed; (the round to push next,
    the model's pull). PeerTimeout when the horizon passes first."""
    log.write("outage", round=round_, error=error, horizon_s=horizon)
    started = time.monotonic()
    while True:
        left = horizon - (time.monotonic() - started)
        if left <= 0:
            raise PeerTimeout(f"{error}; no answer within --outage-horizon {horizon:g} s")
        try:
            first = exchange.join(timeout=left, forget_below=round_ + 1)
            log.write("rejoin", round=round_, first_push=first, pulls_whole=first - 1,
                      after_s=round(time.monotonic() - started, 3))
            return first, exchange.catch_up(first - 1)
        except PeerTimeout as exc:
            error = str(exc)


def main(argv: list[str] | None = None) -> int:
    return agent_main(build_parser(), work, "hosts.worker", argv, preload=preload_model)


if __name__ == "__main__":
    sys.exit(main())
