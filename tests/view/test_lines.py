"""The incremental line index: only complete lines, only new bytes, a replaced file
read afresh."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assembler.view import lines
from assembler.view.lines import LineIndex


def test_lines_are_indexed_as_they_are_appended(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"head\none\n")
    index = LineIndex(path, lambda raw: raw.decode(), skip_first=True)
    assert index.refresh() is True
    assert [line.info for line in index.lines] == ["one"]
    assert index.refresh() is False  # nothing new

    with path.open("ab") as handle:
        handle.write(b"two\nthr")  # a write in progress: not a line yet
    assert index.refresh() is True
    assert [line.info for line in index.lines] == ["one", "two"]
    with path.open("ab") as handle:
        handle.write(b"ee\n\n")
    index.refresh()
    lines = index.lines
    assert [line.info for line in lines] == ["one", "two", "three"]
    assert index.first_line == b"head"
    assert index.read(lines[2]) == b"three"
    assert index.read_many(lines) == [b"one", b"two", b"three"]


def test_a_replaced_or_shrunk_file_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\nb\nc\n")
    index = LineIndex(path, lambda raw: raw.decode())
    index.refresh()
    replacement = tmp_path / "g.jsonl"
    replacement.write_bytes(b"x\n")
    os.replace(replacement, path)
    index.refresh()
    assert [line.info for line in index.lines] == ["x"]


def test_lines_longer_than_a_read_chunk(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    big = b"x" * (3 << 20)
    path.write_bytes(b"short\n" + big + b"\nend\n")
    index = LineIndex(path, len)
    index.refresh()
    assert [line.info for line in index.lines] == [5, len(big), 3]
    assert index.read(index.lines[1]) == big


def test_a_line_over_the_limit_is_skipped_not_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lines, "CHUNK", 16)
    monkeypatch.setattr(lines, "MAX_LINE", 40)
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"one\n" + b"y" * 200 + b"\ntwo\n" + b"z" * 100)
    index = LineIndex(path, lambda raw: raw.decode() or "<unusable>")
    index.refresh()
    assert [line.info for line in index.lines] == ["one", "<unusable>", "two"]
    assert index.read(index.lines[2]) == b"two"
    with path.open("ab") as handle:
        handle.write(b"\nthree\n")
    index.refresh()
    assert [line.info for line in index.lines] == [
        "one",
        "<unusable>",
        "two",
        "<unusable>",
        "three",
    ]
