"""A bounded copy of an MCP server's stderr, for error messages.

A stdio server's stdout is the protocol channel; everything it has to say about
*why* it failed (a traceback, "missing API key", "unknown option") goes to stderr.
Left alone, that text would be printed over the agent's own output; thrown away, a
failed start would read only "connection closed". So stderr goes into a pipe, a
thread drains the pipe into a buffer that keeps only the last bytes, and errors show
the buffer's tail. The buffer is bounded because a chatty server runs for the whole
session; a thread (rather than an event-loop reader) works on every platform and
keeps draining even while the loop is busy, so the server never blocks on a full pipe.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import TextIO

#: How much of a server's stderr is kept.
DEFAULT_KEEP_BYTES = 64 * 1024


class StderrTail:
    """A pipe whose write end is given to the server as stderr, and its last bytes.

    Call `writer()` for the file the SDK's `stdio_client(errlog=...)` passes to the
    child, then `release_writer()` once the child exists, so the reader sees end of
    file when the server (and any child holding the pipe) exits.
    """

    def __init__(self, *, keep_bytes: int = DEFAULT_KEEP_BYTES) -> None:
        self._keep = keep_bytes
        self._buffer = bytearray()
        self._dropped = 0
        self._lock = threading.Lock()
        self._eof = threading.Event()
        read_fd, write_fd = os.pipe()
        self._read_fd = read_fd
        self._writer: TextIO | None = os.fdopen(write_fd, "w", encoding="utf-8", closefd=True)
        self._thread = threading.Thread(target=self._drain, name="mcp-stderr", daemon=True)
        self._thread.start()

    def writer(self) -> TextIO:
        """The file to pass as the server's stderr."""
        if self._writer is None:
            raise RuntimeError("the stderr pipe's write end was already released")
        return self._writer

    def release_writer(self) -> None:
        """Close this process's copy of the write end (idempotent)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

    @property
    def finished(self) -> bool:
        """Whether every writer has closed the pipe (the server exited)."""
        return self._eof.is_set()

    async def settle(self, timeout: float = 0.5) -> None:
        """Wait briefly for the server's last words: after it exits, the reader
        thread needs a moment to drain what is still in the pipe."""
        deadline = time.monotonic() + timeout
        while not self._eof.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    def text(self) -> str:
        """Everything kept so far, decoded."""
        with self._lock:
            return self._buffer.decode("utf-8", "replace")

    def tail(self, max_lines: int = 20, max_chars: int = 2000) -> str:
        """The last lines, stripped; empty when the server wrote nothing."""
        with self._lock:
            raw = bytes(self._buffer[-max_chars * 4 :])
        text = raw.decode("utf-8", "replace").strip()
        lines = text.splitlines()[-max_lines:]
        result = "\n".join(lines)
        if len(result) > max_chars:
            result = "..." + result[-max_chars:]
        return result

    def _drain(self) -> None:
        try:
            while True:
                try:
                    chunk = os.read(self._read_fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                with self._lock:
                    self._buffer += chunk
                    excess = len(self._buffer) - self._keep
                    if excess > 0:
                        del self._buffer[:excess]
                        self._dropped += excess
        finally:
            os.close(self._read_fd)
            self._eof.set()
