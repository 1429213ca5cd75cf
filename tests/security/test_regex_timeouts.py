"""Issue 11, item 13: a backtracking regular expression cannot outlast `tool_timeout`.

`^(a+)+$` against a line of `a`s ending in `b` takes about 2**n steps; Python's `re`
holds the GIL throughout, so neither a thread nor the event loop could stop it. The
same holds for globs, which become regular expressions (`*a*a*...*b` against a long
name). The search now runs in a worker process that is killed at the timeout.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import assembler
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.builtin.search import FIND_TOOL, GREP_TOOL
from assembler.tools.builtin.search_pool import WORKERS

DRIVER = """
import asyncio, json, sys
from pathlib import Path
from assembler.tools.base import ToolContext
from assembler.tools.builtin.search import FIND_TOOL, GREP_TOOL

tool = {"grep": GREP_TOOL, "find": FIND_TOOL}[sys.argv[1]]
ctx = ToolContext(workspace=Path(sys.argv[2]), timeout=float(sys.argv[3]))
result = asyncio.run(tool.execute(json.loads(sys.argv[4]), ctx))
print(json.dumps({"content": result.content, "is_error": result.is_error}))
"""


def returns(tool: str, ws: Path, timeout: float, within: float = 30.0, **args: Any) -> ToolResult:
    """The tool's result, from a process of its own: before the fix the regex held the
    GIL, so not even a watchdog thread in this process could have failed the test."""
    root = str(Path(assembler.__file__).resolve().parents[1])
    try:
        done = subprocess.run(
            [sys.executable, "-c", DRIVER, tool, str(ws), str(timeout), json.dumps(args)],
            capture_output=True,
            text=True,
            timeout=within,
            env={**os.environ, "PYTHONPATH": root},
            check=True,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{tool} did not return within {within} s: the timeout did not hold")
    answer = json.loads(done.stdout)
    return ToolResult(answer["content"], answer["is_error"])


def call(tool: Tool, ws: Path, timeout: float, **args: Any) -> ToolResult:
    async def go() -> ToolResult:
        return await tool.execute(args, ToolContext(workspace=ws, timeout=timeout))

    return asyncio.run(go())


def my_workers() -> list[int]:
    """Live search workers started by this process."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and stat[0] != b"Z" and b"search_worker" in cmdline:
            found.append(int(name))
    return found


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "input.txt").write_text("fine\n" + "a" * 40 + "b\n")
    return workspace


def test_a_catastrophic_regex_is_stopped_at_the_timeout(ws: Path) -> None:
    result = returns("grep", ws, 1, pattern="^(a+)+$")
    assert result.is_error
    assert "grep did not finish within 1 s (limits.tool_timeout) and was stopped" in result.content


def test_a_catastrophic_glob_is_stopped_at_the_timeout(ws: Path) -> None:
    (ws / ("a" * 120)).write_text("x\n")
    result = returns("find", ws, 1, pattern="*a" * 12 + "*b")
    assert result.is_error
    assert "find did not finish within 1 s" in result.content


def test_a_catastrophic_grep_glob_is_stopped_too(ws: Path) -> None:
    (ws / ("a" * 120)).write_text("x\n")
    result = returns("grep", ws, 1, pattern="x", glob="*a" * 12 + "*b")
    assert result.is_error
    assert "grep did not finish within 1 s" in result.content


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")
def test_timeouts_and_cancellation_leave_no_worker(ws: Path) -> None:
    WORKERS.close()  # no idle worker kept from earlier searches: only this test's count
    result = call(GREP_TOOL, ws, 0.5, pattern="^(a+)+$")
    assert result.is_error and "did not finish" in result.content
    assert my_workers() == []

    async def cancel_soon() -> None:
        task = asyncio.ensure_future(
            GREP_TOOL.execute({"pattern": "^(a+)+$"}, ToolContext(workspace=ws, timeout=60))
        )
        await asyncio.sleep(0.5)
        assert my_workers()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_soon())
    assert my_workers() == []


def test_ordinary_searches_still_answer(ws: Path) -> None:
    result = call(GREP_TOOL, ws, 10, pattern="^fi")
    assert result.content == "input.txt:1: fine"
    assert call(FIND_TOOL, ws, 10, pattern="*.txt").content == "input.txt"
