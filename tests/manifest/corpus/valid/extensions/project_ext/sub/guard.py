"""Blocks nothing; a corpus extension."""

from typing import Any


def setup(api: Any, options: dict[str, Any]) -> None:
    del api, options
