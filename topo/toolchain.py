"""Which P4 compiler and switch run: the real ones (p4c-bm2-ss, simple_switch_grpc) or embedded.

The Makefile exports `P4C` and `SWITCH`; without them the real tools are used when on PATH,
else `python -m p4target compile|switch` with this interpreter. `SWITCH_LOG` picks the switches'
log level (`-L`), warn unless asked: at debug or trace both switches log every packet.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass

from p4target.switch.switch_log import rotated_name
from topo.errors import ToolchainError


@dataclass(frozen=True)
class Tool:
    """A command line prefix and whether it is the real tool or the embedded target."""

    argv: tuple[str, ...]
    kind: str  # "real" | "embedded" | "custom"

    def describe(self) -> str:
        """`kind: command` for messages."""
        return f"{self.kind}: {shlex.join(self.argv)}"


def _resolve(env_var: str, real_name: str, embedded_sub: str) -> Tool:
    given = os.environ.get(env_var, "").strip()
    embedded = (sys.executable, "-m", "p4target", embedded_sub)
    if given:
        argv = tuple(shlex.split(given))
        if os.path.basename(argv[0]) == real_name:
            return Tool(argv, "real")
        if argv[1:3] == ("-m", "p4target"):
            return Tool(argv, "embedded")
        return Tool(argv, "custom")
    path = shutil.which(real_name)
    if path:
        return Tool((path,), "real")
    return Tool(embedded, "embedded")


def switch_tool() -> Tool:
    """The switch command (`$SWITCH`, else simple_switch_grpc on PATH, else embedded)."""
    return _resolve("SWITCH", "simple_switch_grpc", "switch")


def compiler_tool() -> Tool:
    """The compiler command (`$P4C`, else p4c-bm2-ss on PATH, else embedded)."""
    return _resolve("P4C", "p4c-bm2-ss", "compile")


# -- the switch's own log (`make run SWITCH_LOG=debug`) ---------------------------------------
SWITCH_LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")  # BMv2's -L values
DEFAULT_SWITCH_LOG = "warn"  # BMv2's own default is trace: a full trace of every packet
PER_PACKET_LEVELS = ("trace", "debug")  # both switches log every packet at these levels
LOG_FILE_MAX_BYTES = 32 * 1024 * 1024  # --log-file-max-size: each switch log rotates here ...
LOG_FILE_BACKUPS = 1  # ... keeping one rotated file: at most 64 MiB per switch on disk
# measured with gradlane.json on BMv2 1.15.5's default build (p4target/README.md, "End to end")
TRACE_COST = ("BMv2 writes ~9 KB per packet at debug, ~35 KB at trace, and forwards far fewer "
              "packets: `make demo` ran rounds half as fast at debug and lost or late-closed them at trace")


def switch_log_level() -> str:
    """The switches' `-L` level: `$SWITCH_LOG` (the Makefile's knob), default warn.

    Raises ToolchainError naming the bad value and the accepted ones."""
    level = os.environ.get("SWITCH_LOG", "").strip().lower() or DEFAULT_SWITCH_LOG
    if level not in SWITCH_LOG_LEVELS:
        raise ToolchainError(f"SWITCH_LOG={level!r} is not a switch log level (one of {', '.join(SWITCH_LOG_LEVELS)})")
    return level


def switch_log_files(log: str, tool: Tool) -> list[str]:
    """The files a switch started with `--log-file <log>` writes its log lines to, the live one
    first. BMv2 1.15.5 (its bundled spdlog) appends `.txt`: `s1.log.txt`, rotated to `s1.log.1.txt`;
    the embedded switch writes `s1.log` itself and rotates to `s1.1.log`, as today's spdlog."""
    if tool.kind == "embedded":
        return [rotated_name(log, index) for index in range(LOG_FILE_BACKUPS + 1)]
    return [f"{log}.txt", *(f"{log}.{index}.txt" for index in range(1, LOG_FILE_BACKUPS + 1))]


def switch_log_note(level: str, log_pattern: str) -> str:
    """One line for a run's output: where the switch log goes, and what tracing costs."""
    cap = f"rotated at {LOG_FILE_MAX_BYTES >> 20} MiB, at most {(LOG_FILE_BACKUPS + 1) * LOG_FILE_MAX_BYTES >> 20} MiB per switch"
    if level in PER_PACKET_LEVELS:
        return (f"switch log: level {level}, every packet traced to {log_pattern} ({cap}); "
                f"{TRACE_COST}; SWITCH_LOG=warn turns it off")
    return (f"switch log: level {level}, per-packet tracing off; {log_pattern} ({cap}); "
            f"`make run SWITCH_LOG=debug` traces every packet ({TRACE_COST})")


# -- which BMv2 build runs --------------------------------------------------------------------
# A format string of BMv2's per-packet trace (BMLOG_DEBUG_PKT): present where the logging macros
# are compiled in (the default build), absent from the performance build
# (`--disable-logging-macros`), which cannot trace packets whatever -L says.
PACKET_TRACE_MARKER = b"Processing packet received on port"


def _linked_libraries(path: str) -> list[str]:
    """The BMv2 shared libraries `path` loads (ldd), where the switch code may live instead."""
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    libs = []
    for line in out.splitlines():
        parts = line.split("=>")
        if len(parts) == 2 and any(name in parts[0] for name in ("libbm", "libsimpleswitch")):
            libs.append(parts[1].split("(")[0].strip())
    return [lib for lib in libs if lib and os.path.isfile(lib)]


def _contains(path: str, marker: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            tail = b""
            while chunk := f.read(1 << 20):
                if marker in tail + chunk:
                    return True
                tail = chunk[-len(marker):]
    except OSError:
        return False
    return False


def switch_build(tool: Tool) -> str:
    """"embedded", "bmv2-default" (per-packet tracing compiled in), "bmv2-performance" (not),
    or "unknown" (a wrapper, or a binary that is not found)."""
    if tool.kind == "embedded":
        return "embedded"
    path = shutil.which(tool.argv[0])
    if path is None or not os.path.basename(path).startswith("simple_switch"):
        return "unknown"
    if any(_contains(f, PACKET_TRACE_MARKER) for f in (path, *_linked_libraries(path))):
        return "bmv2-default"
    return "bmv2-performance"


BUILD_NAMES = {"embedded": "the embedded switch (python -m p4target switch)",
               "bmv2-default": "BMv2, default build (per-packet trace logging compiled in)",
               "bmv2-performance": "BMv2, performance build (per-packet logging compiled out)",
               "unknown": "unknown (neither simple_switch* by name nor the embedded switch)"}
