"""The part of a connection that differs between stdio and streamable HTTP.

A transport opens the SDK's message streams and knows how its own failures read:
a stdio server is a process with a command, a working directory and a stderr worth
quoting; an HTTP server is a URL whose status codes say more than the SDK passes on.
`MCPConnection` asks its transport for those words and handles the rest the same way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from assembler.manifest.model import MCPServerSpec

if TYPE_CHECKING:
    from mcp.client._transport import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage

    Streams = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]


class Transport(ABC):
    """How to reach the server `spec` describes, and how its failures are described."""

    #: Why calls fail after the server's message stream ended while it was in use.
    lost_reason = "the connection to the server was lost"

    def __init__(self, spec: MCPServerSpec) -> None:
        self.spec = spec

    @abstractmethod
    def open(self) -> AbstractAsyncContextManager[Streams]:
        """Start or connect to the server; exiting stops or disconnects it."""

    @abstractmethod
    def describe(self) -> str:
        """The command or the URL, for messages, without anything that may be secret."""

    @abstractmethod
    def launch_problem(self) -> str | None:
        """Why the server cannot be started at all, found before trying; else None."""

    def start_error_cause(self, exc: BaseException) -> str | None:
        """`exc`, raised while starting, in this transport's words; None if generic."""
        return None

    def timeout_note(self) -> str:
        """Added to "timed out ..." at start-up: what the server last said, if known."""
        return ""

    def call_error_note(self) -> str:
        """Added to a rejected call's message, then forgotten (a status code)."""
        return ""

    def stderr_tail(self, max_lines: int = 20) -> str:
        """The last lines the server wrote to stderr; empty where there is none."""
        return ""

    async def settle(self) -> None:
        """Wait briefly for the server's last words after it stopped."""
        return None

    def release(self) -> None:
        """Free what `open()` may have left behind (idempotent)."""
        return None
