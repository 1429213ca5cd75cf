"""Reading requests: stdin line by line in its own thread, each line handed to the
event loop as it arrives, so a request can be answered while a prompt runs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from assembler.files import read_chunks

Line = str | bytes

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest request line accepted, in bytes, not counting the newline. A prompt
that long is millions of tokens, beyond any model's context; a longer line is
answered with a `LineTooLong` error and discarded, and the server goes on."""


@dataclass(frozen=True)
class OverlongLine:
    """Delivered instead of a line longer than `MAX_LINE_BYTES`: its bytes were
    dropped as they arrived, so it costs no memory, and it is answered with an error."""


Input = Line | OverlongLine | None
"""What the reader delivers: a line, a line that was too long, or None at the end."""


def read_lines(
    source: TextIO, loop: asyncio.AbstractEventLoop, deliver: Callable[[Input], None]
) -> None:
    """Read `source` in a daemon thread, handing each line to `deliver` on `loop`
    and None at the end. The thread reads the file descriptor itself (no buffered
    reader's lock held while it waits), so exiting while it blocks is safe.

    Time and memory are linear in the input: each chunk is searched for newlines
    once and each byte copied once. A line over `MAX_LINE_BYTES` becomes one
    `OverlongLine` as soon as it crosses the limit, and the rest of it is skipped."""

    def post(line: Input) -> bool:
        try:
            loop.call_soon_threadsafe(deliver, line)
        except RuntimeError:  # the loop is closed: the server is gone
            return False
        return True

    def from_fd(fd: int) -> None:
        parts: list[bytes] = []  # the line so far, joined once when it ends
        size = 0
        skipping = False  # inside a line that was too long
        for chunk in read_chunks(fd):
            start = 0
            while True:
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end < 0 else chunk[start:end]
                if not skipping and size + len(piece) > MAX_LINE_BYTES:
                    skipping = True
                    parts, size = [], 0
                    if not post(OverlongLine()):
                        return
                elif not skipping and piece:
                    parts.append(piece)
                    size += len(piece)
                if end < 0:
                    break
                if not skipping and not post(b"".join(parts)):
                    return
                parts, size, skipping = [], 0, False
                start = end + 1
        if parts:
            post(b"".join(parts))
        post(None)

    def from_text() -> None:
        skipping = False
        while text := source.readline(MAX_LINE_BYTES + 1):
            complete = text.endswith("\n")
            if skipping:  # the rest of a line already refused
                skipping = not complete
                continue
            line: Input = text
            if len(text.rstrip("\n").encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
                skipping = not complete
                line = OverlongLine()
            if not post(line):
                return
        post(None)

    try:
        fd: int | None = source.fileno()
    except (AttributeError, OSError, ValueError):  # io.StringIO and friends
        fd = None
    target: Callable[[], None] = from_text if fd is None else (lambda: from_fd(fd))
    threading.Thread(target=target, name="assemble-rpc-input", daemon=True).start()
