"""`select_lines` streams a file and picks what `truncate_text` picks from the whole text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler.tools.builtin import line_reader
from assembler.tools.builtin.line_reader import Selection, select_lines
from assembler.tools.truncate import split_lines, truncate_text


def whole_text_choice(
    data: bytes, offset: int, limit: int | None, max_lines: int, max_bytes: int
) -> Selection:
    """What `read` showed when it loaded the whole file (the behaviour to keep)."""
    lines = split_lines(data.decode("utf-8", "replace"))
    end = len(lines) if limit is None else min(len(lines), offset - 1 + limit)
    cut = truncate_text("".join(lines[offset - 1 : end]), max_lines, max_bytes, keep="head")
    return Selection(
        cut.text,
        offset,
        offset - 1 + cut.last_line,
        len(lines),
        cut.truncated,
        cut.limit if cut.truncated else "",
        cut.line_bytes,
    )


def streamed(
    path: Path, offset: int, limit: int | None, max_lines: int, max_bytes: int
) -> Selection:  # positional, like the whole-text version it is compared with
    fd = os.open(path, os.O_RDONLY)
    try:
        return select_lines(
            fd, offset=offset, limit=limit, max_lines=max_lines, max_bytes=max_bytes
        )
    finally:
        os.close(fd)


lines_strategy = st.lists(
    st.one_of(
        st.text(alphabet="ab é€\t\r", max_size=12),
        st.sampled_from(["", "x" * 40, "€" * 15]),
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(
    lines=lines_strategy,
    final_newline=st.booleans(),
    offset=st.integers(1, 12),
    limit=st.one_of(st.none(), st.integers(1, 10)),
    max_lines=st.integers(1, 8),
    max_bytes=st.integers(1, 60),
    chunk=st.sampled_from([1, 3, 7, 64, 1 << 16]),
)
def test_streaming_picks_what_the_whole_text_cut_picked(
    tmp_path_factory: pytest.TempPathFactory,
    *,
    lines: list[str],
    final_newline: bool,
    offset: int,
    limit: int | None,
    max_lines: int,
    max_bytes: int,
    chunk: int,
) -> None:
    data = "\n".join(lines).encode()
    if final_newline and data:
        data += b"\n"
    path = tmp_path_factory.mktemp("lines") / "f.txt"
    path.write_bytes(data)
    expected = whole_text_choice(data, offset, limit, max_lines, max_bytes)
    original = line_reader.CHUNK_BYTES
    line_reader.CHUNK_BYTES = chunk  # small chunks cut lines and characters anywhere
    try:
        got = streamed(path, offset, limit, max_lines, max_bytes)
    finally:
        line_reader.CHUNK_BYTES = original
    assert got.total == expected.total
    if offset > expected.total:
        return  # `read` refuses this offset; what was picked does not matter
    assert got == expected


def test_invalid_utf8_is_replaced_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"caf\xe9\nok\n")
    got = streamed(path, 1, None, 10, 100)
    assert got.text == "caf\ufffd\nok\n"
    assert (got.first, got.last, got.total, got.truncated) == (1, 2, 2, False)
