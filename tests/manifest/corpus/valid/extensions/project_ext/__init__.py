"""A project package whose `setup` is defined at the top level."""

from typing import Any


def setup(api: Any, options: dict[str, Any]) -> None:
    del api, options
