"""Crash-safe file replacement, shared by every store that rewrites a whole file, and
the one loop that reads a descriptor to its end (stdin of `rpc` and `acp`).

A temporary file in the same directory, fsync, rename over the target, fsync of the
directory: a reader (or a crash) sees the old file or the new one, never half of one.
Sessions, memory records and the trust store all write this way.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path


def fsync_directory(directory: Path) -> None:
    """Make renames and unlinks in `directory` durable (best effort: not every
    platform or filesystem can open a directory)."""
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


def atomic_write(
    path: Path,
    data: bytes,
    *,
    sync_directory: bool = True,
    temp_prefix: str = ".tmp-",
    mode: int | None = None,
) -> None:
    """Replace `path` with `data` so that no reader ever sees a partial file.

    The file is created with mode 0666 minus the umask, like any file the user makes,
    or with `mode` when given (to keep the permissions of the file it replaces).
    Raises `OSError`; callers turn it into their own error type.
    """
    temp = path.with_name(f"{temp_prefix}{path.name}.{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        if mode is not None:
            os.chmod(temp, mode)  # not fchmod: it does not exist on Windows
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


def read_chunks(fd: int, size: int = 65536) -> Iterator[bytes]:
    """The bytes of `fd` as they arrive, until the end of input (or a read error,
    taken as the end). Blocks in `os.read` only, so a daemon thread reading this way
    never holds a buffered reader's lock while the process exits."""
    while True:
        try:
            chunk = os.read(fd, size)
        except InterruptedError:
            continue
        except OSError:
            return
        if not chunk:
            return
        yield chunk
