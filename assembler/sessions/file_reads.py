"""Reading files found in a session directory, within bounds.

A session directory is listed by `assemble sessions list` and searched by `--continue`,
and `--session-dir` may point anywhere, a repository included. So whatever is named
`*.jsonl` there is opened without blocking and checked on the open descriptor to be a
regular file (a FIFO would block for ever, a link to `/dev/zero` never ends); the
header line is read up to `MAX_HEADER_BYTES`, and a listing reads the rest of a file
line by line, a line over its limit skipped as it is read rather than held.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from assembler.errors import SessionError

MAX_HEADER_BYTES: Final = 1 << 20
"""The longest header line read. A header holds ids, names, the workspace's start and
the run's metadata: kilobytes. A longer first line is not a session's."""

_CHUNK: Final = 1 << 16
_LINES_CHUNK = 1 << 20
"""How much `bounded_lines` reads at a time (tests make it small to cross boundaries)."""
_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def open_regular(path: Path) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file `path` leads to, and its status. `SessionError`
    for anything else (a FIFO, a device, a directory); `OSError` passes."""
    fd = os.open(path, _FLAGS)
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise SessionError(f"{path} is not a regular file (a device, FIFO or directory)")
    return fd, info


def read_header_line(fd: int) -> bytes | None:
    """The first line of `fd` without its newline (the whole file when it has none), or
    None when it is longer than `MAX_HEADER_BYTES`."""
    parts: list[bytes] = []
    size = 0
    while size <= MAX_HEADER_BYTES:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            break
        end = chunk.find(b"\n")
        if end >= 0:
            parts.append(chunk[:end])
            size += end
            break
        parts.append(chunk)
        size += len(chunk)
    return None if size > MAX_HEADER_BYTES else b"".join(parts)


def bounded_lines(fd: int, limit: int) -> Iterator[bytes | None]:
    """Every line of `fd` from its current offset, without the newline; None stands for
    a line over `limit` bytes, which is skipped as it arrives and never held whole.
    Memory is bounded by `limit` and the read size, whatever the file holds."""
    carry: list[bytes] = []
    size = 0
    skipping = False
    while chunk := os.read(fd, _LINES_CHUNK):
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not skipping and size + len(piece) > limit:
                skipping = True
                carry, size = [], 0
            elif not skipping:
                carry.append(piece)
                size += len(piece)
            if end < 0:
                break
            yield None if skipping else b"".join(carry)
            carry, size, skipping = [], 0, False
            start = end + 1
    if skipping:
        yield None
    elif carry and any(carry):
        yield b"".join(carry)
