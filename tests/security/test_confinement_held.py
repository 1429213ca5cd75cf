"""Issue 11, "what held": the file and search tools stay inside the workspace.

The attack report found these refused; the rewrite of the file tools (streaming,
replacement through a temporary file, work in threads and processes) must keep it so.
Every path is tried with every tool that takes a path, against a real tree, and
nothing outside the workspace may be read, listed, created or changed.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from assembler.tools.base import ToolContext, ToolResult
from assembler.tools.builtin.sets import BUILTIN_TOOLS

SECRET = "outside-secret-text"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """`work/` (the workspace) beside `work-evil/` and `outside/`, with hostile links."""
    work, evil, outside = tmp_path / "work", tmp_path / "work-evil", tmp_path / "outside"
    for directory in (work, evil, outside):
        directory.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (evil / "secret.txt").write_text(SECRET + "\n")
    (work / "ok.txt").write_text("inside\n")
    (work / "file-link").symlink_to(outside / "secret.txt")
    (work / "dir-link").symlink_to(outside, target_is_directory=True)
    (work / "chain-1").symlink_to(work / "chain-2")
    (work / "chain-2").symlink_to(outside / "secret.txt")
    (work / "loop-a").symlink_to(work / "loop-b")
    (work / "loop-b").symlink_to(work / "loop-a")
    (work / "dangling").symlink_to(outside / "created-by-the-model.txt")
    if sys.platform != "win32":
        os.mkfifo(work / "fifo")
    return work


HOSTILE = [
    "../outside/secret.txt",
    "../work-evil/secret.txt",
    "sub/../../outside/secret.txt",
    "/etc/passwd",
    "~/.bashrc",
    "/proc/self/root/etc/passwd",
    "/proc/self/cwd/../../etc/passwd",
    "file-link",
    "dir-link/secret.txt",
    "chain-1",
    "loop-a",
    "dangling",
    "ok.txt\x00../../outside/secret.txt",
    "a" * 300,
    "a/" * 3000 + "x",
]


def call(tool: str, ws: Path, **args: Any) -> ToolResult:
    async def go() -> ToolResult:
        return await BUILTIN_TOOLS[tool].execute(args, ToolContext(workspace=ws, timeout=20))

    return asyncio.run(go())


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.mark.parametrize("path", HOSTILE)
@pytest.mark.parametrize(
    ("tool", "extra"),
    [
        ("read", {}),
        ("write", {"content": "pwned\n"}),
        ("edit", {"old_text": SECRET, "new_text": "pwned"}),
        ("grep", {"pattern": SECRET}),
        ("find", {"pattern": "*"}),
        ("ls", {}),
    ],
)
def test_hostile_paths_are_refused_and_change_nothing(
    tree: Path, tool: str, extra: dict[str, str], path: str
) -> None:
    outside_before = snapshot(tree.parent / "outside") | snapshot(tree.parent / "work-evil")
    result = call(tool, tree, path=path, **extra)
    assert result.is_error, result.content
    assert SECRET not in result.content
    assert "root:" not in result.content  # /etc/passwd
    assert snapshot(tree.parent / "outside") | snapshot(tree.parent / "work-evil") == (
        outside_before
    )
    assert not (tree.parent / "outside" / "created-by-the-model.txt").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs")
def test_walks_skip_links_leaving_the_workspace_and_special_files(tree: Path) -> None:
    grep = call("grep", tree, pattern=".")
    assert SECRET not in grep.content
    assert grep.content == "ok.txt:1: inside"
    find = call("find", tree, pattern="*")
    assert find.content == "ok.txt"
    fifo = call("read", tree, path="fifo")
    assert fifo.is_error and "not a regular file" in fifo.content


def test_an_output_flood_is_bounded(tree: Path) -> None:
    (tree / "flood.txt").write_text("x" * 100 + "\n" * 3_000_000)
    result = call("read", tree, path="flood.txt")
    assert len(result.content.encode()) < 60 * 1024
    assert result.content.endswith(
        "[flood.txt: lines 1-2000 of 3000000; output truncated at the 2000-line limit; "
        "use offset=2001 to continue]"
    )
