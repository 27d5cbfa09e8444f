"""Output files written whole or not at all: each through a temporary file beside it that is
renamed into place, so a reader never sees half a file and a failure keeps the old one."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable, Union

from p4target.errors import P4TargetError

PathLike = Union[str, "os.PathLike[str]"]


def new_file_mode() -> int:
    """Permissions a newly created file gets under the current umask (mkstemp uses 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_files(files: Iterable[tuple[PathLike, bytes]]) -> None:
    """Write every (path, data) or none: stage all as temporaries, then rename them into place.

    Raises P4TargetError naming the file that could not be written; the staged temporaries
    are removed. Once renaming has begun, a failure can leave earlier files replaced (a
    rename is the only step that can then fail, and it rarely does on one file system).
    """
    staged: list[tuple[str, PathLike]] = []
    mode = new_file_mode()
    try:
        for path, data in files:
            target = Path(path)
            if target.is_dir():
                raise P4TargetError(f"cannot write {path}: Is a directory")
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                           dir=str(target.parent))
            except OSError as exc:
                raise P4TargetError(f"cannot write {path}: {exc.strerror}") from None
            staged.append((tmp, path))
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.chmod(tmp, mode)
            except OSError as exc:
                raise P4TargetError(f"cannot write {path}: {exc.strerror}") from None
        while staged:
            tmp, path = staged[0]
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise P4TargetError(f"cannot write {path}: {exc.strerror}") from None
            staged.pop(0)
    finally:
        for tmp, _ in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def write_file(path: PathLike, data: bytes) -> None:
    """Write one file atomically (see :func:`write_files`)."""
    write_files([(path, data)])
