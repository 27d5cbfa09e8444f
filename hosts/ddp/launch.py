"""Start a DDP job on loopback: the gradlane parameter server and N ranks of a training script.

Every rank gets torch.distributed's environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT: init_process_group("gloo") just works) and, with --backend gradlane (the default),
GRADLANE_PS and GRADLANE_FLAGS, which `hosts.ddp.hook.register` reads. --backend gloo starts no
server and sets neither: the same script then all-reduces with gloo (the baseline). Flags the
launcher does not know are the job's transport flags (those of `python -m hosts.ddp.server`).
Exits 0 when every rank did; when one fails, the others and the server are stopped and the
exit status is the failed rank's.
Run: python -m hosts.ddp.launch --ranks 2 [--backend gradlane|gloo] [transport flags] -- SCRIPT [ARGS]
"""
from __future__ import annotations

import argparse
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time

from hosts.cli import run_agent
from hosts.ddp.flags import FLAGS_ENV, PS_ENV, parse_flags
from hosts.errors import ConfigError
from hosts.exchange import job_key

_STOP_GRACE = 5.0
_SERVER_GRACE = 10.0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m hosts.ddp.launch",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, required=True, help="processes (DDP world size)")
    ap.add_argument("--backend", choices=("gradlane", "gloo"), default="gradlane",
                    help="gradlane (default): the hook's transport; gloo: torch's all-reduce")
    ap.add_argument("--log-dir", help="write the server's JSON log (server.jsonl) here")
    return ap


def _free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each still running process (by its PID), then SIGKILL what outlives the grace."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    end = time.monotonic() + _STOP_GRACE
    for p in procs:
        try:
            p.wait(timeout=max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def launch(args: argparse.Namespace, flags: list[str], command: list[str]) -> int:
    """Run the job; the exit status (0, or the first failed process's)."""
    if args.ranks < 1:
        raise ConfigError(f"--ranks {args.ranks} must be at least 1")
    if not command:
        raise ConfigError("no training script: put it after --, e.g. -- examples/ddp_digits.py")
    if args.backend == "gloo" and flags:
        raise ConfigError(f"--backend gloo takes no transport flags ({' '.join(flags)})")
    parse_flags(flags)   # a bad flag is reported here, once, before anything starts
    with tempfile.TemporaryDirectory(prefix="gradlane-ddp-") as tmp:
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port(socket.SOCK_STREAM)),
                   WORLD_SIZE=str(args.ranks))
        env.pop(PS_ENV, None)
        env.pop(FLAGS_ENV, None)
        server: subprocess.Popen | None = None
        if args.backend == "gradlane":
            key = os.path.join(tmp, "job.key")
            job_key.create_key_file(key)
            control_port = _free_port(socket.SOCK_STREAM)
            job_flags = [*flags, "--job-key", key]
            log = os.path.join(args.log_dir, "server.jsonl") if args.log_dir else os.devnull
            server = subprocess.Popen(
                [sys.executable, "-m", "hosts.ddp.server", "--ranks", str(args.ranks),
                 "--port", str(_free_port(socket.SOCK_DGRAM)), "--control-port", str(control_port),
                 "--die-with-parent", "--log", log, *job_flags])
            env.update({PS_ENV: f"127.0.0.1:{control_port}", FLAGS_ENV: shlex.join(job_flags)})
        ranks = [subprocess.Popen([sys.executable, *command],
                                  env=dict(env, RANK=str(r), LOCAL_RANK=str(r)))
                 for r in range(args.ranks)]
        everyone = ranks + ([server] if server is not None else [])
        try:
            while True:
                failed = [(i, p.returncode) for i, p in enumerate(ranks)
                          if p.poll() is not None and p.returncode != 0]
                if server is not None and server.poll() not in (None, 0):
                    failed.append(("the parameter server", server.returncode))
                if failed:
                    who, status = failed[0]
                    name = who if isinstance(who, str) else f"rank {who}"
                    print(f"hosts.ddp.launch: {name} exited with status {status}; stopping the "
                          f"job", file=sys.stderr, flush=True)
                    return status
                if all(p.poll() == 0 for p in ranks):
                    break
                time.sleep(0.05)
            if server is not None:
                try:
                    status = server.wait(timeout=_SERVER_GRACE)
                except subprocess.TimeoutExpired:
                    print("hosts.ddp.launch: the parameter server did not end with the ranks",
                          file=sys.stderr, flush=True)
                    return 1
                return status
            return 0
        finally:
            _stop(everyone)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" in argv:
        cut = argv.index("--")
        ours, command = argv[:cut], argv[cut + 1:]
    else:
        ours, command = argv, []
    args, flags = build_parser().parse_known_args(ours)
    status = {"code": 0}

    def body() -> None:
        status["code"] = launch(args, flags, command)

    code = run_agent(body, prog="hosts.ddp.launch")
    return code or status["code"]


if __name__ == "__main__":
    sys.exit(main())
