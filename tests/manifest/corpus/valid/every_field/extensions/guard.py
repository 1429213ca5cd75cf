"""A do-nothing extension for the corpus."""

from typing import Any


def setup(api: Any, options: dict[str, Any]) -> None:
    del api, options
