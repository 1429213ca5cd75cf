"""The error a request is refused with: its `type` in the answer, and a message."""

from __future__ import annotations


class RpcError(Exception):
    """A request the server refuses; `kind` is the error's `type` in the answer."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
