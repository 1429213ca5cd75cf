"""Small text helpers for what people read: one-line previews, JSON type names."""

from __future__ import annotations


def one_line(text: str, limit: int = 100) -> str:
    """`text` on one line (whitespace runs collapsed), cut to `limit` characters with
    an ellipsis: for previews of tool output in traces and on the terminal."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def json_type_name(value: object) -> str:
    """What a decoded JSON value is, for messages: `an object`, `an array`, `a string`,
    `a number`, `a boolean`, `null`; another Python value gives its type's name."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
