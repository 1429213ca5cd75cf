"""Small text helpers for what people read: one-line previews."""

from __future__ import annotations


def one_line(text: str, limit: int = 100) -> str:
    """`text` on one line (whitespace runs collapsed), cut to `limit` characters with
    an ellipsis: for previews of tool output in traces and on the terminal."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
