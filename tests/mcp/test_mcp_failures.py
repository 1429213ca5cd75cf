"""MCP servers that fail: before start-up completes (an `MCPError` that says why) and
while running (an error result and a diagnostic, never an exception in the runner)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest
from mcp_fixtures import PYTHON, children_of, probe_spec, wait_gone, write_script

from assembler.errors import MCPError
from assembler.manifest.model import MCPServerSpec, MCPToolSet
from assembler.mcp import MCPConnection, connect_tool_sets
from assembler.tools.base import ToolContext

#: A guard on waits, so that a hang fails the test instead of blocking the suite. It is
#: far above any time the code under test allows itself; no test measures time.
HANG_GUARD = 60


def start_error(spec: MCPServerSpec, workspace: Path) -> MCPError:
    async def scenario() -> MCPError:
        connection = MCPConnection(spec, workspace=workspace)
        try:
            await asyncio.wait_for(connection.start(), HANG_GUARD)
        except MCPError as error:
            return error
        finally:
            await connection.close()
        raise AssertionError("the server started")

    return asyncio.run(scenario())


def test_missing_command(tmp_path: Path) -> None:
    error = start_error(MCPServerSpec(name="ghost", command="no-such-mcp-server-xyz"), tmp_path)
    message = str(error)
    assert "`ghost`" in message
    assert "`no-such-mcp-server-xyz` not found" in message


def test_missing_working_directory(tmp_path: Path) -> None:
    spec = MCPServerSpec(name="lost", command=PYTHON, cwd=tmp_path / "missing")
    assert "does not exist" in str(start_error(spec, tmp_path))


def test_server_exiting_at_once_shows_its_stderr(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        "crash.py",
        "import sys\n"
        "print('starting up', file=sys.stderr)\n"
        "print('fatal: SERVICE_TOKEN is not set', file=sys.stderr)\n"
        "sys.exit(2)\n",
    )
    spec = MCPServerSpec(name="crashy", command=PYTHON, args=(str(script),))
    message = str(start_error(spec, tmp_path))
    assert "`crashy`" in message
    assert "exited" in message
    assert "fatal: SERVICE_TOKEN is not set" in message
    assert message.index("starting up") < message.index("fatal:")


def test_server_that_never_initialises_times_out(tmp_path: Path) -> None:
    # Reads its requests and never answers, and ignores SIGTERM: only the kill that
    # follows an unanswered terminate stops it.
    script = write_script(
        tmp_path,
        "mute.py",
        "import signal, sys\n"
        "if hasattr(signal, 'SIGTERM'):\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "for _ in sys.stdin:\n"
        "    pass\n",
    )
    spec = MCPServerSpec(name="mute", command=PYTHON, args=(str(script),), timeout=0.5)

    async def scenario() -> str:
        before = children_of(os.getpid())
        connection = MCPConnection(spec, workspace=tmp_path)
        with pytest.raises(MCPError) as caught:
            await asyncio.wait_for(connection.start(), HANG_GUARD)
        # start() returns only after the server was stopped: nothing is left running.
        assert children_of(os.getpid()) <= before
        await connection.close()
        return str(caught.value)

    message = asyncio.run(scenario())
    assert "`mute`" in message
    assert "timed out after 0.5 s waiting for it to initialise" in message


def test_server_answering_garbage_fails_cleanly(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        "noisy.py",
        "import sys\nfor _ in sys.stdin:\n    print('this is not JSON-RPC', flush=True)\n",
    )
    spec = MCPServerSpec(name="noisy", command=PYTHON, args=(str(script),), timeout=1)
    message = str(start_error(spec, tmp_path))
    assert "`noisy`" in message
    assert "not JSON-RPC: 'this is not JSON-RPC'" in message


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_killed_server_gives_error_results_and_a_diagnostic(tmp_path: Path) -> None:
    tool_set = MCPToolSet(probe_spec(tmp_path, name="victim"))

    async def scenario() -> None:
        toolsets = await connect_tool_sets([tool_set], tmp_path)
        try:
            tools = {tool.name: tool for tool in toolsets.tools}
            ctx = ToolContext(workspace=tmp_path)
            pid = int((await tools["pid"].execute({}, ctx)).content)
            assert toolsets.new_diagnostics() == ()

            os.kill(pid, signal.SIGKILL)
            assert await asyncio.to_thread(wait_gone, pid)
            result = await tools["echo"].execute({"text": "hello"}, ctx)
            assert result.is_error
            assert "MCP server `victim` is not running" in result.content
            assert not toolsets.connections["victim"].alive

            # Later calls fail the same way, at once; the event loop carries on.
            again = await asyncio.wait_for(tools["echo"].execute({"text": "x"}, ctx), 2)
            assert "is not running" in again.content
            diagnostics = toolsets.new_diagnostics()
            assert len(diagnostics) == 1
            assert diagnostics[0].severity == "error"
            assert "`victim`" in diagnostics[0].message
            assert "stopped" in diagnostics[0].message
            assert toolsets.new_diagnostics() == ()
        finally:
            await toolsets.aclose()

    asyncio.run(scenario())


def test_call_in_flight_when_the_server_dies(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        "dying.py",
        textwrap.dedent(
            """
            import os
            import sys
            import time

            from mcp.server.mcpserver import MCPServer

            server = MCPServer("dying")


            @server.tool()
            def die() -> str:
                \"\"\"Exit in the middle of a call.\"\"\"
                print("about to crash", file=sys.stderr, flush=True)
                time.sleep(0.2)
                os._exit(7)


            server.run()
            """
        ),
    )
    spec = MCPServerSpec(name="dying", command=PYTHON, args=(str(script),))

    async def scenario() -> None:
        connection = MCPConnection(spec, workspace=tmp_path)
        await connection.start()
        try:
            result = await asyncio.wait_for(connection.call_tool("die", {}), 10)
            assert result.is_error
            assert "MCP server `dying` is not running" in result.content
            assert not connection.alive
            (diagnostic,) = connection.diagnostics
            assert "about to crash" in diagnostic.message
        finally:
            await connection.close()

    asyncio.run(scenario())


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to list child processes")
def test_aclose_leaves_no_child_process(tmp_path: Path) -> None:
    sets = [
        MCPToolSet(probe_spec(tmp_path, name="one")),
        MCPToolSet(probe_spec(tmp_path, name="two"), prefix="two_"),
    ]

    async def scenario() -> None:
        before = children_of(os.getpid())
        toolsets = await connect_tool_sets(sets, tmp_path)
        ctx = ToolContext(workspace=tmp_path)
        tools = {tool.name: tool for tool in toolsets.tools}
        pids = {
            int((await tools["pid"].execute({}, ctx)).content),
            int((await tools["two_pid"].execute({}, ctx)).content),
        }
        assert pids <= children_of(os.getpid())
        await toolsets.aclose()
        for pid in pids:
            assert await asyncio.to_thread(wait_gone, pid, 1.0), f"server {pid} survived"
        assert children_of(os.getpid()) <= before
        # Closing twice is harmless.
        await toolsets.aclose()

    asyncio.run(scenario())


def test_failed_start_in_strict_mode_stops_the_other_servers(tmp_path: Path) -> None:
    sets = [
        MCPToolSet(probe_spec(tmp_path, name="good")),
        MCPToolSet(MCPServerSpec(name="bad", command="no-such-mcp-server-xyz")),
    ]

    async def scenario() -> None:
        before = children_of(os.getpid())
        with pytest.raises(MCPError, match="`bad`"):
            await connect_tool_sets(sets, tmp_path)
        await asyncio.sleep(0)
        assert children_of(os.getpid()) <= before

    asyncio.run(scenario())


def test_failed_start_without_strict_keeps_the_other_servers(tmp_path: Path) -> None:
    sets = [
        MCPToolSet(probe_spec(tmp_path, name="good")),
        MCPToolSet(MCPServerSpec(name="bad", command="no-such-mcp-server-xyz")),
    ]

    async def scenario() -> None:
        async with await connect_tool_sets(sets, tmp_path, strict=False) as toolsets:
            assert set(toolsets.connections) == {"good"}
            assert "echo" in {tool.name for tool in toolsets.tools}
            (diagnostic,) = toolsets.diagnostics
            assert diagnostic.server == "bad"
            assert diagnostic.severity == "error"
            assert "not found" in diagnostic.message

    asyncio.run(scenario())


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_cancelled_start_leaves_no_process(tmp_path: Path) -> None:
    script = write_script(tmp_path, "mute.py", "import sys\nfor _ in sys.stdin:\n    pass\n")
    spec = MCPServerSpec(name="mute", command=PYTHON, args=(str(script),), timeout=30)

    async def scenario() -> None:
        before = children_of(os.getpid())
        connection = MCPConnection(spec, workspace=tmp_path)
        task = asyncio.create_task(connection.start())
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert children_of(os.getpid()) <= before

    asyncio.run(scenario())


MODERN_ONLY_SERVER = textwrap.dedent(
    """
    import json
    import sys

    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        if method == "initialize":
            requested = message["params"]["protocolVersion"]
            data = {"supported": ["2026-07-28"], "requested": requested}
            reply = {"error": {"code": -32022, "message": "no handshake here", "data": data}}
        elif method == "server/discover":
            reply = {"result": {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}}
        elif method == "tools/list":
            tools = [{"name": "hello", "inputSchema": {"type": "object"}}]
            reply = {"result": {"tools": tools, "resultType": "complete", "ttlMs": 0,
                                "cacheScope": "private"}}
        elif method == "tools/call":
            content = [{"type": "text", "text": "hello from 2026"}]
            reply = {"result": {"content": content, "resultType": "complete"}}
        else:
            reply = {"error": {"code": -32601, "message": "unknown method"}}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}), flush=True)
    """
)


def test_server_refusing_initialize_is_asked_server_discover(tmp_path: Path) -> None:
    script = write_script(tmp_path, "modern.py", MODERN_ONLY_SERVER)
    spec = MCPServerSpec(name="modern", command=PYTHON, args=(str(script),), timeout=5)

    async def scenario() -> None:
        async with MCPConnection(spec, workspace=tmp_path) as connection:
            assert [tool.name for tool in await connection.list_tools()] == ["hello"]
            result = await connection.call_tool("hello", {})
            assert result.content == "hello from 2026"

    asyncio.run(scenario())
