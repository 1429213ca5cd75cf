"""`read`, `write` and `edit` on a real temporary workspace."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from assembler.tools.base import ToolContext, ToolResult
from assembler.tools.builtin.files import EDIT_TOOL, READ_TOOL, WRITE_TOOL


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "ws-evil").mkdir()
    (tmp_path / "outside.txt").write_text("outside secret\n")
    return workspace


def run(tool_name: str, ws: Path, ctx: ToolContext | None = None, **args: Any) -> ToolResult:
    tool = {"read": READ_TOOL, "write": WRITE_TOOL, "edit": EDIT_TOOL}[tool_name]

    async def call() -> ToolResult:
        return await tool.execute(args, ctx or ToolContext(workspace=ws))

    return asyncio.run(call())


# --- read ---------------------------------------------------------------------------


def test_read_returns_text_and_line_range(ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    result = run("read", ws, path="a.txt")
    assert not result.is_error
    assert result.content == "one\ntwo\nthree\n[a.txt: lines 1-3 of 3]"
    assert result.details["total_lines"] == 3


def test_read_offset_and_limit(ws: Path) -> None:
    (ws / "a.txt").write_text("".join(f"{n}\n" for n in range(1, 11)))
    result = run("read", ws, path="a.txt", offset=4, limit=3)
    assert result.content == "4\n5\n6\n[a.txt: lines 4-6 of 10; use offset=7 to continue]"
    past = run("read", ws, path="a.txt", offset=11)
    assert past.is_error and "past the end" in past.content


def test_read_truncates_long_files_at_2000_lines(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 5124)))
    result = run("read", ws, path="big.txt")
    assert not result.is_error
    body, footer = result.content.rsplit("\n", 1)
    assert body.splitlines()[-1] == "line 2000"
    assert footer == (
        "[big.txt: lines 1-2000 of 5123; output truncated at the 2000-line limit; "
        "use offset=2001 to continue]"
    )
    assert result.details["truncated"] is True


def test_read_truncates_at_the_byte_limit(ws: Path) -> None:
    (ws / "wide.txt").write_text(("y" * 99 + "\n") * 1000)
    result = run("read", ws, path="wide.txt")
    assert "lines 1-512 of 1000; output truncated at the 50.0 KB limit" in result.content
    small = ToolContext(workspace=ws, max_output_lines=5, max_output_bytes=1000)
    assert "lines 1-5 of 1000" in run("read", ws, small, path="wide.txt").content


def test_read_refuses_directories_and_binary_files(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    directory = run("read", ws, path="sub")
    assert directory.is_error and "is a directory" in directory.content
    binary = run("read", ws, path="blob.bin")
    assert binary.is_error and "binary" in binary.content
    missing = run("read", ws, path="nope.txt")
    assert missing.is_error and "no such file" in missing.content


def test_read_empty_file(ws: Path) -> None:
    (ws / "empty.txt").write_text("")
    result = run("read", ws, path="empty.txt")
    assert not result.is_error and "empty" in result.content


def test_read_refuses_paths_outside(ws: Path, tmp_path: Path) -> None:
    (ws / "leak").symlink_to(tmp_path / "outside.txt")
    for path in ("../outside.txt", str(tmp_path / "outside.txt"), "leak", "../ws-evil/x"):
        result = run("read", ws, path=path)
        assert result.is_error, path
        assert "outside the workspace" in result.content
        assert "outside secret" not in result.content


def test_read_through_an_internal_symlink(ws: Path) -> None:
    (ws / "real.txt").write_text("hello\n")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    result = run("read", ws, path="alias.txt")
    assert result.content.startswith("hello\n")


# --- write --------------------------------------------------------------------------


def test_write_creates_parent_directories_and_reports_bytes(ws: Path) -> None:
    result = run("write", ws, path="deep/er/file.txt", content="héllo\n")
    assert not result.is_error
    assert (ws / "deep" / "er" / "file.txt").read_bytes() == "héllo\n".encode()
    assert result.content == "Wrote 7 bytes to deep/er/file.txt (new file)"
    again = run("write", ws, path="deep/er/file.txt", content="x")
    assert again.content == "Wrote 1 bytes to deep/er/file.txt (replaced 7 bytes)"


def test_write_refuses_a_sibling_with_a_common_prefix(ws: Path, tmp_path: Path) -> None:
    result = run("write", ws, path="../ws-evil/x", content="pwned")
    assert result.is_error and "outside the workspace" in result.content
    assert not (tmp_path / "ws-evil" / "x").exists()


def test_write_through_symlink_pointing_outside_is_refused(ws: Path, tmp_path: Path) -> None:
    (ws / "leak").symlink_to(tmp_path / "outside.txt")
    result = run("write", ws, path="leak", content="pwned")
    assert result.is_error and "outside the workspace" in result.content
    assert (tmp_path / "outside.txt").read_text() == "outside secret\n"


def test_write_through_a_dangling_symlink_creates_nothing(ws: Path, tmp_path: Path) -> None:
    target = tmp_path / "planted.txt"
    (ws / "dangling").symlink_to(target)
    result = run("write", ws, path="dangling", content="pwned")
    assert result.is_error
    assert "does not exist" in result.content
    assert not target.exists()
    assert not target.is_symlink()


def test_write_through_an_internal_symlink_updates_the_target(ws: Path) -> None:
    (ws / "real.txt").write_text("old")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    assert not run("write", ws, path="alias.txt", content="new").is_error
    assert (ws / "real.txt").read_text() == "new"
    assert (ws / "alias.txt").is_symlink()


def test_write_refuses_a_directory(ws: Path) -> None:
    (ws / "sub").mkdir()
    result = run("write", ws, path="sub", content="x")
    assert result.is_error and "directory" in result.content


def test_write_parent_that_is_a_file_is_an_error_result(ws: Path) -> None:
    (ws / "file").write_text("x")
    result = run("write", ws, path="file/child.txt", content="x")
    assert result.is_error


# --- edit ---------------------------------------------------------------------------


def test_edit_replaces_the_unique_match(ws: Path) -> None:
    (ws / "m.py").write_text("def f():\n    return 1\n")
    result = run("edit", ws, path="m.py", old_text="return 1", new_text="return 2")
    assert not result.is_error
    assert (ws / "m.py").read_text() == "def f():\n    return 2\n"
    assert result.content.splitlines() == [
        "Edited m.py at line 2: replaced 1 line with 1 line",
        "-return 1",
        "+return 2",
    ]


def test_edit_without_a_match_leaves_the_file_unchanged(ws: Path) -> None:
    original = b"def f():\r\n\treturn 1\r\n\xc3\xa9\r\n"
    (ws / "m.py").write_bytes(original)
    result = run("edit", ws, path="m.py", old_text="return 3", new_text="x")
    assert result.is_error
    assert "not found" in result.content
    assert "whitespace" not in result.content
    assert (ws / "m.py").read_bytes() == original


def test_edit_hints_at_a_whitespace_only_difference(ws: Path) -> None:
    original = b"def f():\n\treturn 1\n"
    (ws / "m.py").write_bytes(original)
    result = run("edit", ws, path="m.py", old_text="def f():\n    return 1", new_text="x")
    assert result.is_error
    assert "not found" in result.content
    assert "whitespace is ignored" in result.content
    assert (ws / "m.py").read_bytes() == original


def test_edit_with_two_matches_leaves_the_file_unchanged(ws: Path) -> None:
    original = b"x = 1\ny = 2\nx = 1\n"
    (ws / "m.py").write_bytes(original)
    result = run("edit", ws, path="m.py", old_text="x = 1", new_text="x = 3")
    assert result.is_error
    assert "occurs 2 times" in result.content
    assert "lines 1, 3" in result.content
    assert "add surrounding lines" in result.content
    assert (ws / "m.py").read_bytes() == original


def test_edit_counts_overlapping_matches(ws: Path) -> None:
    (ws / "a.txt").write_text("aaa")
    result = run("edit", ws, path="a.txt", old_text="aa", new_text="b")
    assert result.is_error and "occurs 2 times" in result.content


def test_edit_preserves_untouched_bytes(ws: Path) -> None:
    (ws / "crlf.txt").write_bytes("één\r\ntwo\r\nthree\r\n".encode())
    result = run("edit", ws, path="crlf.txt", old_text="two", new_text="2")
    assert not result.is_error
    assert (ws / "crlf.txt").read_bytes() == "één\r\n2\r\nthree\r\n".encode()


def test_edit_refusals(ws: Path, tmp_path: Path) -> None:
    (ws / "m.py").write_text("a\n")
    (ws / "leak").symlink_to(tmp_path / "outside.txt")
    same = run("edit", ws, path="m.py", old_text="a", new_text="a")
    assert same.is_error and "identical" in same.content
    empty = run("edit", ws, path="m.py", old_text="", new_text="b")
    assert empty.is_error and "must not be empty" in empty.content
    outside = run("edit", ws, path="leak", old_text="outside", new_text="inside")
    assert outside.is_error and "outside the workspace" in outside.content
    assert (tmp_path / "outside.txt").read_text() == "outside secret\n"
    (ws / "latin1.txt").write_bytes(b"caf\xe9\n")
    latin = run("edit", ws, path="latin1.txt", old_text="caf", new_text="cafe")
    assert latin.is_error and "UTF-8" in latin.content
    assert (ws / "latin1.txt").read_bytes() == b"caf\xe9\n"


# --- arguments ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("read", {}, "missing required argument 'path'"),
        ("read", {"path": 3}, "must be a string, not a number"),
        ("read", {"path": "a", "offset": "2"}, "must be an integer, not a string"),
        ("read", {"path": "a", "offset": 0}, "at least 1"),
        ("read", {"path": "a", "limit": True}, "must be an integer, not a boolean"),
        ("read", {"path": "a", "lines": 3}, "unknown argument(s) lines"),
        ("write", {"path": "a"}, "missing required argument 'content'"),
        ("write", {"path": None, "content": ""}, "missing required argument 'path'"),
        ("edit", {"path": "a", "old_text": "x"}, "missing required argument 'new_text'"),
        ("edit", {"path": "a", "old_text": ["x"], "new_text": ""}, "not an array"),
    ],
)
def test_bad_arguments_are_error_results(
    ws: Path, tool: str, args: dict[str, Any], message: str
) -> None:
    result = run(tool, ws, **args)
    assert result.is_error
    assert message in result.content


def test_arguments_that_are_not_an_object_are_an_error_result(ws: Path) -> None:
    async def call() -> ToolResult:
        return await READ_TOOL.execute("path", ToolContext(workspace=ws))  # type: ignore[arg-type]

    result = asyncio.run(call())
    assert result.is_error and "JSON object" in result.content


def test_float_integers_are_accepted(ws: Path) -> None:
    (ws / "a.txt").write_text("1\n2\n3\n")
    assert run("read", ws, path="a.txt", offset=2.0, limit=1.0).content.startswith("2\n")
