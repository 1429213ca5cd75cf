"""Crash-safe file writes and the store's inter-process lock.

Every file the store writes goes through `atomic_write`: a temporary file in the same
directory, fsync, rename over the target, fsync of the directory. A reader (or a crash)
therefore sees the old file or the new one, never half of one. Temporary files share
the `.tmp-` prefix and are only ever written while the lock is held, so whoever holds
the lock may delete any it finds: they were left by a writer that died.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from assembler.errors import MemoryStoreError

TEMP_PREFIX: Final = ".tmp-"


def fsync_directory(directory: Path) -> None:
    """Make renames and unlinks in `directory` durable (a no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, sync_directory: bool = True) -> None:
    """Replace `path` with `data` so that no reader ever sees a partial file.

    The file is created with mode 0666 minus the umask, like any file the user makes,
    so records stay readable by the tools a person reviews them with.
    """
    temp = path.with_name(f"{TEMP_PREFIX}{path.name}.{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    if sync_directory:
        fsync_directory(path.parent)


@contextlib.contextmanager
def exclusive_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive `flock` on `lock_path` (created if missing) for the block.

    `flock` is released by the kernel when the process dies, so a crashed writer
    never leaves the store locked.
    """
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as e:
        raise MemoryStoreError(
            f"cannot open the memory store lock {lock_path}: {e.strerror}"
        ) from e
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
