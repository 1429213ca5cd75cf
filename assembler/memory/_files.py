"""The store's file access: crash-safe writes, bounded reads, the inter-process lock.

Every file the store writes goes through `atomic_write`: a temporary file in the same
directory, fsync, rename over the target, fsync of the directory. A reader (or a crash)
therefore sees the old file or the new one, never half of one, and a symbolic link in
the store is replaced, never written through. Temporary files are named
`.tmp-<file>.<8 hex digits>` and only ever written while the lock is held, so whoever
holds the lock may delete any regular file named exactly so: it was left by a writer
that died. Any other name is someone else's file (a store may share its directory with
the user's files) and is never deleted.

Every record file the store reads goes through `read_record_file`: a memory directory
can come from a repository nobody here wrote, and a record is shown to the model. So
only regular files are read (never a FIFO, which would block, or a device such as
`/dev/zero`, which never ends), never more than a record can hold, and a symbolic link
only when it points to a file inside the store: a link to a record-shaped file
elsewhere would put that file in the prompt.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from assembler.errors import MemoryStoreError
from assembler.files import atomic_write as write_file

TEMP_PREFIX: Final = ".tmp-"
_LEFTOVER = re.compile(r"\.tmp-.+\.[0-9a-f]{8}")
FRONTMATTER_ALLOWANCE: Final = 4096
"""Bytes a record file may hold beyond its body: the frontmatter (a 64-character name,
a 256-character description that may need quoting, the type) with room to spare."""
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class RefusedFileError(MemoryStoreError):
    """A file the store will not read as a record; the message says why."""


def is_leftover_name(name: str) -> bool:
    """Whether `name` is one `atomic_write` gives its temporary files."""
    return _LEFTOVER.fullmatch(name) is not None


def file_stamp(path: str | Path) -> tuple[int, int, int]:
    """(inode, mtime_ns, size) of the file a record path leads to, or of the link
    itself when it leads nowhere. `FileNotFoundError` when there is nothing."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = os.lstat(path)
    return (info.st_ino, info.st_mtime_ns, info.st_size)


def read_record_file(path: Path, root: str, max_bytes: int) -> tuple[bytes, tuple[int, int, int]]:
    """The bytes of the record file at `path` and its stamp (from the open file).

    `root` is the store directory with every symbolic link resolved. Refused with
    `RefusedFileError`: a link to anything outside `root`, anything but a regular
    file, a file over `max_bytes`. `FileNotFoundError` and other `OSError`s pass.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as e:
        if e.errno != errno.ELOOP:
            raise
        # The path is a symbolic link: judged by where it leads. Opening the resolved
        # path with O_NOFOLLOW means a link swapped in meanwhile is refused, not followed.
        target = os.path.realpath(path)
        if os.path.commonpath([root, target]) != root:
            raise RefusedFileError(
                f"a symbolic link to {target}, outside the memory store; not read"
            ) from None
        try:
            fd = os.open(target, _READ_FLAGS)
        except FileNotFoundError:
            raise RefusedFileError(
                f"a symbolic link to {target}, which does not exist; not read"
            ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RefusedFileError("not a regular file; not read")
        if info.st_size > max_bytes:
            raise RefusedFileError(
                f"{info.st_size} bytes, more than a record file may hold ({max_bytes}); not read"
            )
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:  # it grew after the check
            raise RefusedFileError(f"more than a record file may hold ({max_bytes}); not read")
    finally:
        os.close(fd)
    return b"".join(chunks), (info.st_ino, info.st_mtime_ns, info.st_size)


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
