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

_CHUNK: Final = 8192
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


def bounded_lines(fd: int, limit: int) -> Iterator[list[bytes | None]]:
    """The lines of `fd` from its current offset, without their newlines, a batch per
    read (each read is split in one call, so a listing costs about what `bytes.split`
    does). None stands for a line over `limit` bytes, skipped as it arrives and never
    held whole: memory is bounded by `limit` and the read size, whatever the file holds."""
    carry: list[bytes] = []  # the start of a line that goes on in the next read
    size = 0
    skipping = False  # inside a line already over `limit`
    while chunk := os.read(fd, _LINES_CHUNK):
        lines: list[bytes | None] = list(chunk.split(b"\n"))
        rest = lines.pop()  # after the last newline: a line still going on
        assert rest is not None
        if lines:
            first = lines[0]
            assert first is not None
            if skipping or size + len(first) > limit:
                lines[0] = None
            elif carry:
                carry.append(first)
                lines[0] = b"".join(carry)
            if any(line is not None and len(line) > limit for line in lines):
                lines = [None if line is None or len(line) > limit else line for line in lines]
            yield lines
            carry, size, skipping = [], 0, False
        if skipping:
            continue
        size += len(rest)
        if size > limit:
            carry, size, skipping = [], 0, True
        elif rest:
            carry.append(rest)
    if skipping:
        yield [None]
    elif carry:
        yield [b"".join(carry)]
