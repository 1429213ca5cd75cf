"""Cut tool output to what fits in the model's context, and say exactly what was cut.

Two limits apply, lines and bytes, whichever is hit first. File reads keep the head
(the model asks for the next range with `offset`); command output keeps the tail,
where errors and summaries are. Whole lines are kept when possible; only when a single
line is larger than the byte limit is that line cut, always on a UTF-8 character
boundary so the model never sees a broken character.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Keep = Literal["head", "tail"]


@dataclass(frozen=True)
class Truncation:
    """The kept text and what it is a part of; line numbers are 1-based and inclusive.

    `first_line`..`last_line` are the lines (partly) kept, `total_lines` how many the
    input had. `line_bytes` is set when one line had to be cut inside: it is
    `(kept_bytes, full_bytes)` of that line. `limit` says which limit was hit.
    """

    text: str
    total_lines: int
    first_line: int
    last_line: int
    truncated: bool
    limit: str = ""
    line_bytes: tuple[int, int] | None = None
    keep: Keep = "head"

    def notice(self, *, line_offset: int = 0, total_lines: int | None = None) -> str | None:
        """The bracketed note for the model, or None when nothing was cut.

        `line_offset` and `total_lines` place the text in something larger it was cut
        from (command output whose start was already dropped), so the note gives the
        real line numbers and counts every line not shown.
        """
        if not self.truncated:
            return None
        total = self.total_lines + line_offset if total_lines is None else total_lines
        first, last = self.first_line + line_offset, self.last_line + line_offset
        shown = f"showing lines {first}-{last} of {total}"
        if self.line_bytes is not None:
            kept, full = self.line_bytes
            part = "first" if self.keep == "head" else "last"
            shown += f", only the {part} {kept} of {full} bytes of line {first}"
        cut = total - (last - first + 1)
        return f"[output truncated: {shown} ({self.limit}); {cut} lines cut]"


def truncate_text(text: str, max_lines: int, max_bytes: int, *, keep: Keep) -> Truncation:
    """Keep the head or tail of `text` within `max_lines` lines and `max_bytes` bytes."""
    if max_lines < 1 or max_bytes < 1:
        raise ValueError("max_lines and max_bytes must be at least 1")
    lines = split_lines(text)
    total = len(lines)
    sizes = [len(line.encode("utf-8", "surrogatepass")) for line in lines]
    if total <= max_lines and sum(sizes) <= max_bytes:
        return Truncation(text, total, 1 if total else 0, total, truncated=False)

    order = range(total) if keep == "head" else range(total - 1, -1, -1)
    kept: list[int] = []
    used = 0
    limit = f"{max_lines}-line limit"
    for index in order:
        if len(kept) == max_lines:
            break
        if used + sizes[index] > max_bytes:
            limit = f"{format_size(max_bytes)} limit"
            break
        kept.append(index)
        used += sizes[index]
    if kept:
        kept.sort()
        body = "".join(lines[i] for i in kept)
        return Truncation(
            body, total, kept[0] + 1, kept[-1] + 1, truncated=True, limit=limit, keep=keep
        )

    # Not even one whole line fits: cut that line on a character boundary.
    index = 0 if keep == "head" else total - 1
    raw = lines[index].encode("utf-8", "surrogatepass")
    part = cut_bytes(raw, max_bytes, keep=keep)
    return Truncation(
        part.decode("utf-8", "surrogatepass"),
        total,
        index + 1,
        index + 1,
        truncated=True,
        limit=f"{format_size(max_bytes)} limit",
        line_bytes=(len(part), len(raw)),
        keep=keep,
    )


def truncate_output(
    text: str, max_lines: int, max_bytes: int, *, keep: Keep
) -> tuple[str, str | None]:
    """The kept text and a notice saying what was cut (None when nothing was)."""
    result = truncate_text(text, max_lines, max_bytes, keep=keep)
    return result.text, result.notice()


def split_lines(text: str) -> list[str]:
    """Lines with their `\\n` kept; only `\\n` separates lines (a lone `\\r` does not)."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def cut_bytes(raw: bytes, max_bytes: int, *, keep: Keep) -> bytes:
    """At most `max_bytes` of `raw` from the head or tail, never splitting a character.

    UTF-8 continuation bytes look like `10xxxxxx`; a cut that would land on one moves
    toward the kept side until it sits on the start of a character.
    """
    if len(raw) <= max_bytes:
        return raw
    if keep == "head":
        end = max_bytes
        while end > 0 and raw[end] & 0xC0 == 0x80:
            end -= 1
        return raw[:end]
    start = len(raw) - max_bytes
    while start < len(raw) and raw[start] & 0xC0 == 0x80:
        start += 1
    return raw[start:]


def format_size(size: int) -> str:
    """`50.0 KB` style sizes for notices (1 KB = 1024 bytes)."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"
