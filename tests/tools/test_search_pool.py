"""Search workers are kept between calls, and replaced when a timeout or a failure
killed them (`assembler.tools.builtin.search_pool`). Real worker processes."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assembler.errors import ToolError
from assembler.tools.base import ToolContext, ToolResult
from assembler.tools.builtin.search import FIND_TOOL, GREP_TOOL
from assembler.tools.builtin.search_pool import WORKERS, SearchWorkers
from assembler.tools.processes import RUNNING

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n" + "a" * 40 + "b\n")
    WORKERS.close()  # start from no idle worker, whatever earlier tests left
    yield tmp_path
    WORKERS.close()


def grep(ws: Path, timeout: float = 10, **args: Any) -> ToolResult:
    async def go() -> ToolResult:
        return await GREP_TOOL.execute(args, ToolContext(workspace=ws, timeout=timeout))

    return asyncio.run(go())


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


def test_one_worker_answers_call_after_call(ws: Path) -> None:
    started = WORKERS.started
    for _ in range(3):  # each call on a fresh event loop, as `asyncio.run` gives
        assert grep(ws, pattern="^beta").content == "notes.txt:2: beta"
    assert WORKERS.started == started + 1
    (pid,) = WORKERS.idle_pids()
    assert alive(pid) and pid in RUNNING.pids()

    async def find() -> ToolResult:
        return await FIND_TOOL.execute({"pattern": "*.txt"}, ToolContext(workspace=ws))

    assert asyncio.run(find()).content == "notes.txt"  # `find` uses the same worker
    assert WORKERS.idle_pids() == [pid] and WORKERS.started == started + 1


def test_a_worker_killed_at_the_timeout_is_replaced_by_a_new_one(ws: Path) -> None:
    assert grep(ws, pattern="alpha").content == "notes.txt:1: alpha"
    (first,) = WORKERS.idle_pids()
    late = grep(ws, timeout=0.5, pattern="^(a+)+$")
    assert late.is_error and "did not finish within 0.5 s" in late.content
    assert not alive(first)  # killed, not left searching
    assert first not in RUNNING.pids()
    assert WORKERS.idle_pids() == []
    started = WORKERS.started
    assert grep(ws, pattern="alpha").content == "notes.txt:1: alpha"  # the next call works
    assert WORKERS.started == started + 1
    (second,) = WORKERS.idle_pids()
    assert second != first and alive(second)


def test_a_cancelled_search_kills_its_worker(ws: Path) -> None:
    async def cancel_soon() -> int:
        before = set(RUNNING.pids())
        task = asyncio.ensure_future(
            GREP_TOOL.execute({"pattern": "^(a+)+$"}, ToolContext(workspace=ws, timeout=60))
        )
        await asyncio.sleep(0.5)
        (busy,) = set(RUNNING.pids()) - before  # the worker searching
        assert alive(busy)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return busy

    pid = asyncio.run(cancel_soon())
    assert not alive(pid)
    assert WORKERS.idle_pids() == []


def test_an_idle_worker_that_died_is_replaced_without_an_error(ws: Path) -> None:
    grep(ws, pattern="alpha")
    (pid,) = WORKERS.idle_pids()
    os.kill(pid, signal.SIGKILL)  # as PR_SET_PDEATHSIG does when its thread ends
    result = grep(ws, pattern="alpha")
    assert not result.is_error and result.content == "notes.txt:1: alpha"
    (new,) = WORKERS.idle_pids()
    assert new != pid


def test_a_search_that_fails_is_reported_and_its_worker_stopped(ws: Path) -> None:
    workers = SearchWorkers()

    async def ask() -> dict[str, Any]:
        return await workers.ask({"op": "grep"}, 10, "grep")  # no pattern: a KeyError

    try:
        with pytest.raises(ToolError, match=r"grep failed: KeyError: 'ignore_case'"):
            asyncio.run(ask())
        assert workers.idle_pids() == []
        assert workers.started == 1
    finally:
        workers.close()


def test_concurrent_searches_each_get_a_worker_and_few_are_kept(ws: Path) -> None:
    workers = SearchWorkers(max_idle=2)
    request = {
        "op": "find", "pattern": "*.txt", "root": str(ws), "base": str(ws), "limit": 10,
    }  # fmt: skip

    async def many() -> list[dict[str, Any]]:
        return await asyncio.gather(*(workers.ask(request, 10, "find") for _ in range(4)))

    try:
        answers = asyncio.run(many())
        assert [a["paths"] for a in answers] == [["notes.txt"]] * 4
        assert workers.started == 4
        kept = workers.idle_pids()
        assert len(kept) == 2 and all(alive(pid) for pid in kept)
    finally:
        workers.close()
    assert not any(alive(pid) for pid in kept)
