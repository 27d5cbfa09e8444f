"""The DDP communication hook: any PyTorch DDP script trains over gradlane with

    state = hook.register(ddp_model)      # after dist.init_process_group("gloo")
    ...train...
    state.close()

torch.distributed still starts the job and buckets the gradients; each bucket's gradients go to
the parameter server (`hosts.ddp.server`) over gradlane's transport, with the job's bounds
(per-layer ones by parameter name), priority by layer and magnitude in every packet, and come
back averaged over the ranks, the push's holes filled as the job's --hole-fill says. An element
the pull lost comes back as 0 (that element takes no step: the gradient counterpart of a worker
keeping its previous parameter); so with a lossy pull the replicas can drift apart, and
--reliable-pull keeps them identical.

A step's buckets are collected until every parameter's gradient is in (buckets are keyed by
their parameters, not by their index: DDP rebuilds them after the first step), then the whole
step is one transport round, and each bucket's future gets its share of the result.
"""
import os
import socket
import threading
import queue

import numpy as np
import torch
import torch.distributed as dist

from hosts.cli import parse_hostport
from hosts.ddp import control
from hosts.ddp.flags import FLAGS_ENV, PS_ENV, parse_flags, transport_config
from hosts.ddp.layout import Layout
from hosts.errors import ConfigError, HostsError
from hosts.exchange.factory import worker_exchange
from hosts.transport.chunking import ChunkPlan



class GradlaneError(RuntimeError):
    """The job cannot go on (the server aborted it, a bucket does not fit the layout)."""


def configured() -> bool:
    """True when the launcher (or the user) named a parameter server in GRADLANE_PS."""
    return bool(os.environ.get(PS_ENV))


class GradlaneHook:
    """The hook's state for one rank: registration, the exchange, the step being collected."""

    def __init__(self, module: torch.nn.Module, ps: str | None = None,
                 flags: list[str] | str | None = None, rank: int | None = None,
                 world: int | None = None) -> None:
        if isinstance(module, torch.nn.parallel.DistributedDataParallel):
            module = module.module
        ps = ps or os.environ.get(PS_ENV)
        if not ps:
            raise ConfigError(f"no parameter server: pass ps= or set {PS_ENV}=HOST:PORT")
        host, control_port = parse_hostport(ps, PS_ENV)
        args = parse_flags(os.environ.get(FLAGS_ENV, "") if flags is None else flags)
        if rank is None or world is None:
            rank, world = dist.get_rank(), dist.get_world_size()
        self.rank, self.world = rank, world
        self.layout = Layout.of(module)
        params = [p for p in module.parameters() if p.requires_grad]
        self._index = {id(p): i for i, p in enumerate(params)}
        self._lock = threading.Lock()
        self._grads: dict[int, np.ndarray] = {}
        self._pending: list[tuple[list[int], torch.dtype, torch.futures.Future]] = []
        self._unresolved: list[torch.futures.Future] = []   # collected or in flight
        self._failed: str | None = None
        self._closing = False
        self.round = 0
        self.delivered: list[list[float]] = []   # per step: the pull's delivered fraction per layer
        self._sock = socket.create_connection((host, control_port), timeout=args.join_timeout)
        self._reader = control.Reader(self._sock)
        control.send(self._sock, {"type": "register", "rank": rank, "world": world,
                                  "layout": self.layout.as_json()})
        answer = self._next_message(args.join_timeout)
        if answer.get("type") != "ready" or not isinstance(answer.get("port"), int):
            self._sock.close()
            raise ConfigError(answer.get("message") or f"unexpected answer {answer}")
        self._sock.settimeout(None)
        self.config = transport_config(args, self.layout, args.seed + rank)
        self.plan = ChunkPlan(list(self.layout.sizes), self.config.chunk_elems)
        self.exchange = worker_exchange(self.config, self.plan, rank, (host, answer["port"]),
                                        ("0.0.0.0", 0))
        self.exchange.join()
        # Rounds run on a daemon thread: a round stuck on a peer never keeps the process alive.
        self._steps: queue.Queue = queue.Queue()
        self._worker = threading.Thread(target=self._rounds, name="gradlane-rounds", daemon=True)
        self._worker.start()
        threading.Thread(target=self._watch, name="gradlane-control", daemon=True).start()

    def _next_message(self, timeout: float) -> dict:
        self._sock.settimeout(timeout)
        try:
            message = self._reader.next()
            why = "closed the connection"
        except socket.timeout:
            message, why = None, f"did not answer within {timeout:g} s"
        if message is None:
            self._sock.close()
            raise ConfigError(f"the parameter server {why} before the job started")
        return message

    def _watch(self) -> None:
        """The control connection: an abort (or the server gone) fails the step in flight."""
        try:
            message = self._reader.next()
        except ConfigError as exc:
            message = {"type": "abort", "message": str(exc)}
        if self._closing:
            return
        if message is None:
            message = {"message": "the parameter server closed the job's control connection"}
        self._fail(f"gradlane: {message.get('message')}")

    def _fail(self, why: str) -> None:
        """Fail every step not yet answered, now and from now on."""
        with self._lock:
            if self._failed is None:
                self._failed = why
            unresolved, self._unresolved = self._unresolved, []
            self._pending, self._grads = [], {}
            for fut in unresolved:
                if not fut.done():
                    fut.set_exception(GradlaneError(self._failed))

    def submit(self, bucket: dist.GradBucket) -> torch.futures.Future:
        """Take one bucket of this step; its future completes once the step's round is back."""
        fut: torch.futures.Future = torch.futures.Future()
        indices = []
        for p, g in zip(bucket.parameters(), bucket.gradients()):
            i = self._index.get(id(p))
            if i is None or g.numel() != self.layout.sizes[i]:
                why = (f"gradlane: a bucket holds a parameter of {g.numel()} elements that is "
                       f"not in the layout registered with the parameter server "
                       f"({len(self.layout.sizes)} parameters, {self.layout.elements} "
                       f"elements): the hook was made for another model")
                self._fail(why)
                raise GradlaneError(why)
            indices.append(i)
        with self._lock:
            if self._failed is not None:
                fut.set_exception(GradlaneError(self._failed))
                return fut
            for i, g in zip(indices, bucket.gradients()):
                self._grads[i] = g.detach().reshape(-1).to(torch.float32).numpy().copy()
            self._pending.append((indices, bucket.buffer().dtype, fut))
            self._unresolved.append(fut)
            if len(self._grads) < len(self.layout.sizes):
                return fut
            grads = [self._grads[i] for i in range(len(self.layout.sizes))]
            pending, self._pending, self._grads = self._pending, [], {}
        self._steps.put((grads, pending))
        return fut

    def _rounds(self) -> None:
        while (item := self._steps.get()) is not None:
            self._step(*item)

    def _step(self, grads: list[np.ndarray], pending: list) -> None:  # noqa: ANN001
        if self._failed is not None:
            return
        try:
            rnd = self.round
            self.exchange.push(rnd, grads)
            pulled = self.exchange.pull(rnd)
            self.round += 1
            self.delivered.append([round(f, 4) for f in pulled.fractions])
            mean = [np.where(d, v, 0.0).astype(np.float32) for v, d in
                    zip(pulled.values, pulled.delivered)]
        except (HostsError, OSError) as exc:
            self._fail(f"gradlane: {exc}")
            return
        with self._lock:
            for indices, dtype, fut in pending:
                flat = (np.concatenate([mean[i] for i in indices]) if indices
                        else np.zeros(0, np.float32))
                if not fut.done():
                    fut.set_result(torch.from_numpy(flat).to(dtype))
                if fut in self._unresolved:
                    self._unresolved.remove(fut)

    def summary(self) -> dict:
        """Steps exchanged and the least the pull delivered of any layer in any step."""
        fractions = [f for step in self.delivered for f in step]
        return {"rounds": self.round, "pull_delivered_min": min(fractions, default=None)}

    def close(self) -> None:
        """Say goodbye to the server (the job ends once every rank did) and free the sockets."""
        if self._closing:
            return
        self._closing = True
        self._steps.put(None)
        if self._failed is None:
            self._worker.join()
            self.exchange.linger()
            control.send(self._sock, {"type": "bye"})
        self.exchange.close()
        self._sock.close()


# (No `from __future__ import annotations` in this module: DDP checks the hook's annotations
# against the real classes.)
def gradlane_hook(state: GradlaneHook, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """The communication hook: `ddp_model.register_comm_hook(state, gradlane_hook)`."""
    return state.submit(bucket)


def register(ddp_model: torch.nn.parallel.DistributedDataParallel, **kwargs: object) -> GradlaneHook:
    """Make the hook's state for `ddp_model` (kwargs: ps, flags, rank, world; by default from
    the launcher's environment and torch.distributed) and register the hook; the state."""
    state = GradlaneHook(ddp_model, **kwargs)
    ddp_model.register_comm_hook(state, gradlane_hook)
    return state
