"""`grep`, `find` and `ls` on a real workspace tree, including symlinks and .git."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.builtin.search import FIND_TOOL, GREP_TOOL, LS_TOOL
from assembler.tools.builtin.tree import glob_matcher


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    files = {
        "README.md": "# Project\nTODO: write docs\n",
        "src/app.py": "import os\n\ndef main():\n    # todo: more\n    return os.getcwd()\n",
        "src/util.py": "def helper():\n    return 'TODO'\n",
        "src/pkg/deep.py": "VALUE = 1\n",
        "src/pkg/notes.txt": "todo list\n",
        ".git/config": "[core]\nTODO = in git\n",
        ".hidden/cfg.py": "TODO = 'hidden but not vcs'\n",
    }
    for rel, text in files.items():
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (workspace / "image.bin").write_bytes(b"TODO\x00\x01\x02")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.py").write_text("TODO: outside secret\n")
    (workspace / "leak.py").symlink_to(tmp_path / "outside" / "secret.py")
    (workspace / "leakdir").symlink_to(tmp_path / "outside", target_is_directory=True)
    (workspace / "alias.py").symlink_to(workspace / "src" / "util.py")
    return workspace


def run(tool: Tool, ws: Path, ctx: ToolContext | None = None, **args: Any) -> ToolResult:
    async def call() -> ToolResult:
        return await tool.execute(args, ctx or ToolContext(workspace=ws))

    return asyncio.run(call())


# --- grep ---------------------------------------------------------------------------


def test_grep_prints_relpath_line_text(ws: Path) -> None:
    result = run(GREP_TOOL, ws, pattern="TODO")
    assert not result.is_error
    assert result.content.splitlines() == [
        ".hidden/cfg.py:1: TODO = 'hidden but not vcs'",
        "README.md:2: TODO: write docs",
        "alias.py:2:     return 'TODO'",
        "src/util.py:2:     return 'TODO'",
    ]
    assert "outside secret" not in result.content  # leak.py and leakdir skipped
    assert ".git" not in result.content
    assert "image.bin" not in result.content


def test_grep_ignore_case_glob_and_path(ws: Path) -> None:
    result = run(GREP_TOOL, ws, pattern="todo", ignore_case=True, glob="*.py", path="src")
    assert result.content.splitlines() == [
        "src/app.py:4:     # todo: more",
        "src/util.py:2:     return 'TODO'",
    ]
    deep = run(GREP_TOOL, ws, pattern="todo", ignore_case=True, glob="pkg/**")
    assert deep.content == "No matches."  # globs with `/` are relative to `path`
    in_src = run(GREP_TOOL, ws, pattern="todo", ignore_case=True, path="src", glob="pkg/*")
    assert in_src.content == "src/pkg/notes.txt:1: todo list"


def test_grep_a_single_file(ws: Path) -> None:
    result = run(GREP_TOOL, ws, pattern=r"def \w+", path="src/app.py")
    assert result.content == "src/app.py:3: def main():"


def test_grep_no_matches_and_bad_regex(ws: Path) -> None:
    assert run(GREP_TOOL, ws, pattern="zzz-not-there").content == "No matches."
    bad = run(GREP_TOOL, ws, pattern="(unclosed")
    assert bad.is_error and "invalid regular expression" in bad.content


def test_grep_refuses_paths_outside(ws: Path) -> None:
    for path in ("..", "leakdir", "../outside"):
        result = run(GREP_TOOL, ws, pattern="TODO", path=path)
        assert result.is_error and "outside the workspace" in result.content


def test_grep_is_capped(ws: Path) -> None:
    (ws / "many.txt").write_text("hit\n" * 500)
    result = run(GREP_TOOL, ws, pattern="hit", limit=10)
    lines = result.content.splitlines()
    assert len(lines) == 11
    assert lines[-1].startswith("[stopped after 10 matches")
    assert len(run(GREP_TOOL, ws, pattern="hit").content.splitlines()) == 101


def test_grep_truncates_long_lines(ws: Path) -> None:
    (ws / "long.txt").write_text("needle" + "x" * 1000 + "\n")
    result = run(GREP_TOOL, ws, pattern="needle")
    assert len(result.content) < 400
    assert result.content.endswith("...")


# --- find ---------------------------------------------------------------------------


def test_find_recursive_glob_sorted_relative(ws: Path) -> None:
    result = run(FIND_TOOL, ws, pattern="**/*.py")
    assert result.content.splitlines() == [
        ".hidden/cfg.py",
        "alias.py",
        "src/app.py",
        "src/pkg/deep.py",
        "src/util.py",
    ]


def test_find_name_pattern_matches_at_any_depth(ws: Path) -> None:
    assert run(FIND_TOOL, ws, pattern="deep.py").content == "src/pkg/deep.py"
    assert run(FIND_TOOL, ws, pattern="*.txt").content == "src/pkg/notes.txt"
    assert run(FIND_TOOL, ws, pattern="src/*.py").content.splitlines() == [
        "src/app.py",
        "src/util.py",
    ]


def test_find_under_a_path(ws: Path) -> None:
    assert run(FIND_TOOL, ws, pattern="*", path="src/pkg").content.splitlines() == [
        "src/pkg/deep.py",
        "src/pkg/notes.txt",
    ]
    assert run(FIND_TOOL, ws, pattern="config").content == "No files found."


def test_find_limit_and_refusals(ws: Path) -> None:
    limited = run(FIND_TOOL, ws, pattern="**/*.py", limit=2)
    assert limited.content.splitlines()[-1] == "[showing 2 of 5 files; narrow the pattern or path]"
    assert run(FIND_TOOL, ws, pattern="*", path="leakdir").is_error
    assert run(FIND_TOOL, ws, pattern="*", path="README.md").is_error


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/*.py", "a.py", True),
        ("**/*.py", "a/b/c.py", True),
        ("src/**/*.py", "src/x.py", True),
        ("src/**/*.py", "lib/x.py", False),
        ("*.py", "a/b/c.py", True),
        ("src/*.py", "src/a/b.py", False),
        ("file?.txt", "file1.txt", True),
        ("[!a]*.md", "README.md", True),
        ("[ab].md", "c.md", False),
        ("**", "any/thing", True),
    ],
)
def test_glob_matcher(pattern: str, path: str, expected: bool) -> None:
    assert glob_matcher(pattern)(path) is expected


# --- ls -----------------------------------------------------------------------------


def test_ls_sorted_with_directory_slashes(ws: Path) -> None:
    result = run(LS_TOOL, ws)
    assert result.content.splitlines() == [
        ".git/",
        ".hidden/",
        "README.md",
        "alias.py",
        "image.bin",
        "leak.py",
        "leakdir/",
        "src/",
    ]
    assert run(LS_TOOL, ws, path="src").content.splitlines() == ["app.py", "pkg/", "util.py"]


def test_ls_refusals_and_empty(ws: Path) -> None:
    (ws / "empty").mkdir()
    assert run(LS_TOOL, ws, path="empty").content == "(empty is empty)"
    assert "use `read`" in run(LS_TOOL, ws, path="README.md").content
    assert "no such directory" in run(LS_TOOL, ws, path="nope").content
    for path in ("..", "leakdir", "/"):
        result = run(LS_TOOL, ws, path=path)
        assert result.is_error and "outside the workspace" in result.content


def test_ls_output_is_truncated(ws: Path) -> None:
    big = ws / "big"
    big.mkdir()
    for n in range(30):
        (big / f"f{n:02d}").write_text("")
    ctx = ToolContext(workspace=ws, max_output_lines=10)
    result = run(LS_TOOL, ws, ctx, path="big")
    assert result.content.splitlines()[-1] == (
        "[output truncated: showing lines 1-10 of 30 (10-line limit); 20 lines cut]"
    )
