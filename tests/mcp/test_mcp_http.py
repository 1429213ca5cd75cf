"""MCP servers over streamable HTTP, served by the SDK's own server in a thread."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp_fixtures import http_server, serve_http

from assembler.errors import MCPError
from assembler.manifest.model import MCPServerSpec, MCPToolSet
from assembler.mcp import MCPConnection, connect_tool_sets
from assembler.mcp.connection import display_url
from assembler.tools.base import ToolContext


def test_http_server_lists_and_calls(tmp_path: Path) -> None:
    with serve_http(http_server("calc", ("add", "greet"))) as url:
        spec = MCPServerSpec(name="calc", url=url)

        async def scenario() -> None:
            async with await connect_tool_sets([MCPToolSet(spec)], tmp_path) as toolsets:
                tools = {tool.name: tool for tool in toolsets.tools}
                assert set(tools) == {"add", "greet"}
                assert tools["add"].source == "mcp:calc"
                assert tools["add"].description == "Add two integers."
                assert tools["add"].parameters["required"] == ["a", "b"]
                result = await tools["add"].execute({"a": 2, "b": 40}, ToolContext(tmp_path))
                assert not result.is_error
                assert result.content == "42"

        asyncio.run(scenario())


def test_bearer_token_from_the_spec_headers(tmp_path: Path) -> None:
    with serve_http(http_server("secure", ("greet",)), token="s3cret") as url:

        async def scenario() -> None:
            good = MCPServerSpec(name="secure", url=url, headers={"Authorization": "Bearer s3cret"})
            async with MCPConnection(good, workspace=tmp_path) as connection:
                result = await connection.call_tool("greet", {"name": "Ada"})
                assert result.content == "Hello, Ada!"

            for headers in ({"Authorization": "Bearer wrong"}, {}):
                bad = MCPServerSpec(name="secure", url=url, headers=headers, timeout=5)
                connection = MCPConnection(bad, workspace=tmp_path)
                try:
                    await connection.start()
                except MCPError as error:
                    message = str(error)
                else:
                    raise AssertionError("a wrong token was accepted")
                finally:
                    await connection.close()
                assert "`secure`" in message
                assert "401" in message
                assert "headers" in message
                assert "s3cret" not in message and "wrong" not in message

        asyncio.run(scenario())


def test_unreachable_http_server(tmp_path: Path) -> None:
    with serve_http(http_server("gone")) as url:
        pass  # the port is free again once the server stopped
    spec = MCPServerSpec(name="gone", url=url, timeout=5)

    async def scenario() -> str:
        connection = MCPConnection(spec, workspace=tmp_path)
        try:
            await connection.start()
        except MCPError as error:
            return str(error)
        finally:
            await connection.close()
        raise AssertionError("connected to a stopped server")

    message = asyncio.run(scenario())
    assert "`gone`" in message
    assert "cannot reach" in message


def test_messages_leave_out_credentials_in_urls_and_arguments(tmp_path: Path) -> None:
    assert display_url("https://user:pw@example.com:8443/mcp?token=abc#x") == (
        "https://example.com:8443/mcp"
    )
    assert display_url("http://[::1]:9000/mcp") == "http://[::1]:9000/mcp"
    stdio = MCPServerSpec(name="s", command="server", args=("--token", "abc123"))
    assert MCPConnection(stdio, workspace=tmp_path).describe() == "command `server`"
