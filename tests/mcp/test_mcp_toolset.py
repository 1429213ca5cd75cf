"""From MCP tool sets to `Tool` objects: allow, prefix, shared servers and clashes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import mcp_types as types
from mcp_fixtures import http_server, probe_spec, serve_http

from assembler.manifest.model import MCPServerSpec, MCPToolSet
from assembler.mcp import MCPConnection, ToolClash, build_tool, connect_tool_sets
from assembler.tools.base import ToolContext


def test_server_used_by_two_sets_starts_once(tmp_path: Path) -> None:
    spec = probe_spec(tmp_path, name="shared")
    sets = [
        MCPToolSet(spec, allow=("pid", "echo"), guidelines=("Echo only short texts.",)),
        MCPToolSet(spec, allow=("pid",), prefix="again_"),
    ]

    async def scenario() -> None:
        async with await connect_tool_sets(sets, tmp_path) as toolsets:
            assert list(toolsets.connections) == ["shared"]
            tools = {tool.name: tool for tool in toolsets.tools}
            assert list(tools) == ["echo", "pid", "again_pid"]  # by name within each set
            ctx = ToolContext(workspace=tmp_path)
            first = await tools["pid"].execute({}, ctx)
            second = await tools["again_pid"].execute({}, ctx)
            assert first.content == second.content
            assert tools["echo"].guidelines == ("Echo only short texts.",)
            assert tools["again_pid"].guidelines == ()
            assert toolsets.diagnostics == ()

    asyncio.run(scenario())


def test_allow_filters_and_reports_unknown_names(tmp_path: Path) -> None:
    with serve_http(http_server("calc", ("add", "greet"))) as url:
        sets = [MCPToolSet(MCPServerSpec(name="calc", url=url), allow=("greet", "multiply"))]

        async def scenario() -> None:
            async with await connect_tool_sets(sets, tmp_path) as toolsets:
                assert [tool.name for tool in toolsets.tools] == ["greet"]
                (diagnostic,) = toolsets.diagnostics
                assert diagnostic.server == "calc"
                assert "no tool `multiply`" in diagnostic.message
                assert "`add`, `greet`" in diagnostic.message

        asyncio.run(scenario())


def test_clash_without_prefix_keeps_the_first_and_names_both(tmp_path: Path) -> None:
    with (
        serve_http(http_server("alpha", ("search", "add"))) as alpha,
        serve_http(http_server("beta", ("search",))) as beta,
    ):
        sets = [
            MCPToolSet(MCPServerSpec(name="alpha", url=alpha)),
            MCPToolSet(MCPServerSpec(name="beta", url=beta)),
        ]

        async def scenario() -> None:
            async with await connect_tool_sets(sets, tmp_path) as toolsets:
                tools = {tool.name: tool for tool in toolsets.tools}
                assert list(tools) == ["add", "search"]
                assert tools["search"].source == "mcp:alpha"
                result = await tools["search"].execute({"query": "q"}, ToolContext(tmp_path))
                assert result.content == "alpha results for q"
                assert toolsets.clashes == (ToolClash("search", "mcp:alpha", "mcp:beta"),)
                (diagnostic,) = toolsets.diagnostics
                assert "`alpha`" in diagnostic.message and "`beta`" in diagnostic.message
                assert "prefix" in diagnostic.message

        asyncio.run(scenario())


def test_prefix_keeps_both_servers_tools(tmp_path: Path) -> None:
    with (
        serve_http(http_server("alpha", ("search",))) as alpha,
        serve_http(http_server("beta", ("search",))) as beta,
    ):
        sets = [
            MCPToolSet(MCPServerSpec(name="alpha", url=alpha)),
            MCPToolSet(MCPServerSpec(name="beta", url=beta), prefix="beta_"),
        ]

        async def scenario() -> None:
            async with await connect_tool_sets(sets, tmp_path) as toolsets:
                tools = {tool.name: tool for tool in toolsets.tools}
                assert list(tools) == ["search", "beta_search"]
                ctx = ToolContext(tmp_path)
                found = await tools["beta_search"].execute({"query": "q"}, ctx)
                assert found.content == "beta results for q"
                assert tools["beta_search"].source == "mcp:beta"
                assert toolsets.clashes == ()
                assert toolsets.diagnostics == ()

        asyncio.run(scenario())


def test_build_tool_uses_the_servers_description_and_schema(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    listed = types.Tool(
        name="read.file",
        description="Read a file.\n\nLonger explanation on later lines.",
        input_schema=schema,
    )
    spec = MCPServerSpec(name="fs", command="unused")
    tool_set = MCPToolSet(spec, prefix="fs_", guidelines=("Prefer small files.",))
    tool = build_tool(listed, tool_set, MCPConnection(spec, workspace=tmp_path))
    assert tool.name == "fs_read.file"
    assert tool.description.startswith("Read a file.\n\nLonger")
    assert tool.snippet == "Read a file."
    assert dict(tool.parameters) == schema
    assert tool.guidelines == ("Prefer small files.",)
    assert tool.source == "mcp:fs"

    bare = build_tool(
        types.Tool(name="ping", input_schema={"type": "object"}),
        MCPToolSet(spec),
        MCPConnection(spec, workspace=tmp_path),
    )
    assert bare.description == "Tool `ping` of the MCP server `fs`."
    assert bare.parameters == {"type": "object"}


def test_tools_keep_one_order_whatever_order_the_server_lists_them_in() -> None:
    """The tool schemas open every request: the same order from any listing keeps the
    prompt's prefix byte-identical, so the provider's prompt cache holds."""
    from assembler.mcp.toolset import _select

    def tool(name: str) -> types.Tool:
        return types.Tool(name=name, description=name, inputSchema={"type": "object"})

    spec = MCPToolSet(MCPServerSpec(name="s", command="unused"))
    listings = [["zeta", "alpha", "mid"], ["mid", "zeta", "alpha"], ["alpha", "mid", "zeta"]]
    chosen = [[t.name for t in _select(spec, [tool(n) for n in names], [])] for names in listings]
    assert chosen == [["alpha", "mid", "zeta"]] * 3
    allowed = MCPToolSet(spec.server, allow=("zeta", "alpha"))
    assert [t.name for t in _select(allowed, [tool("zeta"), tool("alpha")], [])] == [
        "alpha",
        "zeta",
    ]
