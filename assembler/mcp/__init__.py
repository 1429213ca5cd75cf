"""Tools from Model Context Protocol servers.

`connect_tool_sets` turns the manifest's `mcp` tool sets into `Tool` objects backed
by live server connections; `MCPConnection` is one such connection. Deciding whether
a project's stdio command may run at all (trust) happens before this package is used.
"""

from __future__ import annotations

from assembler.mcp.connection import MCPConnection, MCPDiagnostic, server_environment
from assembler.mcp.results import render_result
from assembler.mcp.toolset import MCPToolsets, ToolClash, build_tool, connect_tool_sets

__all__ = [
    "MCPConnection",
    "MCPDiagnostic",
    "MCPToolsets",
    "ToolClash",
    "build_tool",
    "connect_tool_sets",
    "render_result",
    "server_environment",
]
