"""An append-only JSON-lines file, indexed by line and read incrementally.

A session file of 10,000 entries is about 40 MB; a page shows a few hundred of them.
So the file is read once to find where each line starts (and the few fields a page
needs to place an entry, taken by `LineIndex`'s `extract` callback), and a line is
parsed whole only when it is shown. A file that grew is read from where the last read
stopped, so a live session costs only its new bytes; a file that shrank or was
replaced (another inode) is read again from the start.

A final line without its newline is a write in progress (or a torn one): it is not
indexed until its newline arrives, as the session reader treats it. A line over
`MAX_LINE` is skipped as it is read, never held whole.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

T = TypeVar("T")

CHUNK = 1 << 20
MAX_LINE = 64 << 20
"""A line longer than this (64 MiB) is not held in memory: it is indexed as a line the
reader cannot use (what `extract(b"")` says), and reading goes on after it."""


class Line(NamedTuple, Generic[T]):
    """One complete line: where it is in the file, and what `extract` took from it.
    A named tuple: a 40 MB session has tens of thousands, made on its first read."""

    number: int
    offset: int
    length: int
    info: T


@dataclass
class _State(Generic[T]):
    inode: int = -1
    end: int = 0
    lines: list[Line[T]] = field(default_factory=list)


class LineIndex(Generic[T]):
    """The complete lines of `path`, each with `extract(line_bytes)`; `refresh()` reads
    what was appended since the last call. Thread-safe: the server shares one index per
    file between requests."""

    def __init__(self, path: Path, extract: Callable[[bytes], T], *, skip_first: bool = False):
        self.path = path
        self._extract = extract
        self._skip_first = skip_first
        self._state: _State[T] = _State()
        self._lock = threading.Lock()
        self.first_line = b""

    def refresh(self) -> bool:
        """Read what was appended; True when the file changed since the last call."""
        with self._lock:
            stat = os.stat(self.path)
            state = self._state
            if stat.st_ino != state.inode or stat.st_size < state.end:
                state = self._state = _State(inode=stat.st_ino)
            if stat.st_size == state.end:
                return False
            start = state.end
            with self.path.open("rb") as handle:
                handle.seek(start)
                pos = start  # the file offset of data[0], or of the next chunk
                data = b""
                skip_from: int | None = None  # where a line over MAX_LINE started
                while chunk := handle.read(CHUNK):
                    if skip_from is not None:
                        newline = chunk.find(b"\n")
                        if newline < 0:
                            pos += len(chunk)
                            continue
                        end = pos + newline + 1
                        unusable = self._extract(b"")
                        state.lines.append(
                            Line(len(state.lines), skip_from, end - skip_from, unusable)
                        )
                        skip_from, pos, data = None, end, chunk[newline + 1 :]
                    else:
                        data += chunk
                    cut = data.rfind(b"\n")
                    if cut >= 0:
                        self._index(state, data[: cut + 1], pos)
                        pos += cut + 1
                        data = data[cut + 1 :]
                    if len(data) > MAX_LINE:
                        skip_from, pos, data = pos, pos + len(data), b""
                state.end = pos if skip_from is None else skip_from
            return state.end != start

    def _index(self, state: _State[T], data: bytes, offset: int) -> None:
        lines = state.lines
        position = 0
        for raw in data.split(b"\n")[:-1]:
            length = len(raw) + 1
            at = offset + position
            position += length
            if at == 0 and self._skip_first:
                self.first_line = raw
                continue
            if not raw.strip():
                continue
            lines.append(Line(len(lines), at, length, self._extract(raw)))

    @property
    def lines(self) -> list[Line[T]]:
        """The lines indexed so far (a snapshot: later appends make a new list)."""
        with self._lock:
            return list(self._state.lines)

    @property
    def count(self) -> int:
        """How many lines are indexed (the last one's `number` is `count - 1`)."""
        return len(self._state.lines)

    @property
    def size(self) -> int:
        return self._state.end

    def read(self, line: Line[T]) -> bytes:
        """The bytes of one indexed line, without its newline."""
        with self.path.open("rb") as handle:
            handle.seek(line.offset)
            return handle.read(line.length).rstrip(b"\n")

    def read_many(self, lines: list[Line[T]]) -> list[bytes]:
        """The bytes of several lines with one open file (a page of entries)."""
        out = []
        with self.path.open("rb") as handle:
            for line in lines:
                handle.seek(line.offset)
                out.append(handle.read(line.length).rstrip(b"\n"))
        return out
