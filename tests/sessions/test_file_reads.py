"""Bounded reads of session files: the lines a listing sees are the file's lines."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assembler.errors import SessionError
from assembler.sessions import file_reads
from assembler.sessions.file_reads import (
    MAX_HEADER_BYTES,
    bounded_lines,
    open_regular,
    read_header_line,
)


def expected(data: bytes, limit: int) -> list[bytes | None]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [line if len(line) <= limit else None for line in lines]


@given(
    data=st.lists(st.sampled_from([b"a", b"bb", b"\n", b"xyz\n", b"0123456789"])).map(b"".join),
    limit=st.integers(min_value=0, max_value=12),
    chunk=st.integers(min_value=1, max_value=7),
)
def test_lines_match_a_split_of_the_whole_file(data: bytes, limit: int, chunk: int) -> None:
    read, write = os.pipe()
    try:
        os.write(write, data)
        os.close(write)
        write = -1
        original = file_reads._LINES_CHUNK
        file_reads._LINES_CHUNK = chunk
        try:
            batches = list(bounded_lines(read, limit))
            assert [line for batch in batches for line in batch] == expected(data, limit)
        finally:
            file_reads._LINES_CHUNK = original
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)


def test_the_header_line_is_capped(tmp_path: Path) -> None:
    ok = tmp_path / "ok.jsonl"
    ok.write_bytes(b'{"a": 1}\nrest')
    too_long = tmp_path / "long.jsonl"
    too_long.write_bytes(b"x" * (MAX_HEADER_BYTES + 1) + b"\n")
    no_newline = tmp_path / "torn.jsonl"
    no_newline.write_bytes(b'{"a"')
    for path, first in ((ok, b'{"a": 1}'), (too_long, None), (no_newline, b'{"a"')):
        fd, _ = open_regular(path)
        try:
            assert read_header_line(fd) == first
        finally:
            os.close(fd)


def test_only_regular_files_are_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.jsonl")
    os.symlink("/dev/zero", tmp_path / "zero.jsonl")
    for name in ("fifo.jsonl", "zero.jsonl", "."):
        with pytest.raises(SessionError, match="not a regular file"):
            open_regular(tmp_path / name)
