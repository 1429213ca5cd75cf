"""The protocol's input cut into messages, each checked before the SDK sees it.

The SDK's connection trusts its input more than an agent can: a line that is not JSON
is logged and dropped without an answer, and a line that is JSON but not an object
(`[]`, `5`) stops its receive loop, which ends the session. Editors have bugs and
people paste into pipes, so every line is checked here first, and one that is not a
JSON-RPC 2.0 message gets the JSON-RPC error the specification names (-32700 for a
parse error, -32600 for an invalid request), with the request's id when it has a
usable one, else null. What passes is handed to the SDK unchanged; its own errors
(unknown method, invalid params) are its business.

A message longer than `limit` is not buffered: its bytes are dropped as they come, it
is answered with -32600, and the next line is read as usual.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def error_line(code: int, message: str, request_id: object = None) -> bytes:
    """One JSON-RPC error response, as a line."""
    reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return (json.dumps(reply, separators=(",", ":")) + "\n").encode()


def checked(line: bytes) -> bytes | None:
    """None when `line` is a message to pass on (or blank), else the error to answer."""
    if not line.strip():
        return None
    try:
        message: Any = json.loads(line)
    except (ValueError, RecursionError) as e:  # also: invalid UTF-8, nesting too deep
        return error_line(PARSE_ERROR, f"Parse error: {type(e).__name__}")
    if not isinstance(message, dict):
        kind = "a batch" if isinstance(message, list) else "not an object"
        return error_line(INVALID_REQUEST, f"Invalid request: {kind}")
    request_id = message.get("id")
    usable_id = _usable_id(request_id)
    reply_id = request_id if usable_id else None
    if not usable_id:
        return error_line(INVALID_REQUEST, "Invalid request: the id must be a string or number")
    if message.get("jsonrpc") != "2.0":
        return error_line(INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"', reply_id)
    if "method" in message:
        if not isinstance(message["method"], str):
            return error_line(
                INVALID_REQUEST, "Invalid request: the method must be a string", reply_id
            )
        params = message.get("params", {})
        if not isinstance(params, dict | list):
            return error_line(
                INVALID_REQUEST, "Invalid request: params must be structured", reply_id
            )
        return None
    if "id" not in message or ("result" in message) == ("error" in message):
        return error_line(INVALID_REQUEST, "Invalid request: neither a request nor a response")
    return None


def _usable_id(value: object) -> bool:
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


class Lines:
    """Cuts incoming bytes into lines of at most `limit` bytes; `feed` gives each
    complete line, and None once for each line too long (dropped)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._dropping = False

    def feed(self, chunk: bytes) -> Iterator[bytes | None]:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            piece = chunk[start : end + 1]
            start = end + 1
            if self._dropping:
                self._dropping = False
                continue
            if len(self._buffer) + len(piece) > self.limit:
                self._buffer.clear()
                yield None
                continue
            self._buffer += piece
            line = bytes(self._buffer)
            self._buffer.clear()
            yield line
        rest = chunk[start:]
        if self._dropping or not rest:
            return
        if len(self._buffer) + len(rest) > self.limit:
            self._buffer.clear()
            self._dropping = True
            yield None
            return
        self._buffer += rest

    def end(self) -> bytes | None:
        """What is left at the end of input (a last line without a newline)."""
        if self._dropping or not self._buffer:
            return None
        line = bytes(self._buffer) + b"\n"
        self._buffer.clear()
        return line
