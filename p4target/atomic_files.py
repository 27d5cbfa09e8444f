"""Output files written whole or not at all: each through a temporary file beside it that is
renamed into place, so a reader never sees half a file and a failure keeps the old one.

The one atomic writer of the project (the controller's state file, run records, switch stats,
experiment state and policies use it too; p4target is the layer everyone may import). The
temporary is created exclusively under an unpredictable name (mkstemp: O_EXCL, so a symlink
planted beside the target is never followed), and the rename replaces a symlink at the target
itself instead of writing through it. The permissions are set on the open descriptor
(fchmod) before the data is written, never by name; and the rename happens only if the
temporary's name still is the file written (same device and inode), so a temporary moved away
and replaced by a symlink in a folder others can write is an error, not a file put in place.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable, Union

from p4target.errors import P4TargetError

PathLike = Union[str, "os.PathLike[str]"]


class AtomicWriteError(P4TargetError, OSError):
    """A file could not be written (the message names it); also an OSError for callers that
    treat an unwritable file like any other I/O failure."""


def new_file_mode() -> int:
    """Permissions a newly created file gets under the current umask (mkstemp uses 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _sync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _check_unchanged(tmp: str, identity: tuple[int, int], path: PathLike) -> None:
    """AtomicWriteError unless the name `tmp` still is the file this writer created: another user
    who may write the folder could have moved it away and put a symlink in its place."""
    try:
        info = os.lstat(tmp)
    except OSError as exc:
        raise AtomicWriteError(f"cannot write {path}: its temporary {tmp} went away ({exc.strerror})") from None
    if (info.st_dev, info.st_ino) != identity:
        raise AtomicWriteError(f"cannot write {path}: its temporary {tmp} was replaced while being written "
                               "(another user can write that folder)")


def write_files(files: Iterable[tuple[PathLike, bytes]], durable: bool = False,
                mode: int | None = None) -> None:
    """Write every (path, data) or none: stage all as temporaries, then rename them into place.

    `durable`: flush each file and its folder to disk (state that must survive a power cut).
    `mode`: permissions of the new files (default: 0666 under the umask).
    Raises AtomicWriteError naming the file that could not be written; the staged temporaries
    are removed. Once renaming has begun, a failure can leave earlier files replaced (a
    rename is the only step that can then fail, and it rarely does on one file system).
    """
    staged: list[tuple[str, PathLike]] = []
    written: dict[str, tuple[int, int]] = {}  # temporary -> (st_dev, st_ino) of what was written
    mode = new_file_mode() if mode is None else mode
    try:
        for path, data in files:
            target = Path(path)
            if target.is_dir():
                raise AtomicWriteError(f"cannot write {path}: Is a directory")
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                           dir=str(target.parent))
            except OSError as exc:
                raise AtomicWriteError(f"cannot write {path}: {exc.strerror}") from None
            staged.append((tmp, path))
            try:
                with os.fdopen(fd, "wb") as fh:
                    # on the descriptor, never by path: the name could be swapped for a symlink
                    # before a chmod by name, which would then change the file it points to
                    os.fchmod(fh.fileno(), mode)
                    info = os.fstat(fh.fileno())
                    written[tmp] = (info.st_dev, info.st_ino)
                    fh.write(data)
                    if durable:
                        fh.flush()
                        os.fsync(fh.fileno())
            except OSError as exc:
                raise AtomicWriteError(f"cannot write {path}: {exc.strerror}") from None
        while staged:
            tmp, path = staged[0]
            _check_unchanged(tmp, written[tmp], path)
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise AtomicWriteError(f"cannot write {path}: {exc.strerror}") from None
            staged.pop(0)
            if durable:
                _sync_dir(str(Path(path).parent))
    finally:
        for tmp, _ in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def write_file(path: PathLike, data: bytes, durable: bool = False,
               mode: int | None = None) -> None:
    """Write one file atomically (see :func:`write_files`)."""
    write_files([(path, data)], durable, mode)


def write_text(path: PathLike, text: str, durable: bool = False) -> None:
    """Write one UTF-8 text file atomically (see :func:`write_files`)."""
    write_files([(path, text.encode())], durable)
