"""The long-lived supervisor and its command supervisors, with real processes.

One long-lived process per assembler process hands each command to a command
supervisor; a command supervisor is reused for the next command of the same sandbox
only. The guarantees stay per command: everything it started is gone before its
command supervisor takes another, and a command supervisor killed from outside leaves
nothing running.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path

import pytest
from procs import live_processes_with

from assembler.sandbox.runtime import Sandbox
from assembler.sandbox.spec import SandboxSpec
from assembler.sandbox.support import probe
from assembler.tools.base import ToolContext, ToolResult
from assembler.tools.builtin.bash import BASH_TOOL
from assembler.tools.supervisor_client import HOST

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="scans /proc")
SUPPORT = probe()
needs_sandbox = pytest.mark.skipif(
    SUPPORT.landlock_abi < 1 or not SUPPORT.seccomp_arch, reason="needs Landlock and seccomp"
)


def run(ctx: ToolContext, command: str) -> ToolResult:
    async def call() -> ToolResult:
        return await BASH_TOOL.execute({"command": command}, ctx)

    return asyncio.run(call())


def marker() -> str:
    return f"300.{uuid.uuid4().int % 10**9:09d}"


def test_a_command_supervisor_is_reused_for_the_same_sandbox(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path)
    first = run(ctx, "echo $PPID").content
    second = run(ctx, "echo $PPID").content
    assert first == second  # the same command supervisor ran both


@needs_sandbox
def test_a_confined_command_supervisor_never_runs_another_sandboxes_command(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox.start(SandboxSpec("read-only", "off"), tmp_path, tmp_path / "a.yaml")
    assert sandbox is not None
    try:
        confined = run(ToolContext(workspace=tmp_path, sandbox=sandbox), "echo $PPID")
        plain = run(ToolContext(workspace=tmp_path), "echo $PPID; echo x > written")
        assert plain.content.splitlines()[0] != confined.content
        assert (tmp_path / "written").exists()  # not confined by the earlier command's sandbox
        other = Sandbox.start(SandboxSpec("workspace-write", "off"), tmp_path, tmp_path / "b.yaml")
        assert other is not None
        try:
            again = run(ToolContext(workspace=tmp_path, sandbox=other), "echo $PPID")
        finally:
            other.close()
        assert again.content != confined.content
    finally:
        sandbox.close()


def test_killing_a_command_supervisor_kills_its_command(tmp_path: Path) -> None:
    seconds = marker()

    async def scenario() -> None:
        task = asyncio.ensure_future(
            BASH_TOOL.execute(
                {"command": f"setsid sleep {seconds} > /dev/null 2>&1 & sleep {seconds}"},
                ToolContext(workspace=tmp_path, timeout=60),
            )
        )
        deadline = time.monotonic() + 20
        while len(live_processes_with(seconds)) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        [sleeper, *_] = live_processes_with(seconds)
        os.kill(_command_supervisor(sleeper), signal.SIGKILL)
        result = await task
        assert result.is_error

    asyncio.run(scenario())
    deadline = time.monotonic() + 10
    while live_processes_with(seconds) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_processes_with(seconds) == []


def test_the_long_lived_supervisor_comes_back_after_it_died(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path)
    assert run(ctx, "echo one").content == "one"
    pid = HOST.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and _state(pid) not in ("Z", "X"):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert run(ctx, "echo two").content == "two"
    assert HOST.pid != pid


@needs_sandbox
def test_a_confined_command_cannot_read_the_assemblers_environment(tmp_path: Path) -> None:
    # The agent's API keys live in the assembler's environment; /proc would show them
    # to any process of the same user, but not to a sandboxed one.
    entries = Path(f"/proc/{os.getpid()}/environ").read_bytes().split(b"\0")
    secret = max((e.decode("utf-8", "replace") for e in entries), key=len)
    command = f"cat /proc/{os.getpid()}/environ /proc/$PPID/environ | tr '\\0' '\\n'"
    assert secret in run(ToolContext(workspace=tmp_path), command).content
    sandbox = Sandbox.start(SandboxSpec("read-only", "off"), tmp_path, tmp_path / "a.yaml")
    assert sandbox is not None
    try:
        result = run(ToolContext(workspace=tmp_path, sandbox=sandbox), command)
    finally:
        sandbox.close()
    assert secret not in result.content
    assert "Permission denied" in result.content


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _parent(pid: int) -> int:
    return int(_stat(pid)[1])


def _state(pid: int) -> str:
    try:
        return _stat(pid)[0]
    except OSError:
        return "X"


def _command_supervisor(pid: int) -> int:
    """The ancestor of `pid` whose parent is the long-lived supervisor."""
    while _parent(pid) != HOST.pid:
        pid = _parent(pid)
    return pid
