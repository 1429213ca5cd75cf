"""MCP tool sets inside an agent: one snapshot, trust, render, shutdown, and the
reference and HTTP servers called through scripted runs."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import uuid
from pathlib import Path
from types import ModuleType

import pytest
from clirun import assemble
from procs import live_processes_with

from assembler.agent.build import build_agent
from assembler.errors import TrustError
from assembler.runner.events import Diagnostic, RunStart, ToolCallResult
from assembler.testing import ScriptedModel, text, tool_call
from assembler.validation.load import load_manifest


def _load_mcp_fixtures() -> ModuleType:
    """`tests/mcp/mcp_fixtures.py`, the servers of the MCP tests. Pytest puts its
    directory on `sys.path` only for the tests beside it, and that directory cannot be
    a package: it would be named `mcp`, like the SDK."""
    loaded = sys.modules.get("mcp_fixtures")
    if loaded is not None:
        return loaded
    path = Path(__file__).resolve().parents[1] / "mcp" / "mcp_fixtures.py"
    spec = importlib.util.spec_from_file_location("mcp_fixtures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mcp_fixtures"] = module
    spec.loader.exec_module(module)
    return module


mcp_fixtures = _load_mcp_fixtures()


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
            assert live_processes_with(marker, where="environ"), "the server should be running"
            return [e async for e in agent.stream("What time is it in Berlin?")]

    events = asyncio.run(go())
    request = model.requests[0]
    assert [t.name for t in request.tools] == ["read", "get_current_time"]
    assert "- get_current_time:" in request.system
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert not result.is_error and "Europe/Berlin" in result.content
    assert live_processes_with(marker, where="environ") == []


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


BROKEN_SERVER = (
    "    - mcp: {command: "
    + sys.executable
    + ", args: ['-c', 'import sys; sys.stderr.write(\"broken server\\\\n\"); sys.exit(3)']}"
)


@pytest.mark.slow
def test_a_server_that_fails_to_start_is_a_diagnostic_and_the_agent_goes_on(tmp_path: Path) -> None:
    path = manifest(tmp_path, extra_sets=BROKEN_SERVER)
    model = ScriptedModel([text("fine")])
    agent = build_agent(load_manifest(path), provider=model, trust=True, record_session=False)

    async def go() -> list[object]:
        async with agent:
            return [e async for e in agent.stream("hi")]

    events = asyncio.run(go())
    diagnostics = [e for e in events if isinstance(e, Diagnostic)]
    assert any("broken server" in d.message for d in diagnostics), diagnostics
    assert "get_current_time" in [t.name for t in model.requests[0].tools]
    # reported before the first model request, not after the first turn
    first = events.index(next(d for d in diagnostics if "broken server" in d.message))
    assert first < events.index(next(e for e in events if isinstance(e, RunStart)))


@pytest.mark.slow
def test_run_shows_a_failed_server_before_the_answer_and_render_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = manifest(tmp_path, extra_sets=BROKEN_SERVER)
    (tmp_path / "reply.yaml").write_text("- text: The answer.\n")
    with path.open("a") as file:
        file.write("model: scripted:reply.yaml\n")
    ran = assemble(capsys, "run", str(path), "--trust", "--no-session", "-p", "hi")
    assert ran.code == 0, ran.err
    assert ran.out == "The answer.\n"
    assert ran.err.count("broken server") == 1
    rendered = assemble(capsys, "render", str(path), "--trust", "--prompt-only")
    assert rendered.code == 1
    assert "- get_current_time:" in rendered.out  # the prompt is still shown
    assert rendered.err.count("broken server") == 1


def test_provider_keys_do_not_reach_a_stdio_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from assembler.mcp.connection import server_environment

    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    env = server_environment({"MINE": "1"})
    assert env["MINE"] == "1" and "OPENAI_API_KEY" not in env
    assert env.get("PATH") == os.environ.get("PATH")


def run_agent(path: Path, model: ScriptedModel, prompt: str) -> list[object]:
    agent = build_agent(load_manifest(path), provider=model, trust=True, record_session=False)

    async def go() -> list[object]:
        async with agent:
            return [e async for e in agent.stream(prompt)]

    return asyncio.run(go())


@pytest.mark.slow
def test_git_server_status_and_log_through_a_scripted_run(tmp_path: Path) -> None:
    repository = mcp_fixtures.make_git_repository(tmp_path / "repo")  # commit "first commit"
    (repository / "README.md").write_text("hello\nan uncommitted change\n", encoding="utf-8")
    (tmp_path / "ws").mkdir()
    path = tmp_path / "agent.yaml"
    path.write_text(
        f"""\
version: 1
name: historian
identity: Report on the repository with the git tools.
workspace: ws
tools:
  sets:
    - mcp: git
      allow: [git_status, git_log]
  servers:
    git:
      command: {json.dumps(sys.executable)}
      args: ["-m", "mcp_server_git", "--repository", {json.dumps(str(repository))}]
"""
    )
    repo = str(repository)
    model = ScriptedModel(
        [
            tool_call("git_status", repo_path=repo),
            tool_call("git_log", repo_path=repo, max_count=5),
            text("One commit, one modified file."),
        ]
    )

    events = run_agent(path, model, "What is the state of the repository?")
    assert [t.name for t in model.requests[0].tools] == ["git_log", "git_status"]  # by name
    status, log = (e for e in events if isinstance(e, ToolCallResult))
    assert status.call.name == "git_status" and status.executed
    assert not status.is_error, status.content
    assert "modified:" in status.content and "README.md" in status.content
    assert "notes.txt" in status.content  # untracked
    assert log.call.name == "git_log" and log.executed
    assert not log.is_error, log.content
    assert "first commit" in log.content
    # What the runner recorded is what the model was shown.
    shown = [m.content for m in model.requests[2].messages if m.role == "tool"]
    assert shown == [status.content, log.content]
    assert not [e for e in events if isinstance(e, Diagnostic)]


def http_manifest(tmp_path: Path, url: str) -> Path:
    (tmp_path / "ws").mkdir(exist_ok=True)
    path = tmp_path / "agent.yaml"
    path.write_text(
        f"""\
version: 1
name: greeter
identity: Greet people with `greet`.
workspace: ws
tools:
  sets:
    - builtin: [read]
    - mcp: secure
  servers:
    secure:
      url: {json.dumps(url)}
      headers: {{Authorization: "Bearer ${{TEST_MCP_TOKEN}}"}}
      timeout: 10
"""
    )
    return path


def test_http_server_with_a_bearer_token_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_MCP_TOKEN", "t0ken-from-env")
    server = mcp_fixtures.http_server("secure", ("greet",))
    with mcp_fixtures.serve_http(server, token="t0ken-from-env") as url:
        model = ScriptedModel([tool_call("greet", name="Ada"), text("Greeted.")])
        events = run_agent(http_manifest(tmp_path, url), model, "Greet Ada.")

    assert [t.name for t in model.requests[0].tools] == ["read", "greet"]
    (result,) = (e for e in events if isinstance(e, ToolCallResult))
    assert result.executed and not result.is_error, result.content
    assert result.content == "Hello, Ada!"
    assert not [e for e in events if isinstance(e, Diagnostic)]


def test_http_server_refusing_the_token_is_a_diagnostic_and_the_agent_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_MCP_TOKEN", "wr0ng-token")
    server = mcp_fixtures.http_server("secure", ("greet",))
    with mcp_fixtures.serve_http(server, token="t0ken-from-env") as url:
        model = ScriptedModel([tool_call("read", path="notes.txt"), text("Read it.")])
        (tmp_path / "ws").mkdir()
        (tmp_path / "ws" / "notes.txt").write_text("still readable\n", encoding="utf-8")
        events = run_agent(http_manifest(tmp_path, url), model, "Read the notes.")

    (diagnostic,) = (e for e in events if isinstance(e, Diagnostic))
    assert diagnostic.severity == "error"
    assert "`secure`" in diagnostic.message and "401" in diagnostic.message
    assert "wr0ng-token" not in diagnostic.message
    assert [t.name for t in model.requests[0].tools] == ["read"]
    (result,) = (e for e in events if isinstance(e, ToolCallResult))
    assert not result.is_error and "still readable" in result.content
