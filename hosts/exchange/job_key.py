"""The job's secret: a key file readable by its owner only, shared by the PS and the workers.

Whoever starts a job (topo, the experiments, or a user by hand) creates the file once with
:func:`create_key_file` (or lets the PS create it) and hands its path to the PS and every worker
(`--job-key FILE`). The key itself never appears on the wire or on a command line.
"""
from __future__ import annotations

import os
import secrets
import stat

from hosts.errors import ConfigError

KEY_BYTES = 32
MIN_KEY_BYTES = 16
_MAX_FILE_BYTES = 4096


def create_key_file(path: str) -> bytes:
    """Write a fresh random key to `path` (created exclusively, mode 0600, never through a
    symlink); the key. ConfigError if the file exists or cannot be created."""
    key = secrets.token_bytes(KEY_BYTES)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise ConfigError(f"cannot create job key {path}: {exc.strerror}") from None
    with os.fdopen(fd, "w") as fh:
        fh.write(key.hex() + "\n")
    return key


def read_key_file(path: str) -> bytes:
    """The key in `path`: hex text of at least 16 bytes, in a regular file that is not a symlink,
    belongs to the effective user, and that neither group nor others may read or write.
    ConfigError naming what is wrong."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        why = "is a symlink" if os.path.islink(path) else exc.strerror
        raise ConfigError(f"--job-key {path}: {why}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"--job-key {path} is not a regular file")
        if info.st_uid != os.geteuid():
            raise ConfigError(f"--job-key {path} belongs to uid {info.st_uid}, not to this user "
                              f"(uid {os.geteuid()}): another user could have planted it; remove it")
        if info.st_mode & 0o077:
            raise ConfigError(f"--job-key {path} is accessible to others (mode "
                              f"{stat.S_IMODE(info.st_mode):04o}); chmod 600 it")
        text = fh.read(_MAX_FILE_BYTES + 1)
    try:
        key = bytes.fromhex(text.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(text) > _MAX_FILE_BYTES or len(key) < MIN_KEY_BYTES:
        raise ConfigError(f"--job-key {path} does not hold a key (hex text of at least "
                          f"{MIN_KEY_BYTES} bytes)")
    return key


def load_or_create(path: str, create: bool) -> bytes:
    """The key of `path`; when `create` and the file does not exist yet, a fresh one in it. A
    key this call created is used as created (never read back: the name could have been
    replaced since); a file found in place is read with every check of `read_key_file`."""
    if create and not os.path.lexists(path):
        try:
            return create_key_file(path)
        except ConfigError:
            if not os.path.lexists(path):   # not a concurrent creation: a real failure
                raise
    return read_key_file(path)


def require_flag(path: str | None) -> None:
    """ConfigError unless an agent was given --job-key (a job without a shared key would let
    anyone who speaks first join it)."""
    if path is None:
        raise ConfigError("--job-key FILE is required: the job's secret, the same file for the "
                          "PS (which creates it when missing) and every worker")
