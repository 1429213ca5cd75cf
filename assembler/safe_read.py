"""Reading a small text file that a manifest points at, without trusting the path.

A manifest comes from the repository, and a path in it may name `/dev/zero` (an
endless read), a FIFO (a read that never returns), or a file of gigabytes. So the
file is opened without blocking, checked to be a regular file on the open descriptor
(no window between the check and the read), and read up to a cap: never more than
`limit` bytes come into memory, whatever the path names.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class FileRefused(ValueError):
    """The path exists but is not a small regular UTF-8 text file; the message says why
    (`it is a directory, not a file`)."""


def read_small_text(path: Path, limit: int) -> str:
    """The UTF-8 text of the regular file at `path`, at most `limit` bytes.

    Raises `FileNotFoundError` when nothing is there, `FileRefused` for a special file
    (device, FIFO, socket, directory), a file over `limit` or text that is not UTF-8,
    and `OSError` for the rest (permissions, a symlink loop, a name too long).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise FileRefused("it is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused("it is not a regular file (a device, FIFO or socket)")
        if info.st_size > limit:
            raise FileRefused(f"it is {info.st_size:,} bytes; at most {limit:,} are allowed")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(65536, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:  # it grew while being read
        raise FileRefused(f"it is larger than {limit:,} bytes")
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as e:
        raise FileRefused(f"it is not UTF-8 text (byte 0x{e.object[e.start]:02x})") from None
