"""The controller's state file: read strictly, written atomically, the previous one kept.

After a restart the state file is the truth (policy, slot assignment, job rounds, PCN
overrides). So a file that is not JSON or not of the expected shape stops the start with a
one-line error naming it, instead of being ignored (which would sync an empty policy). Writes go
through the project's atomic writer (p4target.atomic_files: an exclusive, unpredictable temporary
file flushed to disk and renamed over the old file), whose content is kept as ``<name>.bak``. A
state path that is a symlink is refused: the daemon runs as root, and the folder may be shared.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from controller import errors
from controller.documents import DocumentError, loads_json, read_text, short
from controller.policy import parse_policy
from p4target.atomic_files import write_file

MAX_STATE_BYTES = 4 << 20
_KEYS = {"policy", "slots", "job_states", "ecn_overrides", "pcn_thresholds", "adaptations", "epochs"}
_EPOCH_MAX = (1 << 32) - 1


def backup_path(path: Path) -> Path:
    """Where the previous state is kept."""
    return path.with_name(path.name + ".bak")


def _shape(msg: str) -> ValueError:
    return ValueError(msg)


def _is_int(v: Any, lo: int = 0, hi: int = (1 << 64) - 1) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def check_shape(doc: Any) -> None:
    """Raise ValueError naming the first part of ``doc`` that is not a state document."""
    if not isinstance(doc, dict):
        raise _shape(f"must be a JSON object, got {short(doc)}")
    unknown = sorted(str(k) for k in doc if k not in _KEYS)
    if unknown:
        raise _shape(f"unknown field {short(unknown[0])}")
    try:
        parse_policy(doc.get("policy"), allow_empty=True)
    except errors.PolicyError as exc:
        raise _shape(f"policy: {exc}") from None
    slots = doc.get("slots", [])
    if not isinstance(slots, list):
        raise _shape("slots: must be a list")
    for i, item in enumerate(slots):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list)
                and len(item[0]) == 5 and all(_is_int(x) for x in item[0]) and _is_int(item[1])):
            raise _shape(f"slots[{i}]: must be [[job, layer lo, layer hi, mag lo, mag hi], slot]")
    states = doc.get("job_states", {})
    if not isinstance(states, dict):
        raise _shape("job_states: must be an object")
    for job, st in states.items():
        if not (str(job).isdigit() and isinstance(st, dict) and set(st) <= {"round", "critical"}
                and (st.get("round") is None or _is_int(st.get("round")))
                and isinstance(st.get("critical", False), bool)):
            raise _shape(f"job_states.{short(job)}: must be {{\"round\": N, \"critical\": bool}}")
    overrides = doc.get("ecn_overrides", {})
    if not isinstance(overrides, dict):
        raise _shape("ecn_overrides: must be an object")
    for sw, ports in overrides.items():
        if not isinstance(ports, dict):
            raise _shape(f"ecn_overrides.{short(sw)}: must be an object")
        for port, pair in ports.items():
            if not (str(port).isdigit() and isinstance(pair, list) and len(pair) == 2
                    and all(_is_int(x) for x in pair)):
                raise _shape(f"ecn_overrides.{short(sw)}.{short(port)}: must be [normal, pcn]")
    thresholds = doc.get("pcn_thresholds", {})
    if not isinstance(thresholds, dict):
        raise _shape("pcn_thresholds: must be an object")
    for job, value in thresholds.items():
        if not (str(job).isdigit() and _is_int(value, 1, 1 << 32)):
            raise _shape(f"pcn_thresholds.{short(job)}: must be a positive integer")
    adaptations = doc.get("adaptations", [])
    if not (isinstance(adaptations, list) and all(isinstance(a, dict) for a in adaptations)):
        raise _shape("adaptations: must be a list of objects")
    _check_epochs(doc.get("epochs", {}))


def _check_epochs(epochs: Any) -> None:
    """Each job's {"epoch": N >= 1, "effective_round": R, "history": [{epoch, effective_round,
    by}, ...]}, its history never going backwards and ending at its epoch."""
    if not isinstance(epochs, dict):
        raise _shape("epochs: must be an object")
    for job, e in epochs.items():
        where = f"epochs.{short(job)}"
        if not (str(job).isdigit() and isinstance(e, dict) and set(e) <= {"epoch", "effective_round", "history"}
                and _is_int(e.get("epoch"), 1, _EPOCH_MAX) and _is_int(e.get("effective_round"), 0, _EPOCH_MAX)
                and isinstance(e.get("history", []), list)):
            raise _shape(f"{where}: must be {{\"epoch\": N >= 1, \"effective_round\": N, \"history\": [...]}}")
        history = e.get("history", [])
        for i, h in enumerate(history):
            if not (isinstance(h, dict) and set(h) == {"epoch", "effective_round", "by"}
                    and _is_int(h["epoch"], 1, _EPOCH_MAX) and _is_int(h["effective_round"], 0, _EPOCH_MAX)
                    and isinstance(h["by"], str) and len(h["by"]) <= 32):
                raise _shape(f"{where}.history[{i}]: must be {{epoch, effective_round, by}}")
            if i and h["epoch"] < history[i - 1]["epoch"]:
                raise _shape(f"{where}.history[{i}]: epoch {h['epoch']} goes backwards")
        if history and history[-1]["epoch"] != e["epoch"]:
            raise _shape(f"{where}: epoch {e['epoch']} is not the last of its history")


def refuse_symlink(path: Path) -> None:
    """ConfigError if ``path`` is a symlink (it would make the daemon read or write elsewhere)."""
    if path.is_symlink():
        raise errors.ConfigError(f"state file {path} is a symlink; give the path of a regular "
                                 "file (the daemon never follows one)")


def read_state(path: Path) -> dict[str, Any] | None:
    """The state document of ``path``, or None when there is no file; ConfigError if corrupt
    or a symlink."""
    refuse_symlink(path)
    if not path.exists():
        return None
    try:
        doc = loads_json(read_text(path, MAX_STATE_BYTES))
    except DocumentError as exc:
        raise errors.ConfigError(f"state file {path} is corrupt ({exc}); fix it, restore "
                                 f"{backup_path(path).name}, or remove it to start empty") from None
    try:
        check_shape(doc)
    except ValueError as exc:
        raise errors.ConfigError(f"state file {path} has the wrong shape ({exc}); fix it, restore "
                                 f"{backup_path(path).name}, or remove it to start empty") from None
    return doc


def _old_content(path: Path) -> bytes | None:
    """The current bytes of ``path`` (read without following a symlink), None if absent."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read(MAX_STATE_BYTES + 1)


def write_state(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` atomically and durably; the old content becomes
    ``<name>.bak``. ConfigError if ``path`` is a symlink.

    Writing the same content again changes nothing (the backup stays the previous state).
    """
    refuse_symlink(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode()
    try:
        old = _old_content(path)
    except OSError as exc:
        raise errors.ConfigError(f"state file {path}: {exc.strerror}") from None
    if old == data:
        return
    if old is not None:
        write_file(backup_path(path), old, durable=True)
    write_file(path, data, durable=True)
