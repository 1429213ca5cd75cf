"""MCP servers over stdio: the reference servers, and what a server process sees."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_fixtures import (
    git_server_command,
    make_git_repository,
    probe_spec,
    time_server_command,
)

from assembler.manifest.model import MCPServerSpec
from assembler.mcp import MCPConnection, server_environment
from assembler.tools.base import ToolContext


def test_time_server_lists_tools_and_tells_the_time(tmp_path: Path) -> None:
    command, args = time_server_command()
    spec = MCPServerSpec(name="time", command=command, args=args)

    async def scenario() -> None:
        async with MCPConnection(spec, workspace=tmp_path) as connection:
            assert connection.alive
            tools = {tool.name: tool for tool in await connection.list_tools()}
            assert {"get_current_time", "convert_time"} <= set(tools)
            assert "timezone" in tools["get_current_time"].input_schema["properties"]

            result = await connection.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
            assert not result.is_error, result.content
            answer = json.loads(result.content)
            assert answer["timezone"] == "Asia/Tokyo"
            assert answer["datetime"].endswith("+09:00")

            wrong = await connection.call_tool("get_current_time", {"timezone": "Nowhere/Land"})
            assert wrong.is_error
            assert "Nowhere/Land" in wrong.content
        assert not connection.alive

    asyncio.run(scenario())


def test_git_server_reports_status_and_log(tmp_path: Path) -> None:
    repository = make_git_repository(tmp_path / "repo")
    command, args = git_server_command()
    spec = MCPServerSpec(name="git", command=command, args=(*args, "--repository", str(repository)))

    async def scenario() -> None:
        async with MCPConnection(spec, workspace=repository) as connection:
            names = {tool.name for tool in await connection.list_tools()}
            assert {"git_status", "git_log"} <= names

            status = await connection.call_tool("git_status", {"repo_path": str(repository)})
            assert not status.is_error, status.content
            assert "notes.txt" in status.content

            log = await connection.call_tool("git_log", {"repo_path": str(repository)})
            assert not log.is_error, log.content
            assert "first commit" in log.content
            assert "Test" in log.content

    asyncio.run(scenario())


def test_server_sees_declared_variables_but_not_provider_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    monkeypatch.setenv("UNRELATED_SETTING", "from-the-shell")
    spec = probe_spec(tmp_path, env={"PROBE_DECLARED": "declared-value"})

    async def scenario() -> None:
        async with MCPConnection(spec, workspace=tmp_path) as connection:

            async def getenv(name: str) -> str:
                result = await connection.call_tool("getenv", {"name": name})
                assert not result.is_error, result.content
                return result.content

            assert await getenv("PROBE_DECLARED") == "'declared-value'"
            assert await getenv("OPENAI_API_KEY") == "None"
            assert await getenv("UNRELATED_SETTING") == "None"
            assert await getenv("PATH") != "None"

    asyncio.run(scenario())


def test_environment_is_a_minimal_base_plus_declared() -> None:
    parent = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "ANTHROPIC_API_KEY": "secret",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "PYTHONPATH": "/somewhere",
    }
    env = server_environment({"GITHUB_TOKEN": "declared on purpose"}, parent)
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "GITHUB_TOKEN": "declared on purpose",
    }


def test_environment_and_url_helpers_load_without_the_sdk() -> None:
    code = (
        "import sys\n"
        "from assembler.mcp.environment import server_environment\n"
        "from assembler.urls import display_url\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types'))\n"
        "print(heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_working_directory_is_the_workspace_unless_declared(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    elsewhere = tmp_path / "elsewhere"
    workspace.mkdir()
    elsewhere.mkdir()

    async def cwd_of(spec: MCPServerSpec) -> str:
        async with MCPConnection(spec, workspace=workspace) as connection:
            return (await connection.call_tool("cwd", {})).content

    async def scenario() -> None:
        default, declared = await asyncio.gather(
            cwd_of(probe_spec(tmp_path)), cwd_of(probe_spec(tmp_path, cwd=elsewhere))
        )
        assert Path(default).resolve() == workspace.resolve()
        assert Path(declared).resolve() == elsewhere.resolve()

    asyncio.run(scenario())


def test_results_errors_images_and_truncation(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with MCPConnection(probe_spec(tmp_path), workspace=tmp_path) as connection:
            failed = await connection.call_tool("fail", {"message": "the disk is on fire"})
            assert failed.is_error
            assert "the disk is on fire" in failed.content

            image = await connection.call_tool("picture", {})
            assert not image.is_error
            assert image.content == "[image: image/png, 12.3 KB]"

            context = ToolContext(workspace=tmp_path, max_output_lines=5)
            long = await connection.call_tool("lines", {"count": 50}, context=context)
            assert long.content.startswith("line 1\nline 2\n")
            assert "line 6" not in long.content
            assert "[output truncated: showing lines 1-5 of 50" in long.content
            assert long.details["truncated"] is True

            unknown = await connection.call_tool("no_such_tool", {})
            assert unknown.is_error
            assert "no_such_tool" in unknown.content

            invalid = await connection.call_tool("lines", {"count": "many"})
            assert invalid.is_error

            # Calls from many tasks at once share the one session.
            texts = [f"call {i}" for i in range(20)]
            answers = await asyncio.gather(
                *(connection.call_tool("echo", {"text": text}) for text in texts)
            )
            assert [answer.content for answer in answers] == texts

    asyncio.run(scenario())
