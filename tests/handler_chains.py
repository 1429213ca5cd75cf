"""A handler chain for the extension dispatch tests that keeps every result."""

from __future__ import annotations

from typing import Any


class Collect:
    """A chain that keeps every result (and never ends early)."""

    def __init__(self) -> None:
        self.results: list[Any] = []

    def argument(self) -> Any:
        return "event"

    def accept(self, extension: str, result: Any) -> bool:
        self.results.append(result)
        return False
