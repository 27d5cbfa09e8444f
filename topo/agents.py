"""Command lines of the other packages' processes, in one place: the controller daemon, `gradctl`,
and the host agents (parameter server, workers, background traffic).

topo depends on these interfaces only; when one changes, this module is the one to adapt.
"""
from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass

from topo.errors import ToolchainError

CONTROLLER_MODULE = "controller.daemon"
GRADCTL_MODULE = "controller.gradctl"
PS_MODULE = "hosts.ps"
WORKER_MODULE = "hosts.worker"
BACKGROUND_MODULE = "hosts.background"
# A controller log line that says every switch is programmed.
CONTROLLER_READY = r"\b(ready|all switches programmed)\b"


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
                    listen: str | None = None) -> list[str]:
    """The controller daemon's command line."""
    argv = [sys.executable, "-m", CONTROLLER_MODULE, "--topology", topology, "--p4info", p4info,
            "--bmv2-json", bmv2_json]
    if policy:
        argv += ["--policy", policy]
    if listen:
        argv += ["--listen", listen]
    return argv


def gradctl_argv(*args: str, listen: str | None = None) -> list[str]:
    """A `gradctl` command line (talking to the daemon at `listen`, else its default)."""
    argv = [sys.executable, "-m", GRADCTL_MODULE]
    if listen:
        argv += ["--controller", listen]
    return argv + list(args)


@dataclass(frozen=True)
class JobSpec:
    """One training job over the network."""

    job_id: int = 1
    rounds: int = 20
    workers: int = 3
    extra_ps: tuple[str, ...] = ()
    extra_worker: tuple[str, ...] = ()


def ps_argv(job: JobSpec, topology: str) -> list[str]:
    """The parameter server's command line."""
    return [sys.executable, "-u", "-m", PS_MODULE, "--workers", str(job.workers), "--rounds", str(job.rounds),
            "--job", str(job.job_id), "--topology", topology, *job.extra_ps]


def worker_argv(job: JobSpec, rank: int, ps_ip: str, topology: str) -> list[str]:
    """Worker `rank`'s command line (JSON lines on stdout)."""
    return [sys.executable, "-u", "-m", WORKER_MODULE, "--rank", str(rank), "--ps", ps_ip,
            "--workers", str(job.workers), "--rounds", str(job.rounds), "--job", str(job.job_id),
            "--topology", topology, *job.extra_worker]
