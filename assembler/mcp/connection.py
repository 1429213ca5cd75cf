"""One live connection to one MCP server, stdio or streamable HTTP.

The SDK's transports and `ClientSession` are anyio context managers whose task groups
must be entered and exited by the same task. An agent, though, starts its servers
while it is being built, calls tools from whatever task runs a turn, and shuts the
servers down at the end. So each connection owns a background task that enters the
transport and the session, signals that it is ready, waits for `close()`, and exits
them again; every other task only sends requests through the session, which anyio
allows from any task of the same event loop.

Failures are split by when they happen. Before the server is usable (it cannot be
started, it exits, it does not answer `initialize` in `spec.timeout` seconds, an HTTP
endpoint answers 401) `start()` raises `MCPError` naming the server, the cause and
the tail of its stderr: the agent cannot be built as declared, and the user must fix
something. Once running, nothing raises into the runner: a server that dies or
rejects a call yields an error `ToolResult` the model can react to, and a death is
also recorded as a diagnostic for the user.
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError as ProtocolError
from mcp.shared.message import SessionMessage

from assembler import __version__
from assembler.errors import MCPError
from assembler.manifest.model import MCPServerSpec
from assembler.mcp.errlog import StderrTail
from assembler.mcp.results import render_result
from assembler.tools.base import ToolContext, ToolResult
from assembler.tools.environment import is_secret_name

if TYPE_CHECKING:
    from mcp.client._transport import ReadStream, WriteStream

    Streams = tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]

CLIENT_INFO = types.Implementation(name="agent-assembler", version=__version__)

#: Variables a stdio server inherits from the parent: enough to find programs, a home
#: directory, a locale and a temporary directory. Nothing else, so the agent's provider
#: keys (and any other secret in the user's shell) never reach a third-party process.
BASE_ENVIRONMENT_POSIX = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
)
#: Windows programs also need these to start at all (SYSTEMROOT for the C runtime and
#: Winsock, PATHEXT/COMSPEC to find programs, the profile directories for their data).
BASE_ENVIRONMENT_WINDOWS = (
    "PATH",
    "PATHEXT",
    "COMSPEC",
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "PROCESSOR_ARCHITECTURE",
    "NUMBER_OF_PROCESSORS",
)

#: At most this many `tools/list` pages are read from one server.
MAX_TOOL_PAGES = 100

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class MCPDiagnostic:
    """Something about an MCP server the user should know that does not stop the run.

    `message` is complete on its own (it names the server), ready for a diagnostic
    event or a log line.
    """

    server: str
    message: str
    severity: Severity = "warning"

    def __str__(self) -> str:
        return self.message


def server_environment(
    declared: Mapping[str, str], parent: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a stdio server: a minimal base from `parent` plus `declared`.

    Declared variables are passed as written even when named like secrets: the
    manifest's author gave them to this server on purpose (`GITHUB_TOKEN: ${...}`).
    The SDK adds its own safe defaults (HOME, LOGNAME, PATH, SHELL, TERM, USER) under
    these, which are all part of the base anyway.
    """
    source = os.environ if parent is None else parent
    names = BASE_ENVIRONMENT_WINDOWS if sys.platform == "win32" else BASE_ENVIRONMENT_POSIX
    env = {name: source[name] for name in names if name in source and not is_secret_name(name)}
    env.update(declared)
    return env


def display_url(url: str) -> str:
    """`url` without user:password, query and fragment, which may hold credentials."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<invalid URL>"
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class MCPConnection:
    """A client connection to the MCP server `spec` describes.

    `workspace` is the working directory of a stdio server without `cwd`. Use as
    `await connection.start()` ... `await connection.close()`, or `async with`.
    """

    def __init__(self, spec: MCPServerSpec, *, workspace: Path) -> None:
        self.spec = spec
        self.workspace = workspace
        self._task: asyncio.Task[None] | None = None
        self._session: ClientSession | None = None
        self._scope: anyio.CancelScope | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._start_error: BaseException | None = None
        self._timed_out = False
        self._stderr: StderrTail | None = None
        self._http_error: str | None = None
        self._stdout_noise: str | None = None
        self._failure: str | None = None
        self._failure_report: asyncio.Task[None] | None = None
        self._diagnostics: list[MCPDiagnostic] = []
        self.server_info: types.Implementation | None = None
        self.instructions: str | None = None

    # -- public API -------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def alive(self) -> bool:
        """Whether calls can go through: started, not closed, not known to be dead."""
        return self._session is not None and self._failure is None and not self._closing.is_set()

    @property
    def session(self) -> ClientSession | None:
        """The SDK session while the server runs, for what this class does not wrap
        (resources, prompts) and for benchmarks; None before start and after close."""
        return self._session

    @property
    def diagnostics(self) -> tuple[MCPDiagnostic, ...]:
        """What happened to this server while it ran (a crash, a failed shutdown)."""
        return tuple(self._diagnostics)

    def describe(self) -> str:
        """The command or the URL, for messages. Arguments, query strings and
        user:password are left out: `${VAR}` interpolation often puts tokens there,
        and these messages end up in terminals and CI logs."""
        spec = self.spec
        if spec.transport == "stdio":
            return f"command `{spec.command}`"
        return display_url(spec.url or "")

    def stderr_tail(self, max_lines: int = 20) -> str:
        """The last lines the server wrote to stderr (stdio only; empty otherwise)."""
        return self._stderr.tail(max_lines) if self._stderr is not None else ""

    async def start(self) -> None:
        """Start or connect to the server and run the `initialize` handshake.

        Raises `MCPError` when the server cannot start, does not initialise within
        `spec.timeout` seconds, or refuses the connection.
        """
        if self._task is not None:
            raise RuntimeError(f"MCP server `{self.name}` was already started")
        self._check_launchable()
        self._task = asyncio.get_running_loop().create_task(
            self._serve(), name=f"mcp-server:{self.name}"
        )
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await self.close()
            raise
        finally:
            ready.cancel()
        if self._ready.is_set():
            return
        if self._stderr is not None:
            await self._stderr.settle()
        raise MCPError(self._start_failure_message())

    async def list_tools(self) -> list[types.Tool]:
        """Every tool the server offers, following `nextCursor` pages."""
        session = self._require_session()
        tools: list[types.Tool] = []
        cursor: str | None = None
        try:
            async with asyncio.timeout(self.spec.timeout):
                for _ in range(MAX_TOOL_PAGES):
                    params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
                    page = await session.list_tools(params=params)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
        except TimeoutError:
            raise MCPError(
                f"MCP server `{self.name}` did not list its tools within "
                f"{self.spec.timeout:g} s{self._stderr_block()}"
            ) from None
        except ProtocolError as exc:
            raise MCPError(
                f"MCP server `{self.name}` could not list its tools: {exc.message} "
                f"(error {exc.code}){self._stderr_block()}"
            ) from exc
        except Exception as exc:  # an invalid listing, a network error
            raise MCPError(
                f"MCP server `{self.name}` could not list its tools: "
                f"{_exception_text(exc)}{self._stderr_block()}"
            ) from exc
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        context: ToolContext | None = None,
    ) -> ToolResult:
        """Call tool `name` (the server's name for it); never raises for server trouble.

        `context` supplies the timeout and the output limits; without it the
        defaults of `ToolContext` apply.
        """
        ctx = context or ToolContext(workspace=self.workspace)
        details: dict[str, Any] = {"server": self.name, "tool": name}
        session = self._session
        if session is None or self._failure is not None or self._closing.is_set():
            return self._not_running(name)
        try:
            result = await session.call_tool(
                name, dict(arguments or {}), read_timeout_seconds=ctx.timeout
            )
        except ProtocolError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                if not self._closing.is_set():
                    await self._mark_failed(self._lost_reason())
                return self._not_running(name)
            if exc.code == types.REQUEST_TIMEOUT:
                message = (
                    f"MCP tool `{name}` (server `{self.name}`) did not answer within "
                    f"{ctx.timeout:g} s"
                )
                return ToolResult(message, is_error=True, details={**details, "timed_out": True})
            message = f"MCP server `{self.name}` rejected the call to `{name}`: {exc.message}"
            if self._http_error is not None:
                message += f" ({self._http_error})"
                self._http_error = None
            return ToolResult(message, is_error=True, details={**details, "code": exc.code})
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            if not self._closing.is_set():
                await self._mark_failed("the connection to the server broke")
            return self._not_running(name)
        except Exception as exc:  # a bad result, a network error: the model is told
            message = f"MCP tool `{name}` (server `{self.name}`) failed: {_exception_text(exc)}"
            return ToolResult(message, is_error=True, details=details)
        return render_result(
            result,
            server=self.name,
            tool=name,
            max_lines=ctx.max_output_lines,
            max_bytes=ctx.max_output_bytes,
        )

    async def close(self) -> None:
        """Shut the server down (stdio: close its stdin, then terminate its process
        group) and wait until it is gone. Idempotent; never raises for server trouble."""
        task = self._task
        if task is None:
            return
        self._closing.set()
        if not self._ready.is_set() and self._scope is not None:
            self._scope.cancel()
        if not task.done():
            await asyncio.wait({task})
        if self._failure_report is not None and not self._failure_report.done():
            await asyncio.wait({self._failure_report})
        if self._stderr is not None:
            self._stderr.release_writer()

    async def __aenter__(self) -> MCPConnection:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    # -- the background task ----------------------------------------------------------

    async def _serve(self) -> None:
        """Own the transport and the session from start to close (see the module doc)."""
        try:
            deadline = anyio.current_time() + self.spec.timeout
            with anyio.CancelScope(deadline=deadline) as scope:
                self._scope = scope
                if self._closing.is_set():
                    scope.cancel()
                async with AsyncExitStack() as stack:
                    read, write = await stack.enter_async_context(self._transport())
                    watched = _WatchedReadStream(read, self._on_stream_end)
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
                    self._session = session
                    self._ready.set()
                    await self._closing.wait()
            if scope.cancelled_caught and not self._ready.is_set():
                self._timed_out = not self._closing.is_set()
        except Exception as exc:
            if self._failure is not None:
                pass  # already reported; the transport's exit error only repeats it
            elif self._ready.is_set():
                self._diagnostics.append(
                    MCPDiagnostic(
                        self.name,
                        f"MCP server `{self.name}` did not shut down cleanly: "
                        f"{_exception_text(_root_cause(exc))}",
                    )
                )
            else:
                self._start_error = _root_cause(exc)
        finally:
            self._session = None
            if self._stderr is not None:
                self._stderr.release_writer()

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

    def _transport(self) -> AbstractAsyncContextManager[Streams]:
        return self._stdio() if self.spec.transport == "stdio" else self._http()

    @asynccontextmanager
    async def _stdio(self) -> AsyncIterator[Streams]:
        spec = self.spec
        params = StdioServerParameters(
            command=spec.command or "",
            args=list(spec.args),
            env=server_environment(spec.env),
            cwd=str(spec.cwd or self.workspace),
        )
        tail = self._stderr = StderrTail()
        try:
            async with stdio_client(params, errlog=tail.writer()) as streams:
                tail.release_writer()  # the child has its copy; EOF then means it exited
                yield streams
        finally:
            tail.release_writer()

    @asynccontextmanager
    async def _http(self) -> AsyncIterator[Streams]:
        timeout = httpx2.Timeout(self.spec.timeout, read=max(300.0, self.spec.timeout))
        async with (
            httpx2.AsyncClient(
                headers=dict(self.spec.headers),
                timeout=timeout,
                event_hooks={"response": [self._on_http_response]},
            ) as client,
            streamable_http_client(self.spec.url or "", http_client=client) as streams,
        ):
            yield streams

    async def _on_http_response(self, response: httpx2.Response) -> None:
        """Remember an HTTP error: the SDK turns a 401 without a JSON-RPC body into a
        generic "Server returned an error response", losing the status we must show.
        Only POSTs count: the optional GET event stream may be refused (405) by design."""
        if response.status_code >= 400 and response.request.method == "POST":
            reason = response.reason_phrase or ""
            self._http_error = f"HTTP {response.status_code} {reason}".strip()

    async def _on_message(self, message: IncomingMessage) -> None:
        """Notice a server that writes non-protocol text to stdout, the most common
        way to break a stdio server (a stray `print`); other notifications, such as
        `tools/list_changed`, are not acted on: the agent's tools are fixed when it
        is built."""
        if not isinstance(message, Exception):
            return
        first = self._stdout_noise is None
        self._stdout_noise = _noise_text(message)
        if first and self._ready.is_set():
            self._diagnostics.append(
                MCPDiagnostic(
                    self.name,
                    f"MCP server `{self.name}` sent something that is not JSON-RPC: "
                    f"{self._stdout_noise} (a server must log to stderr, not stdout)",
                )
            )

    # -- failures ---------------------------------------------------------------------

    def _check_launchable(self) -> None:
        spec = self.spec
        if spec.transport == "stdio":
            cwd = spec.cwd or self.workspace
            if not Path(cwd).is_dir():
                raise MCPError(
                    f"MCP server `{self.name}` ({self.describe()}) could not start: "
                    f"its working directory {cwd} does not exist"
                )
        elif not spec.url:
            raise MCPError(f"MCP server `{self.name}` has neither a `command` nor a `url`")

    def _start_failure_message(self) -> str:
        head = f"MCP server `{self.name}` ({self.describe()})"
        task = self._task
        if self._timed_out:
            cause = f"timed out after {self.spec.timeout:g} s waiting for it to initialise"
            if self._http_error is not None:
                cause += f" (last answer: {self._http_error})"
        elif self._start_error is not None:
            cause = self._describe_start_error(self._start_error)
        elif task is not None and task.cancelled():
            cause = "start-up was cancelled"
        else:
            cause = "it stopped before it was ready"
        if self._stdout_noise is not None:
            cause += f"; it sent something that is not JSON-RPC: {self._stdout_noise}"
        return f"{head} could not start: {cause}{self._stderr_block()}"

    def _describe_start_error(self, exc: BaseException) -> str:
        spec = self.spec
        if self._http_error is not None:
            status = self._http_error
            if status.startswith(("HTTP 401", "HTTP 403")):
                return (
                    f"the server answered {status}: check the credentials in its `headers` "
                    "(for example `Authorization: Bearer ${TOKEN}`)"
                )
            return f"the server answered {status}"
        if isinstance(exc, FileNotFoundError) and spec.transport == "stdio":
            return f"command `{spec.command}` not found (is it installed and on PATH?)"
        if isinstance(exc, PermissionError) and spec.transport == "stdio":
            return f"command `{spec.command}` cannot be executed ({exc.strerror})"
        if isinstance(exc, ProtocolError):
            if exc.code == types.CONNECTION_CLOSED:
                if spec.transport == "stdio":
                    return "the server exited (or closed its output) during initialisation"
                return "the connection closed during initialisation"
            return f"initialisation failed: {exc.message} (error {exc.code})"
        if isinstance(exc, httpx2.HTTPError):
            return f"cannot reach {display_url(spec.url or '')}: {_exception_text(exc)}"
        return _exception_text(exc)

    def _stderr_block(self) -> str:
        tail = self.stderr_tail()
        if not tail:
            return ""
        indented = "\n".join(f"  {line}" for line in tail.splitlines())
        return f"\nserver stderr (last lines):\n{indented}"

    def _on_stream_end(self) -> None:
        """The server's message stream ended: unless we are closing, it died."""
        if self._ready.is_set() and not self._closing.is_set():
            self._mark_failed_soon(self._lost_reason())

    def _lost_reason(self) -> str:
        if self.spec.transport == "stdio":
            return "the server process exited or closed its output"
        return "the connection to the server was lost"

    def _mark_failed_soon(self, reason: str) -> asyncio.Task[None]:
        if self._failure is None:
            self._failure = reason
        if self._failure_report is None:
            self._failure_report = asyncio.get_running_loop().create_task(self._report_failure())
        return self._failure_report

    async def _mark_failed(self, reason: str) -> None:
        await asyncio.shield(self._mark_failed_soon(reason))

    async def _report_failure(self) -> None:
        if self._stderr is not None:
            await self._stderr.settle()
        self._diagnostics.append(
            MCPDiagnostic(
                self.name,
                f"MCP server `{self.name}` ({self.describe()}) stopped: "
                f"{self._failure}; its tools fail from now on{self._stderr_block()}",
                "error",
            )
        )

    def _not_running(self, tool: str) -> ToolResult:
        reason = self._failure or ("it was shut down" if self._closing.is_set() else "not started")
        return ToolResult(
            f"MCP server `{self.name}` is not running: {reason}. "
            f"The tool `{tool}` cannot be used now.",
            is_error=True,
            details={"server": self.name, "tool": tool, "failure": self._failure},
        )

    def _require_session(self) -> ClientSession:
        if self._session is None or self._failure is not None:
            reason = self._failure or "it is not started"
            raise MCPError(f"MCP server `{self.name}` is not running: {reason}")
        return self._session


class _WatchedReadStream:
    """The transport's read stream, reporting its end: that is how a server's death
    shows up, and noticing it at once (rather than at the next call) lets the
    diagnostic carry the server's last stderr lines while they are fresh."""

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


def _root_cause(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from anyio task groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def _noise_text(exc: Exception) -> str:
    """What a server sent instead of JSON-RPC, short: the parser's error quotes it."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            value = errors()[0].get("input")
        except Exception:
            value = None
        if isinstance(value, str):
            return repr(value[:80] + ("..." if len(value) > 80 else ""))
    return _exception_text(exc)[:200]


def _exception_text(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
