"""Command lines of the other packages' processes, in one place: the controller daemon, `gradctl`,
and the host agents (parameter server, workers, background traffic).

topo depends on these interfaces only; when one changes, this module is the one to adapt.
"""
from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path
from dataclasses import dataclass

from topo.errors import ToolchainError

CONTROLLER_MODULE = "controller.daemon"
GRADCTL_MODULE = "controller.gradctl"
PS_MODULE = "hosts.ps"
WORKER_MODULE = "hosts.worker"
BACKGROUND_MODULE = "hosts.background"
DDP_SERVER_MODULE = "hosts.ddp.server"
# The DDP example every `--ddp` job runs unless told otherwise; it takes --steps and --model.
DDP_EXAMPLE = str(Path(__file__).resolve().parents[1] / "examples" / "ddp_digits.py")
DDP_MASTER_PORT = 29500   # torch.distributed's rendezvous (TCPStore) on rank 0's host
# Controller log lines: every switch programmed / some could not be programmed.
CONTROLLER_READY = r"\ball switches programmed\b"
CONTROLLER_FAILED = r"switches not programmed: .*"


def available(module: str) -> bool:
    """True if `module` can be imported by this interpreter."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(module: str, what: str) -> None:
    """Raise ToolchainError naming `what` when `module` is missing."""
    if not available(module):
        raise ToolchainError(f"{what} is not available (python -m {module} missing)")


def controller_argv(topology: str, p4info: str, bmv2_json: str, policy: str | None,
                    log_dir: str, pki: str | None = None, ecn_depth: str = "queue") -> list[str]:
    """The controller daemon's command line; its socket, PID file and state live in `log_dir`.
    `pki`: the run's certificate folder (topo.pki) the daemon connects to the switches with;
    None: the switches run without TLS (`--plaintext`). `ecn_depth`: its --ecn-depth."""
    argv = [sys.executable, "-u", "-m", CONTROLLER_MODULE, "--topology", topology, "--p4info", p4info,
            "--bmv2-json", bmv2_json, "--listen", controller_socket(log_dir),
            "--pid-file", f"{log_dir}/controller.pid",
            "--state-file", controller_state_file(topology, log_dir)]
    argv += ["--pki", pki] if pki else ["--plaintext"]
    if policy:
        argv += ["--policy", policy]
    if ecn_depth != "queue":
        argv += ["--ecn-depth", ecn_depth]
    return argv


def controller_state_file(topology: str, log_dir: str) -> str:
    """The controller's state file for a topology: the truth across daemon restarts in one run."""
    return f"{log_dir}/{Path(topology).name.split('.')[0]}.controller.json"


def controller_socket(log_dir: str) -> str:
    """The unix socket gradctl talks to for a run logging to `log_dir`."""
    return f"{log_dir}/controller.sock"


def gradctl_argv(*args: str, socket: str | None = None) -> list[str]:
    """A `gradctl` command line (talking to the daemon's unix socket `socket`, else its default)."""
    argv = [sys.executable, "-m", GRADCTL_MODULE]
    if socket:
        argv += ["--socket", socket]
    return argv + list(args)


@dataclass(frozen=True)
class JobSpec:
    """One training job over the network."""

    job_id: int = 1
    rounds: int = 20
    workers: int = 3
    extra_ps: tuple[str, ...] = ()
    extra_worker: tuple[str, ...] = ()
    group: int = 0    # which host group (PS and its workers) of the topology runs it
    controller: str | None = None   # the controller's socket: agents follow its policy for the job
    # A PyTorch DDP script the job runs instead of the gradlane agents: one rank per worker host,
    # its gradients through the hook (hosts.ddp) to hosts.ddp.server on the PS host.
    ddp_script: str | None = None
    ddp_model: str | None = None


def _controller_args(job: JobSpec) -> list[str]:
    return ["--controller", job.controller] if job.controller else []


def ps_argv(job: JobSpec, key_file: str) -> list[str]:
    """The parameter server's command line (JSON lines on stdout); `key_file` holds the job's
    secret (hosts.exchange.job_key)."""
    return [sys.executable, "-u", "-m", PS_MODULE, "--workers", str(job.workers), "--rounds", str(job.rounds),
            "--job", str(job.job_id), "--job-key", key_file, "--die-with-parent",
            *_controller_args(job), *job.extra_ps]


def worker_argv(job: JobSpec, rank: int, ps_ip: str, key_file: str) -> list[str]:
    """Worker `rank`'s command line (JSON lines on stdout)."""
    return [sys.executable, "-u", "-m", WORKER_MODULE, "--rank", str(rank), "--ps", ps_ip,
            "--workers", str(job.workers), "--rounds", str(job.rounds), "--job", str(job.job_id),
            "--job-key", key_file, "--die-with-parent", *_controller_args(job), *job.extra_worker]


def ddp_server_argv(job: JobSpec, key_file: str, bind: str) -> list[str]:
    """The DDP parameter server's command line (JSON lines on stdout): the job's transport flags
    (its `extra_ps`) and key; it listens on `bind`."""
    return [sys.executable, "-u", "-m", DDP_SERVER_MODULE, "--ranks", str(job.workers), "--bind", bind,
            "--job", str(job.job_id), "--job-key", key_file, "--die-with-parent", *job.extra_ps]


def ddp_rank_argv(job: JobSpec) -> list[str]:
    """One rank of the job's DDP script: `--steps` is the job's rounds (one exchange per step)."""
    assert job.ddp_script is not None
    model = ["--model", job.ddp_model] if job.ddp_model else []
    return [sys.executable, "-u", job.ddp_script, "--steps", str(job.rounds), *model]


def ddp_rank_env(job: JobSpec, rank: int, master_ip: str, interface: str, ps: str,
                 key_file: str) -> dict[str, str]:
    """What a rank reads: torch.distributed's rendezvous at rank 0's host (gloo bound to the
    host's own interface, not the name its hostname resolves to) and the hook's server and flags."""
    from hosts.ddp.flags import FLAGS_ENV, PS_ENV   # torch-free: the hook itself imports torch
    flags = ["--job", str(job.job_id), "--job-key", key_file, *job.extra_worker]
    return {"MASTER_ADDR": master_ip, "MASTER_PORT": str(DDP_MASTER_PORT), "WORLD_SIZE": str(job.workers),
            "RANK": str(rank), "LOCAL_RANK": "0", "GLOO_SOCKET_IFNAME": interface,
            PS_ENV: ps, FLAGS_ENV: shlex.join(flags)}


# Agent flags that set bounds themselves: with any of them, topo runs the agents on their flags.
BOUND_FLAGS = ("--bound", "--layer-bounds", "--pull-bound")
# ltp with nothing allowed to go missing: push bound 0, LTP's reliable pull, and no deadline
# that could close a round early. Every value arrives, so a run is the same, bit for bit, for
# the same --seed whatever the packets' timing: the loss-free reference of the accuracy tests.
RELIABLE_FLAGS = ("--bound", "0", "--reliable-pull", "--deadline", "fixed", "--deadline-ms", "600000")

BACKGROUND_PORT = 5001


def background_sink_argv(port: int = BACKGROUND_PORT) -> list[str]:
    """A TCP sink for background flows."""
    return [sys.executable, "-u", "-m", BACKGROUND_MODULE, "sink", "--port", str(port), "--die-with-parent"]


def background_flows_argv(dst: str, flows: int, duration: float, cc: str = "reno",
                          port: int = BACKGROUND_PORT) -> list[str]:
    """Long-lived ECN-capable TCP flows towards `dst`."""
    return [sys.executable, "-u", "-m", BACKGROUND_MODULE, "flows", "--flows", str(flows), "--dst", dst,
            "--port", str(port), "--duration", f"{duration:g}", "--cc", cc, "--ecn", "--die-with-parent"]
