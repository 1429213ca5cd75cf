"""`setup` is assigned, which cannot be checked without running the file."""

from typing import Any


def _real(api: Any, options: dict[str, Any]) -> None:
    del api, options


setup = _real
