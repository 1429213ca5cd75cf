"""Records nothing; a corpus extension."""

from typing import Any


async def setup(api: Any, options: dict[str, Any]) -> None:
    del api, options
