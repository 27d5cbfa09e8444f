"""`python -m topo.check_env` (`make check-env`): which toolchain runs, and what is missing.

Exit 0 when `make run` can work (the tools it needs are present), 1 otherwise.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

from topo.shaping import probe_qdiscs
from topo.errors import ToolchainError
from topo.toolchain import (BUILD_NAMES, PER_PACKET_LEVELS, Tool, compiler_tool, switch_build, switch_log_level,
                            switch_tool)


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    what: str
    ok: bool
    detail: str
    required: bool = True
    warn: bool = False  # present, but a run will suffer: printed as WARN


def _module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _runs(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _embedded_ready(sub: str) -> bool:
    return _module({"compile": "p4target.compiler.cli", "switch": "p4target.switch.cli"}[sub])


def switch_log_checks(sw: Tool) -> list[Check]:
    """Which switch build runs, and whether its log level will trace every packet."""
    build = switch_build(sw)
    detail = BUILD_NAMES[build]
    if build.startswith("bmv2") and not os.path.basename(sw.argv[0]).endswith("_grpc"):
        detail += "; Thrift only, no P4Runtime: the controller needs simple_switch_grpc"
    out = [Check("switch build", True, detail, required=False)]
    try:
        level = switch_log_level()
    except ToolchainError as exc:
        return [*out, Check("switch log level", False, str(exc))]
    if level not in PER_PACKET_LEVELS:
        detail = f"-L {level} (SWITCH_LOG): per-packet tracing off"
        return [*out, Check("switch log level", True, detail, required=False)]
    if build == "bmv2-performance":
        detail = f"-L {level} (SWITCH_LOG), but this build has no per-packet log: nothing is traced"
        return [*out, Check("switch log level", True, detail, required=False)]
    detail = (f"-L {level} (SWITCH_LOG): the switch logs every packet; "
              + ("BMv2's default build then forwards many times fewer packets and loses training "
                 "rounds (SWITCH_LOG=warn turns it off)"
                 if build == "bmv2-default" else "slower forwarding and a log that rotates at its cap"))
    return [*out, Check("switch log level", True, detail, required=False, warn=True)]


def checks() -> list[Check]:
    """Everything `make run` depends on, checked on this machine."""
    out: list[Check] = []
    comp, sw = compiler_tool(), switch_tool()
    comp_ok = shutil.which(comp.argv[0]) is not None and (comp.kind != "embedded" or _embedded_ready("compile"))
    sw_ok = shutil.which(sw.argv[0]) is not None and (sw.kind != "embedded" or _embedded_ready("switch"))
    out.append(Check("P4 compiler", comp_ok, comp.describe()))
    out.append(Check("P4 switch", sw_ok, sw.describe()))
    out.extend(switch_log_checks(sw) if sw_ok else [])
    root = os.geteuid() == 0
    out.append(Check("root", root, "running as root" if root else "Mininet needs root (run with sudo)"))
    out.append(Check("mininet module", _module("mininet.net"), "pip mininet in this interpreter"))
    for tool in ("mnexec", "ip", "tc", "ethtool"):
        path = shutil.which(tool)
        out.append(Check(tool, path is not None, path or "missing (scripts/setup.sh installs it)"))
    netns = root and _runs(["unshare", "--net", "true"])
    out.append(Check("network namespaces", netns, "unshare --net works" if netns else "cannot create one"))
    qdiscs = probe_qdiscs() if root else {"netem": False, "tbf": False}
    out.append(Check("tc rate limits (tbf/htb)", qdiscs["tbf"], "link bandwidth limits", required=False))
    out.append(Check("tc netem", qdiscs["netem"],
                     "kernel delay/loss" if qdiscs["netem"] else
                     "absent: link delay/loss/bursts made by the embedded switch (--impair)"
                     + ("" if sw.kind == "embedded" else "; the real switch cannot, so none"), required=False))
    for name, module in (("controller daemon", "controller.daemon"), ("gradctl", "controller.gradctl"),
                         ("parameter server agent", "hosts.ps"), ("worker agent", "hosts.worker"),
                         ("background traffic agent", "hosts.background")):
        out.append(Check(name, _module(module), f"python -m {module}"))
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the report; exit 1 if a required item is missing."""
    results = checks()
    width = max(len(c.what) for c in results)
    for c in results:
        mark = "WARN" if c.warn else "ok  " if c.ok else ("MISS" if c.required else "note")
        print(f"[{mark}] {c.what:<{width}}  {c.detail}")
    missing = [c.what for c in results if c.required and not c.ok]
    comp, sw = compiler_tool(), switch_tool()
    print(f"toolchain: compiler {comp.kind}, switch {sw.kind} ({switch_build(sw)})")
    if missing:
        print(f"missing: {', '.join(missing)}")
        return 1
    print("everything `make run` needs is present")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
