"""The protocol's own stdin and stdout, as the SDK's connection takes them.

ACP is JSON-RPC over the agent's stdin and stdout; `assembler.protocol_stdio.claim_stdio`
keeps both for the protocol alone (everything else goes to stderr), as for `assemble rpc`.

`open_streams` turns the two kept descriptors into an `Inbox` of messages and the
asyncio stream writer the SDK's connection takes, malformed input answered on the way
(`framing`). Input is read in a daemon thread (any kind of file works: a pipe from an
editor, a file of requests when debugging); output goes through the event loop's pipe
transport, or written directly when it is a regular file.

The inbox hands messages one by one to the early phase (`early`: the first requests,
answered before the SDK is loaded), then over to a `StreamReader` for the SDK's
connection, in order, nothing lost or read twice. Nothing here imports the SDK.
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
from collections import deque
from typing import Any

from assembler.acp.framing import INVALID_REQUEST, Lines, checked, error_line
from assembler.files import read_chunks
from assembler.protocol_stdio import ProtocolFiles


class Inbox:
    """The protocol's well-formed messages, one line each, in order: taken one at a
    time (`next_line`) until `hand_over` gives the rest, and all that comes later, to
    a `StreamReader`. Fed on the event loop's thread only (`call_soon_threadsafe`)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lines: deque[bytes] = deque()
        self._eof = False
        self._arrived = asyncio.Event()
        self._reader: asyncio.StreamReader | None = None

    def feed_data(self, line: bytes) -> None:
        if self._reader is not None:
            self._reader.feed_data(line)
            return
        self._lines.append(line)
        self._arrived.set()

    def feed_eof(self) -> None:
        if self._reader is not None:
            self._reader.feed_eof()
            return
        self._eof = True
        self._arrived.set()

    async def next_line(self) -> bytes | None:
        """The next message; None at the end of input."""
        while not self._lines:
            if self._eof:
                return None
            self._arrived.clear()
            await self._arrived.wait()
        return self._lines.popleft()

    def hand_over(self, first: bytes | None = None) -> asyncio.StreamReader:
        """A reader holding `first` (a line taken and not handled), the lines not
        taken yet, and from now on everything that arrives."""
        if self._reader is not None:
            raise RuntimeError("the inbox was handed over already")
        reader = asyncio.StreamReader(limit=self.limit)
        for line in (*((first,) if first is not None else ()), *self._lines):
            reader.feed_data(line)
        self._lines.clear()
        if self._eof:
            reader.feed_eof()
        self._reader = reader
        return reader


async def open_streams(files: ProtocolFiles) -> tuple[Inbox, asyncio.StreamWriter]:
    """The protocol's input as an `Inbox` holding only well-formed messages
    (`framing`), its output as a `StreamWriter`."""
    loop = asyncio.get_running_loop()
    reader = Inbox(_LINE_LIMIT)
    mode = os.fstat(files.output).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode):
        pipe = os.fdopen(files.output, "wb", buffering=0)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, pipe)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    else:
        writer = asyncio.StreamWriter(_FileTransport(files.output), _Drained(), None, loop)
    _feed(files.input, reader, writer, loop)
    return reader, writer


_LINE_LIMIT = 50 * 1024 * 1024
"""The longest message accepted, as the SDK's own stdio default: a prompt with an
embedded file can be large."""


def _feed(
    fd: int,
    reader: Inbox,
    writer: asyncio.StreamWriter,
    loop: asyncio.AbstractEventLoop,
) -> None:
    """Copy the messages of `fd` into `reader` from a daemon thread until the end of
    input, and answer the malformed ones on `writer` (each answer one `write`, so it
    never splits a line the SDK writes). The thread blocks in `os.read` only, so the
    process can exit while it waits."""

    def post(data: bytes | None) -> bool:
        try:
            if data is None:
                loop.call_soon_threadsafe(reader.feed_eof)
            else:
                loop.call_soon_threadsafe(reader.feed_data, data)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            return False
        return True

    def answer(error: bytes) -> bool:
        try:
            loop.call_soon_threadsafe(writer.write, error)
        except RuntimeError:
            return False
        return True

    def hand_on(line: bytes | None) -> bool:
        if line is None:
            return answer(error_line(INVALID_REQUEST, "Invalid request: the message is too long"))
        error = checked(line)
        return post(line) if error is None else answer(error)

    def pump() -> None:
        lines = Lines(_LINE_LIMIT)
        for chunk in read_chunks(fd):
            for line in lines.feed(chunk):
                if not hand_on(line):
                    return
        last = lines.end()
        if last is not None and not hand_on(last):
            return
        post(None)

    threading.Thread(target=pump, name="assemble-acp-input", daemon=True).start()


class _Drained(asyncio.Protocol):
    """The protocol of `_FileTransport`: writes finish at once, so draining never waits."""

    async def _drain_helper(self) -> None:
        return None


class _FileTransport(asyncio.WriteTransport):
    """Writes to a regular file (output redirected to a file when debugging), which the
    event loop cannot watch; each write completes before it returns."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview[Any]) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def can_write_eof(self) -> bool:
        return False
