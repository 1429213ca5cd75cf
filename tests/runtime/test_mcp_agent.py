"""MCP tool sets inside an agent: one snapshot, trust, render, shutdown."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path

import pytest
from clirun import assemble

from assembler.build import build_agent
from assembler.errors import TrustError
from assembler.manifest.loader import load_manifest
from assembler.runner.events import Diagnostic, ToolResultEvent
from assembler.testing import ScriptedModel, text, tool_call


def manifest(tmp_path: Path, extra_sets: str = "", marker: str = "none") -> Path:
    (tmp_path / "ws").mkdir(exist_ok=True)
    path = tmp_path / "agent.yaml"
    path.write_text(
        f"""\
version: 1
name: timekeeper
identity: Tell the time with `get_current_time`.
workspace: ws
tools:
  sets:
    - builtin: [read]
    - mcp: time
      allow: [get_current_time]
{extra_sets}
  servers:
    time:
      command: {sys.executable}
      args: ["-m", "mcp_server_time", "--local-timezone", "UTC"]
      env: {{TEST_MARKER: "{marker}"}}
"""
    )
    return path


@pytest.mark.slow
def test_mcp_tools_join_the_prompt_and_the_schemas_and_can_be_called(tmp_path: Path) -> None:
    model = ScriptedModel(
        [tool_call("get_current_time", timezone="Europe/Berlin"), text("It is late.")]
    )
    marker = f"assembler-test-{uuid.uuid4().hex}"
    agent = build_agent(
        load_manifest(manifest(tmp_path, marker=marker)),
        provider=model,
        trust=True,
        record_session=False,
    )

    async def go() -> list[object]:
        async with agent:
            assert processes_with(marker), "the server should be running"
            return [e async for e in agent.stream("What time is it in Berlin?")]

    events = asyncio.run(go())
    request = model.requests[0]
    assert [t.name for t in request.tools] == ["read", "get_current_time"]
    assert "- get_current_time:" in request.system
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert not result.is_error and "Europe/Berlin" in result.content
    assert processes_with(marker) == []


def processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose environment holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (
                marker.encode() in (entry / "environ").read_bytes()
                and "State:\tZ" not in (entry / "status").read_text()
            ):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_a_project_mcp_command_needs_trust(tmp_path: Path) -> None:
    with pytest.raises(TrustError, match="MCP server `time`"):
        build_agent(
            load_manifest(manifest(tmp_path)), provider=ScriptedModel([]), record_session=False
        )


def test_dry_run_lists_the_servers_it_cannot_know(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = assemble(capsys, "render", "--dry-run", str(manifest(tmp_path)), "--strict")
    assert result.code == 1
    assert "MCP server `time` is not started in a dry run" in result.err
    assert "get_current_time" not in result.out.split("## tools", 1)[1].split("## workspace")[0]


@pytest.mark.slow
def test_render_without_dry_run_starts_the_server_and_shows_its_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = assemble(capsys, "render", str(manifest(tmp_path)), "--trust", "--prompt-only")
    assert result.code == 0, result.err
    assert "- get_current_time:" in result.out


@pytest.mark.slow
def test_a_server_that_fails_to_start_is_a_diagnostic_and_the_agent_goes_on(tmp_path: Path) -> None:
    path = manifest(
        tmp_path,
        extra_sets="    - mcp: {command: "
        + sys.executable
        + ", args: ['-c', 'import sys; sys.stderr.write(\"broken server\\\\n\"); sys.exit(3)']}",
    )
    model = ScriptedModel([text("fine")])
    agent = build_agent(load_manifest(path), provider=model, trust=True, record_session=False)

    async def go() -> list[object]:
        async with agent:
            return [e async for e in agent.stream("hi")]

    events = asyncio.run(go())
    diagnostics = [e for e in events if isinstance(e, Diagnostic)]
    assert any("broken server" in d.message for d in diagnostics), diagnostics
    assert "get_current_time" in [t.name for t in model.requests[0].tools]


def test_provider_keys_do_not_reach_a_stdio_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from assembler.mcp.connection import server_environment

    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    env = server_environment({"MINE": "1"})
    assert env["MINE"] == "1" and "OPENAI_API_KEY" not in env
    assert env.get("PATH") == os.environ.get("PATH")
