"""Issue 11, items 7-10: the file tools against big, special and linked files.

7. `read` with `limit: 1` on a 512 MB file used 1 GB of memory: it must stream.
8. `write` to a FIFO blocked the event loop for the whole run: non-regular files are
   refused by all three tools, and file work never blocks the loop.
9. `write` through a hard link changed a file outside the workspace: writes replace
   the file (temporary file + rename), so the link is broken, not written through.
10. `edit` with a 100 KB repetitive `old_text` took 7 s and ignored the tool timeout.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assembler.tools.base import ToolContext, ToolResult
from assembler.tools.builtin import files as file_tools
from assembler.tools.builtin.files import EDIT_TOOL, READ_TOOL, WRITE_TOOL

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and hard links")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


def call(tool_name: str, ws: Path, ctx: ToolContext | None = None, **args: Any) -> ToolResult:
    tool = {"read": READ_TOOL, "write": WRITE_TOOL, "edit": EDIT_TOOL}[tool_name]

    async def go() -> ToolResult:
        return await tool.execute(args, ctx or ToolContext(workspace=ws))

    return asyncio.run(go())


def in_thread(work: Callable[[], ToolResult], hang_after: float = 20.0) -> ToolResult:
    """Run `work` in a thread; fail (instead of hanging the suite) if it never returns."""
    box: list[ToolResult] = []
    thread = threading.Thread(target=lambda: box.append(work()), daemon=True)
    thread.start()
    thread.join(hang_after)
    assert box, f"the tool call did not return within {hang_after} s: it blocked"
    return box[0]


def big_sparse_text_file(path: Path, size: int, head: bytes) -> None:
    """`head` (text, longer than the binary-detection sample) then `size` bytes of a hole."""
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(size)


# --- 7. bounded reads ----------------------------------------------------------------


def _peak_during(work: Callable[[], ToolResult]) -> tuple[ToolResult, int]:
    tracemalloc.start()
    try:
        result = work()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def test_read_with_a_limit_on_a_huge_file_streams(ws: Path) -> None:
    size = 256 * 1024 * 1024
    big_sparse_text_file(ws / "big.log", size, b"first line\n" + b"x" * 9000 + b"\n")
    result, peak = _peak_during(lambda: call("read", ws, path="big.log", limit=1))
    assert result.content.startswith("first line\n[big.log: lines 1-1 of 3; ")
    assert result.details["total_lines"] == 3
    # Bounded by the output limit (50 KB) plus the read chunk, not the file's 256 MB.
    assert peak < 4 * 1024 * 1024, peak


def test_read_of_one_huge_line_keeps_only_its_start(ws: Path) -> None:
    size = 256 * 1024 * 1024
    big_sparse_text_file(ws / "one.txt", size, b"y" * 9000)
    result, peak = _peak_during(lambda: call("read", ws, path="one.txt"))
    assert result.details["total_lines"] == 1
    assert f"line 1 cut to its first 51200 of {size} bytes" in result.content
    assert peak < 4 * 1024 * 1024, peak


def test_read_far_into_a_huge_file_is_bounded_too(ws: Path) -> None:
    lines = b"".join(b"line %d\n" % n for n in range(1, 200_001))
    (ws / "many.txt").write_bytes(lines)
    result, peak = _peak_during(lambda: call("read", ws, path="many.txt", offset=150_000, limit=2))
    assert result.content == (
        "line 150000\nline 150001\n"
        "[many.txt: lines 150000-150001 of 200000; use offset=150002 to continue]"
    )
    assert peak < len(lines) / 2, peak


# --- 8. special files ----------------------------------------------------------------


@posix_only
@pytest.mark.parametrize("tool", ["write", "edit", "read"])
def test_a_fifo_is_refused_without_blocking(ws: Path, tool: str) -> None:
    os.mkfifo(ws / "pipe")
    args = {"write": {"content": "x"}, "edit": {"old_text": "a", "new_text": "b"}, "read": {}}
    try:
        result = in_thread(lambda: call(tool, ws, path="pipe", **args[tool]))
    finally:
        # Unblock a writer stuck in open() (before the fix), so the thread can end.
        fd = os.open(ws / "pipe", os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
    assert result.is_error
    assert "not a regular file (a FIFO)" in result.content
    assert stat.S_ISFIFO(os.lstat(ws / "pipe").st_mode)


@posix_only
def test_a_device_is_refused(ws: Path) -> None:
    # A symlink to /dev/zero is refused as outside the workspace; the file tools also
    # refuse a device that is inside (here: reached by an absolute path that is).
    result = call("read", Path("/dev"), path="zero")
    assert result.is_error and "not a regular file (a device)" in result.content
    result = call("write", Path("/dev"), path="null", content="x")
    assert result.is_error and "not a regular file (a device)" in result.content


def test_file_work_does_not_block_the_event_loop(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in for a read that takes long (a slow disk, a network mount): the event
    # loop must go on serving other work, and the tool timeout must hold.
    def slow_read(*args: object, **kwargs: object) -> object:
        time.sleep(3)
        raise AssertionError("abandoned work should not matter")

    monkeypatch.setattr(file_tools, "_read_lines", slow_read)
    (ws / "a.txt").write_text("a\n")
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    async def go() -> ToolResult:
        task = asyncio.ensure_future(ticker())
        try:
            return await READ_TOOL.execute(
                {"path": "a.txt"}, ToolContext(workspace=ws, timeout=0.5)
            )
        finally:
            task.cancel()

    result = in_thread(lambda: asyncio.run(go()), hang_after=2.5)
    assert result.is_error
    assert "read a.txt did not finish within 0.5 s (limits.tool_timeout)" in result.content
    assert ticks > 5  # the loop ran while the read was stuck


# --- 9. hard links -------------------------------------------------------------------


@posix_only
def test_write_through_a_hard_link_does_not_touch_the_outside_file(
    ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside secret\n")
    os.link(outside, ws / "link.txt")
    result = call("write", ws, path="link.txt", content="written by the model\n")
    assert not result.is_error, result.content
    assert outside.read_text() == "outside secret\n"
    assert (ws / "link.txt").read_text() == "written by the model\n"
    assert os.stat(ws / "link.txt").st_ino != os.stat(outside).st_ino


@posix_only
def test_edit_through_a_hard_link_does_not_touch_the_outside_file(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("value = 1\n")
    os.link(outside, ws / "link.txt")
    result = call("edit", ws, path="link.txt", old_text="1", new_text="2")
    assert not result.is_error, result.content
    assert outside.read_text() == "value = 1\n"
    assert (ws / "link.txt").read_text() == "value = 2\n"


@posix_only
@pytest.mark.parametrize("tool", ["write", "edit"])
def test_replacing_a_file_keeps_its_mode_and_leaves_no_temporary_file(ws: Path, tool: str) -> None:
    script = ws / "run.sh"
    script.write_text("echo one\n")
    script.chmod(0o751)
    args = {"content": "echo two\n"} if tool == "write" else {"old_text": "one", "new_text": "two"}
    result = call(tool, ws, path="run.sh", **args)
    assert not result.is_error, result.content
    assert script.read_text() == "echo two\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert sorted(p.name for p in ws.iterdir()) == ["run.sh"]


# --- 10. edit cost and the tool timeout ----------------------------------------------


def test_a_repetitive_old_text_is_answered_in_linear_time(ws: Path) -> None:
    # 100,000 overlapping matches of a 100 KB needle: listing them all was quadratic
    # (7 s here; over a minute at this size). Now a handful of `find`s answer it.
    (ws / "a.txt").write_text("a" * 400_000)
    ctx = ToolContext(workspace=ws, timeout=10)
    result = in_thread(
        lambda: call("edit", ws, ctx, path="a.txt", old_text="a" * 200_000, new_text="b"),
        hang_after=15,
    )
    assert result.is_error
    assert "old_text occurs at least 11 times in a.txt (at lines 1, 1, 1," in result.content
    assert (ws / "a.txt").read_text() == "a" * 400_000


def test_the_tool_timeout_holds_for_edit(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def slow_edit(*args: object, **kwargs: object) -> int:
        time.sleep(3)
        return 1

    monkeypatch.setattr(file_tools, "_edit_file", slow_edit)
    (ws / "a.txt").write_text("a\n")
    result = in_thread(
        lambda: call(
            "edit", ws, ToolContext(workspace=ws, timeout=0.5), path="a.txt", old_text="a",
            new_text="b",
        ),
        hang_after=2.5,
    )  # fmt: skip
    assert result.is_error
    assert "edit a.txt did not finish within 0.5 s" in result.content
    assert "may still be replaced" in result.content
