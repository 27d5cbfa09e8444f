#!/usr/bin/env python3
"""What the parameter server's pull sessions wait on: an experiment run in this process with
every pull `SendSession` observed, then the share of their time in each state, per kind of
session (MLT's, gradlane's by its --cc-loss).

Not part of CI (an analysis aid). A session's state after each of its ticks is one of
`paced` (chunks queued, the port's pacer holds them: the PS's own link is the limit), `window`
(chunks queued, the congestion window is full), `waiting` (nothing queued: every chunk went
out, the session waits for ACKs, RACK or a probe) or `sending` (it sent in that tick). The
states are timed from each session's start to its STOP and summed per arm, beside the median
window when the session was window-bound or paced. The ns-3 backend runs its arms in forked
children, which inherit the observation; each child appends its sessions to OUT/pull-PID.jsonl.

Run: `python scripts/pull_states.py OUT -- regimes --backend ns3 --config
experiments/configs/ns3/regimes_ccloss.yaml --out /tmp/results` (the arguments after `--` are
`python -m experiments`'s); `python scripts/pull_states.py OUT --report` reads OUT again.
"""
from __future__ import annotations

import collections
import glob
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hosts import wire  # noqa: E402
from hosts.transport import sender as sender_module  # noqa: E402

STATES = ("sending", "paced", "window", "waiting")
USAGE = "usage: pull_states.py OUT (-- EXPERIMENT ARGS... | --report)"


def observe(out_dir: str) -> None:
    """Patch SendSession so that pull sessions record their state changes into `out_dir`."""
    cls = sender_module.SendSession
    tick, on_packet = cls.tick, cls.on_packet

    def observed_tick(self, now, burst=None):
        sent = self.stats.data_packets
        wake = tick(self, now, burst)
        if self.pull and not self.done:
            if self.stats.data_packets > sent:
                state = "sending"
            elif self._pos < len(self._queue):
                full = self.window is not None and not self.window.allows(self._outstanding_count())
                state = "window" if full else "paced"
            else:
                state = "waiting"
            trace = self.__dict__.setdefault("_states", [])
            if not trace or trace[-1][1] != state:
                trace.append((now, state, round(self.window.cwnd, 1) if self.window else 0.0))
        return wake

    def observed_on_packet(self, pkt, now):
        was_done = self.done
        on_packet(self, pkt, now)
        if self.pull and self.done and not was_done and pkt.header.kind == wire.KIND_STOP:
            record = {"round": self.round, "rank": self.peer_rank, "plain": self.options.plain,
                      "cc_loss": self.options.cc_loss,
                      "start": self.stats.started, "stop": now,
                      "states": self.__dict__.get("_states", [])}
            with open(os.path.join(out_dir, f"pull-{os.getpid()}.jsonl"), "a") as f:
                f.write(json.dumps(record) + "\n")

    cls.tick, cls.on_packet = observed_tick, observed_on_packet


def report(out_dir: str) -> None:
    """Per kind of session (MLT's plain ones; gradlane's by --cc-loss), the share of
    pull-session time in each state."""
    share: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    cwnd: dict[str, dict[str, list[float]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    for path in glob.glob(os.path.join(out_dir, "pull-*.jsonl")):
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                arm = "mlt (plain)" if rec["plain"] else f"ltp, --cc-loss {rec['cc_loss']}"
                t, state = rec["start"], "sending"
                for when, new, window in rec["states"]:
                    share[arm][state] += when - t
                    t, state = when, new
                    cwnd[arm][new].append(window)
                share[arm][state] += rec["stop"] - t
    for arm, times in sorted(share.items()):
        total = sum(times.values()) or 1.0
        parts = ", ".join(f"{s} {times[s] / total:.2f}" for s in STATES)
        medians = ", ".join(f"{s} {statistics.median(cwnd[arm][s]):.1f}" for s in ("window", "paced")
                            if cwnd[arm][s])
        print(f"{arm}: share of pull-session time: {parts}; median window when {medians}")


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    out_dir = argv[0]
    if argv[1:] == ["--report"]:
        report(out_dir)
        return 0
    if len(argv) < 3 or argv[1] != "--":
        print(USAGE, file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    observe(out_dir)
    from experiments.cli import main as experiments_main  # noqa: PLC0415 - after the patch
    code = experiments_main(argv[2:])
    report(out_dir)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
