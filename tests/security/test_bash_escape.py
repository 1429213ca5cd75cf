"""Issue 11, item 11: nothing a `bash` command starts escapes the kill.

`setsid` (a new session and process group), a double fork (the grandchild is
orphaned at once) and `nohup` (SIGHUP ignored) each got a process past a process
group kill. Every test starts real processes carrying a unique marker and proves with
/proc that none is alive when the tool has returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from procs import live_processes_with

import assembler
from assembler.tools.base import ToolContext, ToolResult
from assembler.tools.builtin.bash import BASH_TOOL
from assembler.tools.supervisor_client import HOST

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def marker() -> str:
    """A `sleep` argument no other process on the machine uses."""
    return f"200.{uuid.uuid4().int % 10**9:09d}"


def run(ws: Path, ctx: ToolContext | None = None, **args: Any) -> ToolResult:
    async def call() -> ToolResult:
        return await BASH_TOOL.execute(args, ctx or ToolContext(workspace=ws))

    return asyncio.run(call())


def escapes(seconds: str) -> str:
    """A command line whose jobs leave bash's process group or lose their parent."""
    return (
        f"setsid sleep {seconds} > /dev/null 2>&1 < /dev/null & "
        f"( sleep {seconds} > /dev/null 2>&1 & ) ; "
        f"nohup sleep {seconds} > /dev/null 2>&1 & "
        f"setsid sh -c 'trap \"\" TERM HUP; sleep {seconds}' > /dev/null 2>&1 & "
    )


def test_timeout_kills_setsid_double_fork_and_nohup(tmp_path: Path) -> None:
    seconds = marker()
    ctx = ToolContext(workspace=tmp_path, timeout=30)
    result = run(tmp_path, ctx, command=escapes(seconds) + f"sleep {seconds}", timeout=1)
    assert result.details["timed_out"] is True
    assert live_processes_with(seconds) == []


def test_a_detached_child_cannot_write_after_the_timeout(tmp_path: Path) -> None:
    # The attack as reported: the child writes a file some time after the timeout.
    seconds = marker()
    late = tmp_path / "late.txt"
    command = (
        f"setsid sh -c 'sleep 1.5; echo {seconds} > {late}' > /dev/null 2>&1 < /dev/null & "
        f"sleep {seconds}"
    )
    result = run(tmp_path, ToolContext(workspace=tmp_path, timeout=0.5), command=command)
    assert result.details["timed_out"] is True
    # No process below the command is left, so nothing can write the file later.
    assert live_processes_with(str(late)) == []
    assert live_processes_with(seconds) == []


def test_cancellation_kills_detached_jobs(tmp_path: Path) -> None:
    seconds = marker()

    async def cancel_soon() -> None:
        task = asyncio.ensure_future(
            BASH_TOOL.execute(
                {"command": escapes(seconds) + f"sleep {seconds}"},
                ToolContext(workspace=tmp_path),
            )
        )
        deadline = time.monotonic() + 20
        while len(live_processes_with(seconds)) < 5 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert len(live_processes_with(seconds)) >= 5
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_soon())
    assert live_processes_with(seconds) == []


def test_a_detached_job_holding_the_output_is_stopped(tmp_path: Path) -> None:
    # `setsid` jobs that keep the output pipe open used to hang until the timeout
    # and then survive it; they are stopped like any other job holding the output.
    seconds = marker()
    result = run(tmp_path, command=f"setsid sleep {seconds} & echo started")
    assert result.details["exit_code"] == 0
    assert "background processes" in result.content
    assert live_processes_with(seconds) == []


def test_sigterm_ignoring_jobs_are_killed(tmp_path: Path) -> None:
    seconds = marker()
    command = f"trap '' TERM; setsid sh -c 'trap \"\" TERM; sleep {seconds}' & sleep {seconds}"
    result = run(tmp_path, ToolContext(workspace=tmp_path, timeout=0.5), command=command)
    assert result.details["timed_out"] is True
    assert live_processes_with(seconds) == []


DRIVER = """
import asyncio, os, sys
from pathlib import Path
from assembler.tools.base import ToolContext
from assembler.tools.builtin.bash import BASH_TOOL

async def main():
    ws = Path(sys.argv[1])
    result = await BASH_TOOL.execute({"command": sys.argv[2]}, ToolContext(workspace=ws))
    print(result.content, flush=True)
    if sys.argv[3] == "hang":
        await asyncio.sleep(3600)

asyncio.run(main())
"""


def _driver(tmp_path: Path, command: str, mode: str) -> subprocess.Popen[str]:
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    # The package under test, whichever copy of it this test imported.
    root = str(Path(assembler.__file__).resolve().parents[1])
    return subprocess.Popen(
        [sys.executable, str(script), str(tmp_path), command, mode],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": root},
    )


def _wait_gone(seconds: str) -> list[int]:
    deadline = time.monotonic() + 15
    while live_processes_with(seconds) and time.monotonic() < deadline:
        time.sleep(0.05)
    return live_processes_with(seconds)


def test_background_jobs_end_with_the_process_that_ran_them(tmp_path: Path) -> None:
    # A job that redirected its output outlives the call (a dev server, say), but not
    # the assembler: when the process exits, so does the job, detached or not.
    seconds = marker()
    command = escapes(seconds) + "echo started"
    driver = _driver(tmp_path, command, "exit")
    out, _ = driver.communicate(timeout=60)
    assert driver.returncode == 0
    assert out.startswith("started")
    assert _wait_gone(seconds) == []


def test_kill_9_of_the_process_that_ran_them_kills_the_jobs(tmp_path: Path) -> None:
    seconds = marker()
    driver = _driver(tmp_path, escapes(seconds) + "echo started", "hang")
    try:
        assert driver.stdout is not None
        assert driver.stdout.readline().startswith("started")
        assert len(live_processes_with(seconds)) >= 4
        driver.kill()
        driver.wait(timeout=30)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert _wait_gone(seconds) == []


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _below(root: int) -> list[int]:
    """Live processes below `root`, from /proc."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] not in ("Z", "X"):
                    children.setdefault(int(fields[1]), []).append(int(name))
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def test_nothing_a_command_started_is_left_below_the_supervisors(tmp_path: Path) -> None:
    # One long-lived supervisor per process hands each command to a command supervisor
    # (kept for the next command); below them, nothing of any command remains.
    seconds = marker()
    run(tmp_path, ToolContext(workspace=tmp_path, timeout=0.5), command=f"sleep {seconds}")
    run(tmp_path, command="echo done && (sleep 0.2 &)")
    supervisors = set(live_processes_with("process_supervisor.py"))
    assert [p for p in supervisors if _parent(p) == os.getpid()] == [HOST.pid]
    deadline = time.monotonic() + 10
    while set(_below(HOST.pid)) - supervisors and time.monotonic() < deadline:
        time.sleep(0.02)
    assert set(_below(HOST.pid)) - supervisors == set()
