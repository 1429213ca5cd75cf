"""Truncation by lines and bytes, head and tail, never splitting a UTF-8 character."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assembler.tools.truncate import Keep, format_size, truncate_output, truncate_text

LINES, BYTES = 2000, 50 * 1024


def numbered(count: int) -> str:
    return "".join(f"line {n}\n" for n in range(1, count + 1))


def test_short_text_is_unchanged() -> None:
    text = numbered(10)
    assert truncate_output(text, LINES, BYTES, keep="head") == (text, None)
    assert truncate_output("", LINES, BYTES, keep="tail") == ("", None)


def test_exactly_at_the_line_limit_is_not_truncated() -> None:
    text = numbered(LINES)
    assert truncate_output(text, LINES, BYTES * 10, keep="head") == (text, None)
    kept, notice = truncate_output(numbered(LINES + 1), LINES, BYTES * 10, keep="head")
    assert notice is not None
    assert kept == text


def test_line_limit_keeps_the_head_with_an_exact_notice() -> None:
    kept, notice = truncate_output(numbered(5123), LINES, BYTES * 10, keep="head")
    assert kept == numbered(2000)
    assert notice == (
        "[output truncated: showing lines 1-2000 of 5123 (2000-line limit); 3123 lines cut]"
    )


def test_line_limit_keeps_the_tail_for_command_output() -> None:
    kept, notice = truncate_output(numbered(5123), LINES, BYTES * 10, keep="tail")
    assert kept.startswith("line 3124\n")
    assert kept.endswith("line 5123\n")
    assert kept.count("\n") == 2000
    assert notice == (
        "[output truncated: showing lines 3124-5123 of 5123 (2000-line limit); 3123 lines cut]"
    )


def test_byte_limit_keeps_whole_lines() -> None:
    line = "x" * 99 + "\n"  # 100 bytes
    kept, notice = truncate_output(line * 1000, LINES, BYTES, keep="head")
    assert kept == line * 512  # 51,200 bytes: exactly 50 KB
    assert notice == (
        "[output truncated: showing lines 1-512 of 1000 (50.0 KB limit); 488 lines cut]"
    )
    kept, notice = truncate_output(line * 1000, LINES, BYTES, keep="tail")
    assert kept == line * 512
    assert notice is not None and "showing lines 489-1000 of 1000" in notice


def test_exactly_at_the_byte_limit_with_multibyte_text_is_not_truncated() -> None:
    text = "é" * (BYTES // 2)  # 2 bytes each: exactly 51,200 bytes
    assert len(text.encode()) == BYTES
    assert truncate_output(text, LINES, BYTES, keep="head") == (text, None)
    assert truncate_output(text, LINES, BYTES, keep="tail") == (text, None)


@pytest.mark.parametrize("char", ["é", "€", "😀"])
@pytest.mark.parametrize("keep", ["head", "tail"])
@pytest.mark.parametrize("extra", [1, 2, 3])
def test_a_long_line_is_cut_on_a_character_boundary(char: str, keep: Keep, extra: int) -> None:
    width = len(char.encode())
    text = char * (BYTES // width + extra)  # one line, just over the limit
    limit = BYTES - extra  # often lands inside a character
    kept, notice = truncate_output(text, LINES, limit, keep=keep)
    raw = kept.encode()
    assert len(raw) <= limit
    assert len(raw) > limit - width
    assert set(kept) == {char}
    assert notice is not None
    part = "first" if keep == "head" else "last"
    assert f"only the {part} {len(raw)} of {len(text.encode())} bytes of line 1" in notice


def test_partial_line_notice_names_the_cut_line_in_tail_mode() -> None:
    text = "short\n" + "€" * 30_000  # the last line alone is over the limit
    kept, notice = truncate_output(text, LINES, BYTES, keep="tail")
    assert set(kept) == {"€"}
    assert notice is not None
    assert "showing lines 2-2 of 2" in notice
    assert "1 lines cut" in notice


def test_last_line_without_newline_counts() -> None:
    result = truncate_text("a\nb\nc", 2, BYTES, keep="tail")
    assert result.text == "b\nc"
    assert (result.first_line, result.last_line, result.total_lines) == (2, 3, 3)


def test_carriage_returns_do_not_split_lines() -> None:
    text = "progress 10%\rprogress 100%\ndone\n"
    assert truncate_text(text, LINES, BYTES, keep="head").total_lines == 2


def test_notice_can_be_placed_in_a_larger_whole() -> None:
    result = truncate_text(numbered(10), 4, BYTES, keep="tail")
    notice = result.notice(line_offset=100, total_lines=110)
    assert (
        notice == "[output truncated: showing lines 107-110 of 110 (4-line limit); 106 lines cut]"
    )


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError):
        truncate_output("x", 0, 10, keep="head")


def test_format_size() -> None:
    assert format_size(500) == "500 B"
    assert format_size(BYTES) == "50.0 KB"
    assert format_size(3 * 1024 * 1024) == "3.0 MB"


@given(
    text=st.text(st.characters(exclude_categories=["Cs"]), max_size=300),
    max_lines=st.integers(1, 20),
    max_bytes=st.integers(1, 200),
    keep=st.sampled_from(["head", "tail"]),
)
def test_property_kept_text_is_a_bounded_prefix_or_suffix(
    text: str, max_lines: int, max_bytes: int, keep: Keep
) -> None:
    kept, notice = truncate_output(text, max_lines, max_bytes, keep=keep)
    if notice is None:
        assert kept == text
        return
    assert len(kept.encode()) <= max_bytes
    assert kept.count("\n") <= max_lines
    if keep == "head":
        assert text.startswith(kept)
    else:
        assert text.endswith(kept)
