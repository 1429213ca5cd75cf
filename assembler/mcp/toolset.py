"""From the manifest's MCP tool sets to `Tool` objects the registry can hold.

Each distinct server is started once, however many sets use it (one set may expose
its read tools, another its write tools with different guidelines), and all servers
start concurrently so an agent with three servers waits for the slowest, not the sum.
A set then picks tools by the names the server gives them (`allow`) and may rename
them (`prefix`), because two servers commonly offer the same name (`search`, `read`)
and the model can only call one tool by each name.

When two sets still produce the same name, the first one declared keeps it and the
clash is reported with both servers named: silently replacing a tool would change
what the agent does depending on which server answered first.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import mcp_types as types

from assembler.errors import MCPError
from assembler.manifest.model import MCPServerSpec, MCPToolSet
from assembler.mcp.connection import MCPConnection, MCPDiagnostic
from assembler.sandbox.runtime import Sandbox
from assembler.tools.base import Tool, ToolContext, ToolFunction, ToolResult

# What OpenAI and Anthropic accept as a tool name.
_PROVIDER_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class ToolClash:
    """Two sets produced the tool `name`; the one from `kept` stays, `dropped` is left
    out. Both are `Tool.source` strings (`mcp:<server>`)."""

    name: str
    kept: str
    dropped: str


@dataclass
class MCPToolsets:
    """The tools of every MCP set, the live connections behind them, and what went
    wrong on the way. Close it (`aclose()` or `async with`) to stop every server."""

    tools: tuple[Tool, ...] = ()
    connections: Mapping[str, MCPConnection] = field(default_factory=dict)
    clashes: tuple[ToolClash, ...] = ()
    startup_diagnostics: tuple[MCPDiagnostic, ...] = ()
    _reported: int = field(default=0, init=False, repr=False)

    @property
    def diagnostics(self) -> tuple[MCPDiagnostic, ...]:
        """Start-up diagnostics, then whatever the servers reported since (a crash)."""
        running = tuple(d for c in self.connections.values() for d in c.diagnostics)
        return self.startup_diagnostics + running

    def new_diagnostics(self) -> tuple[MCPDiagnostic, ...]:
        """Diagnostics not returned by an earlier call: for a runner that turns each
        into one event without repeating it."""
        every = self.diagnostics
        fresh, self._reported = every[self._reported :], len(every)
        return fresh

    async def aclose(self) -> None:
        """Shut every server down, concurrently; no child process is left behind."""
        await asyncio.gather(*(c.close() for c in self.connections.values()))

    async def __aenter__(self) -> MCPToolsets:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


async def connect_tool_sets(
    sets: Sequence[MCPToolSet],
    workspace: Path,
    *,
    strict: bool = True,
    sandbox: Sandbox | None = None,
) -> MCPToolsets:
    """Start the servers `sets` use, list their tools and build the `Tool` objects.

    With `strict` (the default) a server that cannot start or list its tools raises
    `MCPError` after every other server was shut down again; without it, that server
    becomes an error diagnostic and the other servers' tools are still returned.
    `sandbox` confines stdio servers that declare no `sandbox:` of their own.
    """
    specs: dict[str, MCPServerSpec] = {}
    diagnostics: list[MCPDiagnostic] = []
    for tool_set in sets:
        spec = tool_set.server
        known = specs.setdefault(spec.name, spec)
        if known != spec:
            diagnostics.append(
                MCPDiagnostic(
                    spec.name,
                    f"two different MCP servers are both named `{spec.name}`; "
                    "the first declaration is used for both sets",
                )
            )

    connections = {
        name: MCPConnection(spec, workspace=workspace, sandbox=sandbox)
        for name, spec in specs.items()
    }
    try:
        listings = await asyncio.gather(
            *(_start_and_list(c) for c in connections.values()), return_exceptions=True
        )
    except BaseException:  # cancelled (Ctrl-C) while starting: leave no server behind
        await asyncio.shield(asyncio.gather(*(c.close() for c in connections.values())))
        raise
    tools_by_server: dict[str, list[types.Tool]] = {}
    failures: list[BaseException] = []
    for (name, connection), listing in zip(connections.items(), listings, strict=True):
        if isinstance(listing, BaseException):
            failures.append(listing)
            diagnostics.append(MCPDiagnostic(name, str(listing), "error"))
            await connection.close()
        else:
            tools_by_server[name] = listing
    live = {name: c for name, c in connections.items() if name in tools_by_server}

    if failures and strict:
        await asyncio.gather(*(c.close() for c in live.values()))
        unexpected = [f for f in failures if not isinstance(f, MCPError)]
        if unexpected:
            raise unexpected[0]
        raise MCPError("\n".join(str(f) for f in failures))

    tools: dict[str, Tool] = {}
    clashes: list[ToolClash] = []
    for tool_set in sets:
        server = tool_set.server.name
        offered = tools_by_server.get(server)
        if offered is None:
            continue
        for tool in _select(tool_set, offered, diagnostics):
            built = build_tool(tool, tool_set, live[server])
            existing = tools.get(built.name)
            if existing is None:
                tools[built.name] = built
                _check_name(built, diagnostics)
                continue
            clashes.append(ToolClash(built.name, existing.source, built.source))
            diagnostics.append(_clash_diagnostic(built, existing, server))

    return MCPToolsets(
        tools=tuple(tools.values()),
        connections=live,
        clashes=tuple(clashes),
        startup_diagnostics=tuple(diagnostics),
    )


def build_tool(tool: types.Tool, tool_set: MCPToolSet, connection: MCPConnection) -> Tool:
    """The `Tool` for one server tool: the server's description and input schema
    as they are, the set's prefix and guidelines, calls going through `connection`."""
    description = (tool.description or "").strip() or (tool.title or "").strip()
    if not description:
        description = f"Tool `{tool.name}` of the MCP server `{connection.name}`."
    return Tool(
        name=tool_set.prefix + tool.name,
        description=description,
        parameters=_parameters(tool.input_schema),
        execute=_executor(connection, tool.name),
        snippet=_first_line(description),
        guidelines=tool_set.guidelines,
        source=f"mcp:{connection.name}",
    )


def _select(
    tool_set: MCPToolSet, offered: list[types.Tool], diagnostics: list[MCPDiagnostic]
) -> list[types.Tool]:
    """The server's tools the set allows, in the server's order."""
    if tool_set.allow is None:
        return offered
    allowed = set(tool_set.allow)
    names = {tool.name for tool in offered}
    server = tool_set.server.name
    for name in tool_set.allow:
        if name not in names:
            available = ", ".join(f"`{n}`" for n in sorted(names)) or "none"
            diagnostics.append(
                MCPDiagnostic(
                    server,
                    f"MCP server `{server}` has no tool `{name}` (listed in `allow`); "
                    f"it offers {available}",
                )
            )
    return [tool for tool in offered if tool.name in allowed]


def _clash_diagnostic(built: Tool, existing: Tool, server: str) -> MCPDiagnostic:
    if built.source == existing.source:
        message = (
            f"tool `{built.name}` of MCP server `{server}` is included by two tool sets; "
            "the first set's version is kept"
        )
    else:
        other = existing.source.removeprefix("mcp:")
        message = (
            f"tool `{built.name}` of MCP server `{server}` clashes with `{built.name}` "
            f"from {existing.source}; the one from `{other}` is kept (give one of the "
            "sets a `prefix`)"
        )
    return MCPDiagnostic(server, message)


def _check_name(tool: Tool, diagnostics: list[MCPDiagnostic]) -> None:
    if not _PROVIDER_TOOL_NAME.match(tool.name):
        server = tool.source.removeprefix("mcp:")
        diagnostics.append(
            MCPDiagnostic(
                server,
                f"tool `{tool.name}` of MCP server `{server}` has a name model providers "
                "may reject (they accept 1-64 letters, digits, `_` and `-`)",
            )
        )


async def _start_and_list(connection: MCPConnection) -> list[types.Tool]:
    await connection.start()
    return await connection.list_tools()


def _executor(connection: MCPConnection, name: str) -> ToolFunction:
    async def execute(arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        return await connection.call_tool(name, arguments, context=ctx)

    return execute


def _parameters(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The server's input schema; a server that sends none gets an empty object
    schema, which is what providers require for a tool without arguments."""
    if not isinstance(schema, Mapping) or not schema:
        return {"type": "object", "properties": {}}
    parameters = dict(schema)
    parameters.setdefault("type", "object")
    return parameters


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""
