"""Small text helpers for what people read: one-line previews, JSON type names."""

from __future__ import annotations

from collections.abc import Mapping


def one_line(text: str, limit: int | None = 100) -> str:
    """`text` on one line (whitespace runs collapsed), cut to `limit` characters with
    an ellipsis (`None`: no cut): for previews of tool output in traces and on the
    terminal, error details and catalog snippets."""
    flat = " ".join(str(text).split())
    return flat if limit is None or len(flat) <= limit else flat[: limit - 1] + "…"


def json_type_name(value: object) -> str:
    """What a value is, in JSON words with an article (`a string`, `an object`,
    `null`), for messages that tell someone their value has the wrong type."""
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
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
