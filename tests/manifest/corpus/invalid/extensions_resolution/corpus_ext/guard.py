"""A module whose setup function is nested, not top-level."""

from typing import Any


def make() -> Any:
    def setup(api: Any, options: dict[str, Any]) -> None:
        del api, options

    return setup
