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
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from assembler.errors import MemoryStoreError
from assembler.files import atomic_write as write_file

TEMP_PREFIX: Final = ".tmp-"


def atomic_write(path: Path, data: bytes, *, sync_directory: bool = True) -> None:
    """`assembler.files.atomic_write` with the store's temp-file prefix, which the
    store's cleanup recognises."""
    write_file(path, data, sync_directory=sync_directory, temp_prefix=TEMP_PREFIX)


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
