"""Tools from Model Context Protocol servers.

`connect_tool_sets` turns the manifest's `mcp` tool sets into `Tool` objects backed
by live server connections; `MCPConnection` is one such connection. Deciding whether
a project's stdio command may run at all (trust) happens before this package is used.

Names are imported on first use: `assembler.mcp.environment` (`server_environment`)
is needed without any server, and importing it must not load the MCP SDK. URLs are
shown through `assembler.urls.display_url`, which leaves out their credentials.

Modules: `connection` (`MCPConnection`: start, list, call, close, what failures
mean), `session_task` (the task owning the SDK session), `transport`, `stdio`,
`http_transport` (how each kind of server is reached and how its failures read),
`errlog` (a stdio server's stderr), `environment`, `diagnostics`, `results`
(tool results as text) and `toolset` (manifest sets to `Tool` objects).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "MCPConnection": "assembler.mcp.connection",
    "MCPDiagnostic": "assembler.mcp.diagnostics",
    "MCPToolsets": "assembler.mcp.toolset",
    "ToolClash": "assembler.mcp.toolset",
    "build_tool": "assembler.mcp.toolset",
    "connect_tool_sets": "assembler.mcp.toolset",
    "display_url": "assembler.urls",
    "render_result": "assembler.mcp.results",
    "server_environment": "assembler.mcp.environment",
}

__all__ = [
    "MCPConnection",
    "MCPDiagnostic",
    "MCPToolsets",
    "ToolClash",
    "build_tool",
    "connect_tool_sets",
    "display_url",
    "render_result",
    "server_environment",
]

if TYPE_CHECKING:
    from assembler.mcp.connection import MCPConnection
    from assembler.mcp.diagnostics import MCPDiagnostic
    from assembler.mcp.environment import server_environment
    from assembler.mcp.results import render_result
    from assembler.mcp.toolset import MCPToolsets, ToolClash, build_tool, connect_tool_sets
    from assembler.urls import display_url


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
