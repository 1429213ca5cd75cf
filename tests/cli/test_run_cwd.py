"""`assemble run` and `assemble rpc` run the agent with its workspace as the current
directory, wherever they were started (issue 12): before, `cd / && assemble run`
gave a Python tool `/` as its directory while `read` and `bash` used the workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import assemble

TOOL = '''
import os
from pathlib import Path

from assembler.tools.base import ToolContext


def where() -> str:
    """The current directory."""
    return os.getcwd()


def notes(ctx: ToolContext) -> str:
    """The workspace, as the tool context gives it."""
    return str(ctx.workspace)


def first_line(name: str) -> str:
    """The first line of a file, by a path relative to the current directory."""
    return Path(name).read_text().splitlines()[0]
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "agents").mkdir()
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "todo.txt").write_text("ship it\n", "utf-8")
    (tmp_path / "agents" / "cwd_tools.py").write_text(TOOL, "utf-8")
    (tmp_path / "agents" / "script.yaml").write_text(
        "- tool_calls: [{name: where, arguments: {}}, {name: notes, arguments: {}},"
        " {name: first_line, arguments: {name: todo.txt}}]\n- text: Done.\n",
        "utf-8",
    )
    (tmp_path / "agents" / "agent.yaml").write_text(
        "version: 1\nname: cwd\nidentity: You help.\nworkspace: ../ws\n"
        "model: scripted:script.yaml\n"
        "tools: {sets: [{python: [cwd_tools:where, cwd_tools:notes, cwd_tools:first_line]}]}\n",
        "utf-8",
    )
    return tmp_path


def test_a_python_tool_runs_in_the_workspace(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir("/")
    outcome = assemble(
        capsys, "run", str(project / "agents" / "agent.yaml"), "--trust", "--json",
        "--no-session", "-p", "where?",
    )  # fmt: skip
    assert outcome.code == 0, outcome.err
    events = [json.loads(line) for line in outcome.out.splitlines()]
    results = [e["content"] for e in events if e["type"] == "tool_result"]
    workspace = str((project / "ws").resolve())
    assert results == [workspace, workspace, "ship it"]


def test_a_relative_session_dir_is_taken_from_where_assemble_started(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    outcome = assemble(
        capsys, "run", "agents/agent.yaml", "--trust", "--session-dir", "sessions", "-p", "hi",
    )  # fmt: skip
    assert outcome.code == 0, outcome.err
    assert list((project / "sessions").glob("*.jsonl"))
    assert not (project / "ws" / "sessions").exists()


def test_rpc_runs_in_the_workspace_too(project: Path) -> None:
    request = json.dumps({"id": 1, "method": "prompt", "params": {"text": "where?"}})
    result = subprocess.run(
        [sys.executable, "-m", "assembler", "rpc", str(project / "agents" / "agent.yaml"),
         "--trust", "--no-session"],
        input=request + "\n" + json.dumps({"id": 2, "method": "shutdown"}) + "\n",
        capture_output=True, text=True, cwd="/", timeout=60, check=False,
        env={**os.environ, "ASSEMBLER_CONFIG_DIR": str(project / "config")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    contents = [
        line["event"]["content"]
        for line in lines
        if line.get("event", {}).get("type") == "tool_result"
    ]
    assert contents[:2] == [str((project / "ws").resolve())] * 2
