"""Importing the ACP SDK without two start-up costs it does not need here.

`acp.schema` defines about 280 pydantic models and builds all of them as it is
imported: most of `assemble acp`'s start-up (bench/README.md, issue 27). Two parts of
that build are work a server never uses:

- the models ask for `use_attribute_docstrings`, so pydantic reads each class's
  source back and parses it to find the docstring under each field: descriptions for
  a JSON Schema, which the server never generates;
- each model's validator is built at once, though a session uses a few dozen of the
  models: with `defer_build`, pydantic builds a model's validator the first time it
  validates or serialises one, with the same result.

`import_sdk` switches both off for the duration of the SDK's import only and restores
them after, whatever happens. Both switches are pydantic internals: when a version
does not have them where expected, the SDK is imported as it is, only slower. This
module imports neither pydantic nor the SDK at its own import.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def import_sdk() -> None:
    """Import `acp` (its models built lazily, without field docstrings); nothing
    happens when it is already imported."""
    if "acp.schema" in sys.modules:
        return
    with _lighter_models():
        importlib.import_module("acp")


@contextmanager
def _lighter_models() -> Iterator[None]:
    try:
        fields: Any = importlib.import_module("pydantic._internal._fields")
        config: Any = importlib.import_module("pydantic._internal._config")
        docstrings = fields.extract_docstrings_from_cls
        defaults = config.config_defaults
        deferred = defaults["defer_build"]
    except (ImportError, AttributeError, KeyError, TypeError):
        yield  # another pydantic: the SDK is imported as it is
        return
    fields.extract_docstrings_from_cls = _no_docstrings
    defaults["defer_build"] = True
    try:
        yield
    finally:
        fields.extract_docstrings_from_cls = docstrings
        defaults["defer_build"] = deferred


def _no_docstrings(cls: type[Any], use_inspect: bool = False) -> dict[str, str]:
    return {}
