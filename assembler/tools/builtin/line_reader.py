"""Picking lines out of a file of any size, in memory bounded by the output limits.

`read` with `limit: 1` on a 512 MB file used to load, decode and split all of it
(1 GB of memory). Here the file is streamed in chunks: lines before `offset` are
only counted, the lines shown are kept (at most `max_lines` lines and `max_bytes`
bytes, a longer single line only up to its cut), and the rest is only counted, so
the footer can still say how many lines the file has. Memory is one chunk plus what
is shown, whatever the file's size or the length of its lines.

The choice of lines is the one `truncate_text(..., keep="head")` makes on the whole
text, so the model sees exactly what it saw before: whole lines while they fit, and a
single line cut on a character boundary only when not even one fits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from assembler.tools.truncate import cut_bytes, format_size

CHUNK_BYTES = 256 * 1024


@dataclass(frozen=True)
class Selection:
    """What `read` shows: `text` is lines `first`..`last` (1-based, inclusive)."""

    text: str
    first: int
    last: int
    total: int
    truncated: bool = False
    limit: str = ""
    line_bytes: tuple[int, int] | None = None


@dataclass
class _Scanner:
    offset: int
    end: float  # the last line asked for (inclusive); infinite without `limit`
    max_lines: int
    max_bytes: int
    line: int = 1  # the line the next byte belongs to
    head: bytearray = field(default_factory=bytearray)  # start of a line being kept
    length: int = 0  # full length of that line so far
    kept: list[str] = field(default_factory=list)
    used: int = 0
    last: int = 0
    stopped: bool = False
    limit: str = ""
    line_bytes: tuple[int, int] | None = None

    def keeping(self) -> bool:
        return not self.stopped and self.offset <= self.line <= self.end

    def feed(self, chunk: bytes) -> None:
        pos, size = 0, len(chunk)
        while pos < size:
            if self.keeping():
                pos = self._keep_from(chunk, pos)
            elif self.line < self.offset and not self.stopped:
                pos = self._skip_from(chunk, pos)
            else:  # past the range, or a limit was hit: only count what is left
                self.line += chunk.count(b"\n", pos)
                return

    def _skip_from(self, chunk: bytes, pos: int) -> int:
        wanted = self.offset - self.line  # newlines still to pass
        if chunk.count(b"\n", pos) < wanted:
            self.line += chunk.count(b"\n", pos)
            return len(chunk)
        for _ in range(wanted):
            pos = chunk.index(b"\n", pos) + 1
        self.line = self.offset
        return pos

    def _keep_from(self, chunk: bytes, pos: int) -> int:
        newline = chunk.find(b"\n", pos)
        stop = len(chunk) if newline == -1 else newline + 1
        room = self.max_bytes + 1 - len(self.head)  # more than the limit is never needed
        if room > 0:
            self.head += chunk[pos : min(stop, pos + room)]
        self.length += stop - pos
        if newline != -1:
            self._line_done()
            self.line += 1
        return stop

    def finish(self) -> None:
        """At end of file: a last line without a newline is still a line."""
        if self.length and self.keeping():
            self._line_done()

    def _line_done(self) -> None:
        head, length = bytes(self.head), self.length
        self.head.clear()
        self.length = 0
        if len(self.kept) == self.max_lines:
            self.stopped, self.limit = True, f"{self.max_lines}-line limit"
            return
        # Decoding never shrinks a line (a bad byte becomes a 3-byte U+FFFD), so a line
        # longer than the limit in the file cannot fit, and is not decoded whole.
        text = ""
        size = length
        if length <= self.max_bytes:
            text = head.decode("utf-8", "replace")
            size = len(text.encode("utf-8", "surrogatepass"))
        if self.used + size <= self.max_bytes:
            self.kept.append(text)
            self.used += size
            self.last = self.line
            return
        self.stopped, self.limit = True, f"{format_size(self.max_bytes)} limit"
        if not self.kept:  # not even one whole line fits: show the start of this one
            part = cut_bytes(head, self.max_bytes, keep="head").decode("utf-8", "replace")
            encoded = cut_bytes(part.encode("utf-8", "surrogatepass"), self.max_bytes, keep="head")
            self.kept.append(encoded.decode("utf-8", "surrogatepass"))
            self.last = self.line
            self.line_bytes = (len(encoded), length)


def select_lines(
    fd: int, *, offset: int, limit: int | None, max_lines: int, max_bytes: int, first: bytes = b""
) -> Selection:
    """Stream the open file `fd` (already positioned after `first`, the bytes read so
    far) and pick the lines `read` shows. `total` counts every line of the file."""
    if max_lines < 1 or max_bytes < 1:
        raise ValueError("max_lines and max_bytes must be at least 1")
    end = float("inf") if limit is None else offset - 1 + limit
    scanner = _Scanner(offset, end, max_lines, max_bytes)
    last_byte = b""
    chunk = first or os.read(fd, CHUNK_BYTES)
    while chunk:
        scanner.feed(chunk)
        last_byte = chunk[-1:]
        chunk = os.read(fd, CHUNK_BYTES)
    scanner.finish()
    total = scanner.line - 1 + (1 if last_byte not in (b"", b"\n") else 0)
    return Selection(
        "".join(scanner.kept),
        offset,
        scanner.last,
        total,
        truncated=scanner.stopped,
        limit=scanner.limit,
        line_bytes=scanner.line_bytes,
    )
