"""The background task that owns one server's transport and `ClientSession`.

The SDK's transports and `ClientSession` are anyio context managers whose task groups
must be entered and exited by the same task. An agent, though, starts its servers
while it is being built, calls tools from whatever task runs a turn, and shuts the
servers down at the end. So each connection owns a background task that enters the
transport and the session, signals that it is ready, waits for `close()`, and exits
them again; every other task only sends requests through the session, which anyio
allows from any task of the same event loop.

The task also watches the server's message stream: when it ends while the session is
in use, the server died, and the connection is told at once rather than at its next
call, while the server's last stderr lines are still fresh.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from contextlib import AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession, MessageHandlerFnT
from mcp.shared.exceptions import MCPError as ProtocolError
from mcp.shared.message import SessionMessage

from assembler.mcp.diagnostics import root_cause
from assembler.mcp.transport import Transport
from assembler.version import __version__

if TYPE_CHECKING:
    from mcp.client._transport import ReadStream

CLIENT_INFO = types.Implementation(name="agent-assembler", version=__version__)


class SessionTask:
    """Runs `transport` and a session over it in a task of its own, from `start()`
    until `close()`. Initialisation must finish within `timeout` seconds.

    `on_message` receives what the session does not handle itself (notifications,
    unparsable lines); `on_stream_end` is called when the server's stream ends while
    the session is in use; `on_shutdown_error` gets the error, if any, with which the
    transport and the session exited after having been ready.
    """

    def __init__(
        self,
        name: str,
        transport: Transport,
        *,
        timeout: float,
        on_message: MessageHandlerFnT,
        on_stream_end: Callable[[], None],
        on_shutdown_error: Callable[[BaseException], None],
    ) -> None:
        self.name = name
        self._transport = transport
        self._timeout = timeout
        self._on_message = on_message
        self._on_stream_end = on_stream_end
        self._on_shutdown_error = on_shutdown_error
        self._task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        #: The live session between initialisation and the end of the task.
        self.session: ClientSession | None = None
        #: Why the task ended before the session was ready (an exception), if it did.
        self.start_error: BaseException | None = None
        #: Whether initialisation took longer than `timeout`.
        self.timed_out = False
        self.server_info: types.Implementation | None = None
        self.instructions: str | None = None

    @property
    def started(self) -> bool:
        return self._task is not None

    @property
    def ready(self) -> bool:
        """Whether initialisation succeeded (it stays true after close)."""
        return self._ready.is_set()

    @property
    def closing(self) -> bool:
        return self._closing.is_set()

    @property
    def cancelled(self) -> bool:
        """Whether the task itself was cancelled (the event loop is shutting down)."""
        return self._task is not None and self._task.cancelled()

    async def start(self) -> bool:
        """Start the task; return once the session is ready (True) or the task ended
        without getting there (False: see `timed_out`, `start_error`)."""
        if self._task is not None:
            raise RuntimeError(f"MCP server `{self.name}` was already started")
        self._task = asyncio.get_running_loop().create_task(
            self._serve(), name=f"mcp-server:{self.name}"
        )
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        return self._ready.is_set()

    async def close(self) -> None:
        """Let the task exit the session and the transport, and wait for it. A start
        still in progress is cancelled. Idempotent."""
        task = self._task
        if task is None:
            return
        self._closing.set()
        if not self._ready.is_set() and self._scope is not None:
            self._scope.cancel()
        if not task.done():
            await asyncio.wait({task})

    async def _serve(self) -> None:
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self._timeout) as scope:
                self._scope = scope
                if self._closing.is_set():
                    scope.cancel()
                async with AsyncExitStack() as stack:
                    read, write = await stack.enter_async_context(self._transport.open())
                    watched = _WatchedReadStream(read, self._stream_ended)
                    session = await stack.enter_async_context(
                        ClientSession(
                            watched,
                            write,
                            client_info=CLIENT_INFO,
                            message_handler=self._on_message,
                        )
                    )
                    await self._handshake(session)
                    scope.deadline = math.inf
                    self.session = session
                    self._ready.set()
                    await self._closing.wait()
            if scope.cancelled_caught and not self._ready.is_set():
                self.timed_out = not self._closing.is_set()
        except Exception as exc:
            if self._ready.is_set():
                self._on_shutdown_error(root_cause(exc))
            else:
                self.start_error = root_cause(exc)
        finally:
            self.session = None
            self._transport.release()

    async def _handshake(self, session: ClientSession) -> None:
        """`initialize`, which every server in use speaks and which costs one round
        trip; a server that only speaks the 2026 protocol refuses it with -32022, and
        is then asked `server/discover` on the same connection."""
        try:
            result = await session.initialize()
        except ProtocolError as exc:
            if exc.code != types.UNSUPPORTED_PROTOCOL_VERSION:
                raise
            await session.discover()
            self.server_info = session.server_info
            self.instructions = session.instructions
            return
        self.server_info = result.server_info
        self.instructions = result.instructions

    def _stream_ended(self) -> None:
        if self._ready.is_set() and not self._closing.is_set():
            self._on_stream_end()


class _WatchedReadStream:
    """The transport's read stream, reporting its end: that is how a server's death
    shows up."""

    def __init__(
        self, inner: ReadStream[SessionMessage | Exception], on_end: Callable[[], None]
    ) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        # The dispatcher reads this duck-typed attribute on the HTTP transport's stream.
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedReadStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, traceback)
