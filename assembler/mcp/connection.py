"""One live connection to one MCP server, stdio or streamable HTTP.

Failures are split by when they happen. Before the server is usable (it cannot be
started, it exits, it does not answer `initialize` in `spec.timeout` seconds, an HTTP
endpoint answers 401) `start()` raises `MCPError` naming the server, the cause and
the tail of its stderr: the agent cannot be built as declared, and the user must fix
something. Once running, nothing raises into the runner: a server that dies or
rejects a call yields an error `ToolResult` the model can react to, and a death is
also recorded as a diagnostic for the user.

The transports live in `stdio` and `http_transport`, the task that owns the SDK
session in `session_task`; this module only decides what each outcome means.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession, IncomingMessage
from mcp.shared.exceptions import MCPError as ProtocolError

from assembler.errors import MCPError
from assembler.manifest.model import MCPServerSpec
from assembler.mcp.diagnostics import MCPDiagnostic, Severity, exception_text, noise_text
from assembler.mcp.environment import (
    BASE_ENVIRONMENT_POSIX,
    BASE_ENVIRONMENT_WINDOWS,
    server_environment,
)
from assembler.mcp.http_transport import HTTPTransport
from assembler.mcp.results import render_result
from assembler.mcp.session_task import CLIENT_INFO, SessionTask
from assembler.mcp.stdio import StdioTransport
from assembler.mcp.transport import Transport
from assembler.sandbox.runtime import Sandbox
from assembler.tools.base import ToolContext, ToolResult
from assembler.urls import display_url

__all__ = [
    "BASE_ENVIRONMENT_POSIX",
    "BASE_ENVIRONMENT_WINDOWS",
    "CLIENT_INFO",
    "MAX_TOOL_PAGES",
    "MCPConnection",
    "MCPDiagnostic",
    "Severity",
    "display_url",
    "server_environment",
]

#: At most this many `tools/list` pages are read from one server.
MAX_TOOL_PAGES = 100


def make_transport(
    spec: MCPServerSpec, workspace: Path, sandbox: Sandbox | None = None
) -> Transport:
    """The transport `spec` declares: a `command` is stdio (confined by `sandbox`
    unless the server declares its own), a `url` is HTTP."""
    if spec.transport == "stdio":
        return StdioTransport(spec, workspace, sandbox)
    return HTTPTransport(spec)


class MCPConnection:
    """A client connection to the MCP server `spec` describes.

    `workspace` is the working directory of a stdio server without `cwd`. Use as
    `await connection.start()` ... `await connection.close()`, or `async with`.
    """

    def __init__(
        self, spec: MCPServerSpec, *, workspace: Path, sandbox: Sandbox | None = None
    ) -> None:
        self.spec = spec
        self.workspace = workspace
        self._transport = make_transport(spec, workspace, sandbox)
        self._task = SessionTask(
            spec.name,
            self._transport,
            timeout=spec.timeout,
            on_message=self._on_message,
            on_stream_end=self._on_stream_end,
            on_shutdown_error=self._on_shutdown_error,
        )
        self._stdout_noise: str | None = None
        self._failure: str | None = None
        self._failure_report: asyncio.Task[None] | None = None
        self._diagnostics: list[MCPDiagnostic] = []

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def alive(self) -> bool:
        """Whether calls can go through: started, not closed, not known to be dead."""
        return self._task.session is not None and self._failure is None and not self._task.closing

    @property
    def session(self) -> ClientSession | None:
        """The SDK session while the server runs, for what this class does not wrap
        (resources, prompts) and for benchmarks; None before start and after close."""
        return self._task.session

    @property
    def server_info(self) -> types.Implementation | None:
        """The name and version the server gave when it initialised."""
        return self._task.server_info

    @property
    def instructions(self) -> str | None:
        """The server's usage instructions from its initialisation, if any."""
        return self._task.instructions

    @property
    def diagnostics(self) -> tuple[MCPDiagnostic, ...]:
        """What happened to this server while it ran (a crash, a failed shutdown)."""
        return tuple(self._diagnostics)

    def describe(self) -> str:
        """The command or the URL, for messages. Arguments, query strings and
        user:password are left out: `${VAR}` interpolation often puts tokens there,
        and these messages end up in terminals and CI logs."""
        return self._transport.describe()

    def stderr_tail(self, max_lines: int = 20) -> str:
        """The last lines the server wrote to stderr (stdio only; empty otherwise)."""
        return self._transport.stderr_tail(max_lines)

    async def start(self) -> None:
        """Start or connect to the server and run the `initialize` handshake.

        Raises `MCPError` when the server cannot start, does not initialise within
        `spec.timeout` seconds, or refuses the connection.
        """
        if self._task.started:
            raise RuntimeError(f"MCP server `{self.name}` was already started")
        problem = self._transport.launch_problem()
        if problem is not None:
            raise MCPError(f"{self._head()} could not start: {problem}")
        try:
            ready = await self._task.start()
        except asyncio.CancelledError:
            await self.close()
            raise
        if ready:
            return
        await self._transport.settle()
        raise MCPError(self._start_failure_message())

    async def list_tools(self) -> list[types.Tool]:
        """Every tool the server offers, following `nextCursor` pages."""
        session = self._require_session()
        tools: list[types.Tool] = []
        cursor: str | None = None
        failed = f"MCP server `{self.name}` could not list its tools"
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
                f"{failed}: {exc.message} (error {exc.code}){self._stderr_block()}"
            ) from exc
        except Exception as exc:  # an invalid listing, a network error
            raise MCPError(f"{failed}: {exception_text(exc)}{self._stderr_block()}") from exc
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
        if self._failure is not None:
            # Known dead: once a call says so, the diagnostic is on record too.
            await self._mark_failed(self._failure)
            return self._not_running(name)
        session = self._task.session
        if session is None or self._task.closing:
            return self._not_running(name)
        try:
            result = await session.call_tool(
                name, dict(arguments or {}), read_timeout_seconds=ctx.timeout
            )
        except ProtocolError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                if not self._task.closing:
                    await self._mark_failed(self._transport.lost_reason)
                return self._not_running(name)
            if exc.code == types.REQUEST_TIMEOUT:
                message = (
                    f"MCP tool `{name}` (server `{self.name}`) did not answer within "
                    f"{ctx.timeout:g} s"
                )
                return ToolResult(message, is_error=True, details={**details, "timed_out": True})
            message = (
                f"MCP server `{self.name}` rejected the call to `{name}`: {exc.message}"
                f"{self._transport.call_error_note()}"
            )
            return ToolResult(message, is_error=True, details={**details, "code": exc.code})
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            if not self._task.closing:
                await self._mark_failed("the connection to the server broke")
            return self._not_running(name)
        except Exception as exc:  # a bad result, a network error: the model is told
            message = f"MCP tool `{name}` (server `{self.name}`) failed: {exception_text(exc)}"
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
        if not self._task.started:
            return
        await self._task.close()
        if self._failure_report is not None and not self._failure_report.done():
            await asyncio.wait({self._failure_report})
        self._transport.release()

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

    # -- what the session task reports --------------------------------------------------

    async def _on_message(self, message: IncomingMessage) -> None:
        """Notice a server that writes non-protocol text to stdout, the most common
        way to break a stdio server (a stray `print`); other notifications, such as
        `tools/list_changed`, are not acted on: the agent's tools are fixed when it
        is built."""
        if not isinstance(message, Exception):
            return
        first = self._stdout_noise is None
        self._stdout_noise = noise_text(message)
        if first and self._task.ready:
            self._diagnostics.append(
                MCPDiagnostic(
                    self.name,
                    f"MCP server `{self.name}` sent something that is not JSON-RPC: "
                    f"{self._stdout_noise} (a server must log to stderr, not stdout)",
                )
            )

    def _on_stream_end(self) -> None:
        """The server's message stream ended while in use: it died."""
        self._mark_failed_soon(self._transport.lost_reason)

    def _on_shutdown_error(self, exc: BaseException) -> None:
        if self._failure is not None:
            return  # already reported; the transport's exit error only repeats it
        self._diagnostics.append(
            MCPDiagnostic(
                self.name,
                f"MCP server `{self.name}` did not shut down cleanly: {exception_text(exc)}",
            )
        )

    # -- failures ---------------------------------------------------------------------

    def _head(self) -> str:
        described = self.describe()
        return f"MCP server `{self.name}`" + (f" ({described})" if described else "")

    def _start_failure_message(self) -> str:
        task = self._task
        if task.timed_out:
            cause = f"timed out after {self.spec.timeout:g} s waiting for it to initialise"
            cause += self._transport.timeout_note()
        elif task.start_error is not None:
            cause = self._describe_start_error(task.start_error)
        elif task.cancelled:
            cause = "start-up was cancelled"
        else:
            cause = "it stopped before it was ready"
        if self._stdout_noise is not None:
            cause += f"; it sent something that is not JSON-RPC: {self._stdout_noise}"
        return f"{self._head()} could not start: {cause}{self._stderr_block()}"

    def _describe_start_error(self, exc: BaseException) -> str:
        specific = self._transport.start_error_cause(exc)
        if specific is not None:
            return specific
        if isinstance(exc, ProtocolError):
            return f"initialisation failed: {exc.message} (error {exc.code})"
        return exception_text(exc)

    def _stderr_block(self) -> str:
        tail = self.stderr_tail()
        if not tail:
            return ""
        indented = "\n".join(f"  {line}" for line in tail.splitlines())
        return f"\nserver stderr (last lines):\n{indented}"

    def _mark_failed_soon(self, reason: str) -> asyncio.Task[None]:
        if self._failure is None:
            self._failure = reason
        if self._failure_report is None:
            self._failure_report = asyncio.get_running_loop().create_task(self._report_failure())
        return self._failure_report

    async def _mark_failed(self, reason: str) -> None:
        """Record the failure (the first reason wins) and wait until it is reported."""
        await asyncio.shield(self._mark_failed_soon(reason))

    async def _report_failure(self) -> None:
        await self._transport.settle()
        self._diagnostics.append(
            MCPDiagnostic(
                self.name,
                f"{self._head()} stopped: {self._failure}; "
                f"its tools fail from now on{self._stderr_block()}",
                "error",
            )
        )

    def _not_running(self, tool: str) -> ToolResult:
        reason = self._failure or ("it was shut down" if self._task.closing else "not started")
        return ToolResult(
            f"MCP server `{self.name}` is not running: {reason}. "
            f"The tool `{tool}` cannot be used now.",
            is_error=True,
            details={"server": self.name, "tool": tool, "failure": self._failure},
        )

    def _require_session(self) -> ClientSession:
        session = self._task.session
        if session is None or self._failure is not None:
            reason = self._failure or "it is not started"
            raise MCPError(f"MCP server `{self.name}` is not running: {reason}")
        return session
