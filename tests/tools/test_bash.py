"""`bash` with real subprocesses: output, exit codes, timeouts, process groups, environment."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from procs import live_processes_with

from assembler.tools.base import ToolContext, ToolResult
from assembler.tools.builtin.bash import BASH_TOOL
from assembler.tools.environment import TOOL_DEFAULTS, is_secret_name, tool_environment

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="scans /proc")


def run(ws: Path, ctx: ToolContext | None = None, **args: Any) -> ToolResult:
    async def call() -> ToolResult:
        return await BASH_TOOL.execute(args, ctx or ToolContext(workspace=ws))

    return asyncio.run(call())


def marker_seconds() -> str:
    """A `sleep` argument no other process on the machine is using: `100.<random>`."""
    return f"100.{uuid.uuid4().int % 10**9:09d}"


def test_output_and_success(tmp_path: Path) -> None:
    result = run(tmp_path, command="echo out; echo err >&2")
    assert not result.is_error
    assert result.content == "out\nerr"
    assert result.details["exit_code"] == 0


def test_runs_in_the_workspace(tmp_path: Path) -> None:
    result = run(tmp_path, command="pwd")
    assert result.content == str(tmp_path.resolve())


def test_nonzero_exit_is_an_error_with_the_code(tmp_path: Path) -> None:
    result = run(tmp_path, command="echo failing; exit 3")
    assert result.is_error
    assert result.details["exit_code"] == 3
    assert result.content == "failing\n[exit code 3]"


def test_no_output_is_said(tmp_path: Path) -> None:
    assert run(tmp_path, command="true").content == "(no output)"


def test_death_by_signal_is_reported(tmp_path: Path) -> None:
    result = run(tmp_path, command="kill -TERM $$")
    assert result.is_error
    assert "killed by signal SIGTERM" in result.content


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    seconds = marker_seconds()
    ctx = ToolContext(workspace=tmp_path, timeout=30)
    started = time.monotonic()
    result = run(tmp_path, ctx, command=f"sleep {seconds} & sleep {seconds}", timeout=1)
    elapsed = time.monotonic() - started
    assert elapsed < 3, elapsed
    assert result.is_error
    assert "timed out after 1 s" in result.content
    assert result.details["timed_out"] is True
    assert result.details["exit_code"] is None
    assert live_processes_with(seconds) == []


def test_per_call_timeout_is_capped_by_the_context(tmp_path: Path) -> None:
    seconds = marker_seconds()
    ctx = ToolContext(workspace=tmp_path, timeout=0.5)
    result = run(tmp_path, ctx, command=f"sleep {seconds}", timeout=60)
    assert result.is_error
    assert "timed out after 0.5 s" in result.content
    assert result.details["timeout"] == 0.5
    assert result.details["timed_out"] is True
    assert result.details["exit_code"] is None
    assert live_processes_with(seconds) == []


def test_output_before_a_timeout_is_kept(tmp_path: Path) -> None:
    result = run(tmp_path, command=f"echo started; sleep {marker_seconds()}", timeout=0.5)
    assert result.content.startswith("started\n")


def test_background_job_holding_the_output_is_stopped(tmp_path: Path) -> None:
    seconds = marker_seconds()
    result = run(tmp_path, command=f"sleep {seconds} & echo started")
    assert not result.is_error
    assert result.details["exit_code"] == 0
    assert result.details["timed_out"] is False
    assert result.content.startswith("started\n")
    assert "background processes" in result.content
    assert live_processes_with(seconds) == []


def test_cancelling_the_call_kills_the_command(tmp_path: Path) -> None:
    seconds = marker_seconds()

    async def cancel_soon() -> None:
        task = asyncio.ensure_future(
            BASH_TOOL.execute({"command": f"sleep {seconds}"}, ToolContext(workspace=tmp_path))
        )
        await asyncio.sleep(0.3)
        assert live_processes_with(seconds)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_soon())
    assert live_processes_with(seconds) == []


def test_long_output_keeps_the_tail(tmp_path: Path) -> None:
    result = run(tmp_path, command="seq 1 5000")
    lines = result.content.splitlines()
    assert lines[-2] == "5000"
    assert lines[0] == "3001"
    assert lines[-1] == (
        "[output truncated: showing lines 3001-5000 of 5000 (2000-line limit); 3000 lines cut]"
    )


def test_huge_output_is_bounded(tmp_path: Path) -> None:
    result = run(tmp_path, command="yes | head -n 3000000")
    assert len(result.content.encode()) < 60 * 1024
    assert result.content.endswith("of 3000000 (2000-line limit); 2998000 lines cut]")


def test_multibyte_output_is_cut_on_a_character_boundary(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, max_output_bytes=1001)
    result = run(tmp_path, ctx, command="printf '€%.0s' $(seq 1 2000)")
    body = result.content.split("\n[output truncated", 1)[0]
    assert set(body) == {"€"}
    assert len(body.encode()) == 999


def test_only_the_base_environment_reaches_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without a manifest's `tools.env`, a command sees the allowlisted basics only:
    # not credentials, and not other variables either (issue 11, item 22).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret-1")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-parent-secret-2")
    monkeypatch.setenv("ASSEMBLER_TEST_PLAIN", "plain-value")
    monkeypatch.setenv("HOME", "/home/test-user")
    result = run(tmp_path, command="env")
    assert "sk-parent-secret-1" not in result.content
    assert "OPENAI_API_KEY" not in result.content
    assert "ghp-parent-secret-2" not in result.content
    assert "plain-value" not in result.content
    assert "HOME=/home/test-user" in result.content
    assert f"PATH={os.environ['PATH']}" in result.content


def test_context_environment_is_used_as_given(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, env={"PATH": os.environ["PATH"], "ONLY_ME": "1"})
    result = run(tmp_path, ctx, command="echo ${ONLY_ME:-unset} ${HOME:-nohome}")
    assert result.content == "1 nohome"


def test_arguments_are_validated(tmp_path: Path) -> None:
    assert "missing required argument 'command'" in run(tmp_path).content
    assert run(tmp_path, command="true", timeout=0).is_error
    assert run(tmp_path, command="true", timeout="5").is_error
    assert run(tmp_path, command="").is_error


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "MY_SERVICE_API_KEY",
        "GITHUB_TOKEN",
        "APP_SECRET",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "PGPASSWORD",
        "ASSEMBLER_SESSION_KEY",
        "assembler_auth",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "TOKENIZERS_PARALLELISM", "ASSEMBLER_HOME"])
def test_ordinary_names(name: str) -> None:
    assert not is_secret_name(name)


def test_tool_environment_returns_a_filtered_copy() -> None:
    env = {"PATH": "/bin", "OPENAI_API_KEY": "x", "X_TOKEN": "y"}
    assert tool_environment(env, passthrough=["*"]) == {"PATH": "/bin", **TOOL_DEFAULTS}
    assert env["OPENAI_API_KEY"] == "x"
