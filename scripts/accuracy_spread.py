#!/usr/bin/env python3
"""How far apart same-seed training runs end: the noise floor of the accuracy bars.

Not part of CI (root, Mininet; a few minutes per run). Runs the job of
tests/topology/test_training_loss.py (incast, 2 workers, 2000 pps bottleneck, 120 rounds,
--seed 1) `--runs` times per arm, each in a fresh network (so it is job 1, the job the default
policy names), and prints one JSON line per run and a summary per arm:

- `reliable`: the loss-free reference, ltp with nothing allowed to go missing (push bound 0, a
  reliable pull, no deadline that could close a round early): every gradient and parameter
  arrives, so the run must be the same bit for bit, whatever the packet timing;
- `policy`: the default policy on a loss-free path (switches may drop up to 10 % of the tensor
  when their queue builds up, rounds close by that bound: which chunks miss depends on timing);
- `lossy`: the default policy with `--loss` % random loss on the bottleneck (default 3);
- `chaos-clean`, `chaos`: the scenario of tests/topology/test_chaos.py (incast, 3 workers, 2000
  pps, 60 rounds, its agent flags, the default policy) without faults, and with its three faults
  (s1 killed at round 10, the controller at 25, worker 2 at 40); `chaos-reliable`: its
  loss-free reference (the test's `clean` job). `--rounds` does not apply to them.

The summary gives per arm the mean, standard deviation, min and max of the final accuracy and
of the final training loss, and for each non-reference arm its gap to the reference (one
deterministic value): the largest drop below it and a one-sided 95 % bound on the mean gap
(Student's t with n - 1 degrees of freedom). With both chaos arms it also gives the faults'
own share: the chaos arm's mean minus the fault-free arm's, a one-sided 95 % lower bound on
that difference (Welch's standard error, Student's t with the smaller arm's n - 1 degrees of
freedom: conservative) and the largest drop of a chaos run below the fault-free mean. Run: `python scripts/accuracy_spread.py --arms
reliable,policy,lossy --runs 5` (as root, from the repository; on a shared machine under
`flock /tmp/gradlane-net.lock`).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import socket
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from topo.agents import RELIABLE_FLAGS  # noqa: E402
from topo.session import RunConfig, RunSession  # noqa: E402
from topo.summary import final_accuracy, rounds_completed  # noqa: E402
from topo.topologies import TopoParams  # noqa: E402

# one-sided 95 % quantiles of Student's t, by degrees of freedom
T95 = {1: 6.314, 2: 2.920, 3: 2.353, 4: 2.132, 5: 2.015, 6: 1.943, 7: 1.895, 8: 1.860, 9: 1.833}


def one_run(arm: str, loss: float, build: str, rounds: int, seed: int, log_root: Path,
            index: int) -> dict:
    """One job in a fresh network; its final accuracy and training loss."""
    log_dir = log_root / f"{arm}-{index}"
    cfg = RunConfig(topo_name="incast", build_dir=build, log_dir=str(log_dir),
                    params=TopoParams(workers=2, background=0, bottleneck_pps=2000,
                                      loss_pct=loss if arm == "lossy" else 0.0),
                    policy=str(REPO / "controller/policies/default.yaml"))
    flags = (*(RELIABLE_FLAGS if arm == "reliable" else ()), "--seed", str(seed))
    with RunSession(cfg) as session:
        result = session.train(rounds=rounds, workers=2, timeout=600, extra_ps=flags,
                               extra_worker=flags)
    ps = [r for name, recs in result.records.items() if name.startswith("ps") for r in recs]
    epochs = [r for r in ps if r.get("event") == "epoch"]
    rounds_ = [r for r in ps if r.get("event") == "round"]
    delivered = [r.get("delivered_tensor") for r in rounds_ if r.get("delivered_tensor") is not None]
    # another network on the machine may take the switches' interfaces away mid-run (run this
    # under `flock /tmp/gradlane-net.lock` on a shared machine): such a run is not counted
    lost = sum(Path(log).read_text(errors="replace").count("No such device")
               for log in log_dir.glob("s*.log"))
    return {"arm": arm, "run": index, "ok": result.ok and not lost, "interfaces_lost": lost,
            "rounds": rounds_completed(result),
            "accuracy": final_accuracy(result), "train_loss": epochs[-1]["loss"] if epochs else None,
            "mean_delivered": round(sum(delivered) / len(delivered), 5) if delivered else None,
            "logs": str(log_dir)}


CHAOS_ARMS = ("chaos-clean", "chaos", "chaos-reliable")
CHAOS_ROUNDS = 60
CHAOS_WORKERS = 3


def chaos_run(arm: str, build: str, seed: int, log_root: Path, index: int) -> dict:
    """One job of test_chaos's scenario in a fresh network: with its faults (`chaos`), without
    them (`chaos-clean`), or its loss-free reference (`chaos-reliable`)."""
    from topo.chaos import AGENT_FLAGS, FaultInjector  # noqa: PLC0415

    log_dir = log_root / f"{arm}-{index}"
    cfg = RunConfig(topo_name="incast", build_dir=build, log_dir=str(log_dir),
                    params=TopoParams(workers=CHAOS_WORKERS, background=0, bottleneck_pps=2000),
                    policy=str(REPO / "controller/policies/default.yaml"))
    flags = (*AGENT_FLAGS, "--chunk-elems", "64", *(RELIABLE_FLAGS if arm == "chaos-reliable" else ()),
             "--seed", str(seed))
    faults = 0
    with RunSession(cfg) as session:
        job_id = session.start_job(rounds=CHAOS_ROUNDS, workers=CHAOS_WORKERS, extra_ps=flags,
                                   extra_worker=flags)
        if arm == "chaos":
            chaos = FaultInjector(session, job_id)
            chaos.one_of_each()
            faults = len(chaos.faults())
        result = session.finish_job(job_id, timeout=400)
    ps = [r for name, recs in result.records.items() if name.startswith("ps") for r in recs]
    epochs = [r for r in ps if r.get("event") == "epoch"]
    delivered = [r["delivered_tensor"] for r in ps if r.get("event") == "round"
                 and r.get("delivered_tensor") is not None]
    return {"arm": arm, "run": index, "ok": result.ok and rounds_completed(result) == CHAOS_ROUNDS,
            "faults": faults, "rounds": rounds_completed(result), "accuracy": final_accuracy(result),
            "train_loss": epochs[-1]["loss"] if epochs else None,
            "mean_delivered": round(sum(delivered) / len(delivered), 5) if delivered else None,
            "logs": str(log_dir)}


def fault_share(runs: list[dict]) -> dict | None:
    """The chaos arm against the fault-free chaos arm (both noisy): mean difference, its
    one-sided 95 % lower bound, the largest drop below the fault-free mean; None without both."""
    clean = [r["accuracy"] for r in runs if r["ok"] and r["arm"] == "chaos-clean"]
    chaos = [r["accuracy"] for r in runs if r["ok"] and r["arm"] == "chaos"]
    if len(clean) < 2 or len(chaos) < 2:
        return None
    mean = statistics.fmean(chaos) - statistics.fmean(clean)
    se = math.sqrt(statistics.variance(chaos) / len(chaos) + statistics.variance(clean) / len(clean))
    t = T95.get(min(len(chaos), len(clean)) - 1, 1.645)
    return {"n_chaos": len(chaos), "n_clean": len(clean), "mean": round(mean, 5),
            "mean_lower_95": round(mean - t * se, 5),
            "largest_drop": round(statistics.fmean(clean) - min(chaos), 5)}


def loopback_run(arm: str, loss: float, rounds: int, seed: int, log_root: Path,
                 index: int) -> dict:
    """The same job on 127.0.0.1 (no Mininet, no switch): PS and 2 workers as processes, the
    lossy arm through hosts.lossy_relay with relay seed 3 in every run, so that only the
    packets' timing differs from run to run (no switch queue decides anything here)."""
    import subprocess
    from hosts.exchange.job_key import create_key_file
    from hosts.lossy_relay import LossyRelay

    folder = log_root / f"loopback-{arm}-{index}"
    folder.mkdir(parents=True)
    key = folder / "job.key"
    create_key_file(str(key))
    flags = (*(RELIABLE_FLAGS if arm == "reliable" else ()), "--seed", str(seed),
             "--job-key", str(key), "--rounds", str(rounds))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def start(module: str, *args: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", module, *args, *flags], cwd=REPO, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    ps = start("hosts.ps", "--workers", "2", "--bind", "127.0.0.1", "--port", str(port),
               "--log", str(folder / "ps.jsonl"))
    relay = LossyRelay(("127.0.0.1", 0), ("127.0.0.1", port), loss / 100, seed=3).start() \
        if arm == "lossy" else None
    target = relay.address[1] if relay is not None else port
    workers = [start("hosts.worker", "--rank", str(r), "--workers", "2", "--ps", "127.0.0.1",
                     "--ps-port", str(target), "--bind", "127.0.0.1", "--port", "0",
                     "--log", str(folder / f"w{r}.jsonl")) for r in range(2)]
    try:
        codes = [p.wait(timeout=600) for p in (ps, *workers)]
    finally:
        for p in (ps, *workers):
            if p.poll() is None:
                p.kill()
                p.wait()
        if relay is not None:
            relay.stop()
    recs = [json.loads(line) for line in (folder / "ps.jsonl").read_text().splitlines() if line.strip()]
    epochs = [r for r in recs if r.get("event") == "epoch"]
    rounds_ = [r for r in recs if r.get("event") == "round"]
    delivered = [r["delivered_tensor"] for r in rounds_ if r.get("delivered_tensor") is not None]
    return {"arm": f"loopback-{arm}", "run": index, "ok": all(c == 0 for c in codes) and bool(epochs),
            "rounds": len(rounds_), "accuracy": epochs[-1]["accuracy"] if epochs else None,
            "train_loss": epochs[-1]["loss"] if epochs else None,
            "mean_delivered": round(sum(delivered) / len(delivered), 5) if delivered else None,
            "logs": str(folder)}


def _stats(values: list[float]) -> dict:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"n": len(values), "mean": round(statistics.fmean(values), 5), "sd": round(sd, 5),
            "min": round(min(values), 5), "max": round(max(values), 5)}


def _reference_arm(arm: str) -> str:
    """The deterministic arm a noisy arm's gaps are taken to."""
    if arm.startswith("chaos"):
        return "chaos-reliable"
    return arm.replace("lossy", "reliable").replace("policy", "reliable")


def summary(runs: list[dict]) -> dict:
    """Per arm: accuracy and training-loss statistics; gaps to the reliable reference."""
    out: dict = {}
    for arm in dict.fromkeys(r["arm"] for r in runs):
        ref = [r["accuracy"] for r in runs if r["ok"] and r["arm"] == _reference_arm(arm)]
        mine = [r for r in runs if r["arm"] == arm and r["ok"]]
        if not mine:
            out[arm] = {"n": 0}
            continue
        acc = [r["accuracy"] for r in mine]
        out[arm] = {"accuracy": _stats(acc), "train_loss": _stats([r["train_loss"] for r in mine]),
                    "failed": sum(1 for r in runs if r["arm"] == arm and not r["ok"])}
        if not arm.endswith("reliable") and ref:
            gaps = [a - ref[0] for a in acc]
            mean, sd = statistics.fmean(gaps), statistics.stdev(gaps) if len(gaps) > 1 else 0.0
            t = T95.get(len(gaps) - 1, 1.645)
            out[arm]["gap_to_reference"] = {
                "reference": ref[0], "largest_drop": round(-min(gaps), 5),
                "mean": round(mean, 5),
                "mean_lower_95": round(mean - t * sd / math.sqrt(len(gaps)), 5)}
    share = fault_share(runs)
    if share is not None:
        out["fault_share"] = share
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/accuracy_spread.py", description=__doc__.splitlines()[0])
    ap.add_argument("--arms", default="reliable,policy,lossy")
    ap.add_argument("--runs", type=int, default=5, help="runs per arm (the reliable arm: at least 2)")
    ap.add_argument("--reference-runs", type=int, default=None,
                    help="runs of the deterministic arms (reliable, chaos-reliable; default --runs)")
    ap.add_argument("--loss", type=float, default=3.0, help="random loss %% of the lossy arm")
    ap.add_argument("--rounds", type=int, default=120)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", help="JSON lines of every run (default: stdout only)")
    ap.add_argument("--loopback", action="store_true",
                    help="the job on 127.0.0.1 instead (reliable and lossy arms; no root)")
    args = ap.parse_args(argv)
    arms = args.arms.split(",")
    bad_counts = args.runs < 1 or (args.reference_runs is not None and args.reference_runs < 1)
    if bad_counts or any(a not in ("reliable", "policy", "lossy", *CHAOS_ARMS) for a in arms) \
            or (args.loopback and any(a not in ("reliable", "lossy") for a in arms)):
        print("accuracy_spread: error: --runs >= 1, --arms of reliable, policy, lossy, "
              + ", ".join(CHAOS_ARMS) + " (with --loopback: reliable, lossy)", file=sys.stderr)
        return 2
    runs: list[dict] = []
    root = Path(tempfile.mkdtemp(prefix="gradlane-spread-"))
    for arm in arms:
        count = args.runs if not arm.endswith("reliable") or args.reference_runs is None \
            else args.reference_runs
        for i in range(count):
            if arm in CHAOS_ARMS:
                run = chaos_run(arm, args.build, args.seed, root, i)
            elif args.loopback:
                run = loopback_run(arm, args.loss, args.rounds, args.seed, root, i)
            else:
                run = one_run(arm, args.loss, args.build, args.rounds, args.seed, root, i)
            runs.append(run)
            print(json.dumps(run), flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(run) + "\n")
    print(json.dumps({"summary": summary(runs), "seed": args.seed, "rounds": args.rounds,
                      "loss_pct": args.loss}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
