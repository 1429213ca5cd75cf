"""Small text helpers for what people read: one-line previews, JSON type names, and
text made safe for a terminal.

Model replies, tool output, memory records, session files and manifests are data
written by someone else. A terminal acts on some characters instead of showing
them: ESC starts sequences that set the clipboard (OSC 52), the window title (OSC 0),
clear the screen or hide text; C1 controls do the same in one byte; a lone carriage
return or backspaces overwrite what was shown; bidi overrides reorder it. Everything
`assemble` prints for people goes through `terminal_safe`, and JSON it prints goes
through `terminal_json`, so such characters are shown, never obeyed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# C0 controls but tab, newline and the carriage return of a CRLF; DEL; C1; the bidi
# marks, embeddings, overrides and isolates (Trojan Source); lone surrogates (not
# text, and unprintable in UTF-8); Unicode tag characters (invisible text).
_CONTROLS = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff\U000e0000-\U000e007f"
)
_UNSAFE = re.compile(f"[{_CONTROLS}\r]")  # one class: twice as fast as `|\r(?!\n)`
# In JSON text, `json.dumps` already escapes C0 (and CR) inside strings.
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                             "\ud800-\udfff\U000e0000-\U000e007f]")  # fmt: skip


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


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r":  # the CR of a CRLF moves nothing that the LF does not
        end = match.end()
        return "\r" if match.string[end : end + 1] == "\n" else "\\r"
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_safe(text: str) -> str:
    """`text` with every character a terminal would act on shown escaped, the way
    Python writes it (`\\x1b`, `\\r`, `\\u202e`); tabs, newlines, CRLF and all
    printable text (any script, emoji) unchanged."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def _escape_json(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def terminal_safe_json(text: str) -> str:
    """JSON text (as `json.dumps(..., ensure_ascii=False)` writes it) with the
    characters `json.dumps` leaves raw but a terminal acts on written as `\\uXXXX`
    escapes: the same JSON value, safe to print. Valid because those characters can
    only occur inside strings."""
    return _UNSAFE_IN_JSON.sub(_escape_json, text) if _UNSAFE_IN_JSON.search(text) else text


def terminal_json(value: Any) -> str:
    """`value` as one line of JSON that reads back unchanged and is safe to print
    (non-ASCII text stays readable; see `terminal_safe_json`)."""
    return terminal_safe_json(json.dumps(value, ensure_ascii=False, default=str))
