"""MCP stdio servers run confined: by the agent's sandbox, or by their own `sandbox:`."""

from __future__ import annotations

import asyncio
import socket
import sys
import textwrap
from pathlib import Path

import pytest
from escapes import needs_landlock, needs_seccomp

from assembler.manifest.model import MCPServerSpec
from assembler.sandbox.runtime import Sandbox
from assembler.sandbox.spec import SandboxSpec

pytest.importorskip("mcp")
from assembler.mcp import MCPConnection

pytestmark = [needs_landlock, needs_seccomp]

SERVER = textwrap.dedent(
    '''
    import socket
    import sys

    from mcp.server.mcpserver import MCPServer

    server = MCPServer("writer")


    @server.tool()
    def write(path: str) -> str:
        """Write a file."""
        try:
            with open(path, "w") as handle:
                handle.write("x")
        except OSError as e:
            return f"failed: {e.strerror}"
        return "written"


    @server.tool()
    def connect(port: int) -> str:
        """Open a TCP connection to this machine."""
        try:
            socket.create_connection(("127.0.0.1", port), 3).close()
        except OSError as e:
            return f"failed: {e.strerror}"
        return "connected"


    server.run()
    '''
)


def session(
    spec: MCPServerSpec, workspace: Path, sandbox: Sandbox | None, *calls: tuple[str, dict]
) -> list[tuple[bool, str]]:
    """Start the server, make `calls` (tool, arguments) in order, stop it."""

    async def scenario() -> list[tuple[bool, str]]:
        async with MCPConnection(spec, workspace=workspace, sandbox=sandbox) as connection:
            results = [await connection.call_tool(tool, arguments) for tool, arguments in calls]
            return [(r.is_error, r.content) for r in results]

    return asyncio.run(scenario())


@pytest.mark.slow
def test_a_server_runs_in_the_agents_sandbox(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    spec = MCPServerSpec(name="writer", command=sys.executable, args=(str(script),))
    outside = tmp_path / "outside.txt"
    inside = workspace / "inside.txt"
    write_outside = ("write", {"path": str(outside)})
    assert session(spec, workspace, None, write_outside) == [(False, "written")]
    outside.unlink()
    sandbox = Sandbox.start(
        SandboxSpec("workspace-write", "off"), workspace, workspace / "agent.yaml"
    )
    assert sandbox is not None
    try:
        results = session(spec, workspace, sandbox, write_outside, ("write", {"path": str(inside)}))
    finally:
        sandbox.close()
    assert results == [(False, "failed: Permission denied"), (False, "written")]
    assert not outside.exists()


@pytest.mark.slow
def test_a_servers_own_sandbox_replaces_the_agents(tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    connect = ("connect", {"port": listener.getsockname()[1]})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    outside = tmp_path / "outside.txt"
    agent = Sandbox.start(SandboxSpec("workspace-write", "off"), workspace, workspace / "a.yaml")
    assert agent is not None
    try:
        confined = MCPServerSpec(name="writer", command=sys.executable, args=(str(script),))
        assert session(confined, workspace, agent, connect) == [
            (False, "failed: Operation not permitted")
        ]
        networked = MCPServerSpec(
            name="writer",
            command=sys.executable,
            args=(str(script),),
            sandbox=SandboxSpec("workspace-write", "on"),
        )
        results = session(networked, workspace, agent, connect, ("write", {"path": str(outside)}))
    finally:
        listener.close()
        agent.close()
    # the network it declared, and still only the workspace to write
    assert results == [(False, "connected"), (False, "failed: Permission denied")]
    assert not outside.exists()
