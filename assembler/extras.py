"""Optional extras: which feature needs which packages, and the one line shown when
they are missing.

The core install (pyyaml, jsonschema, jinja2, click, tree-sitter) validates, renders
and runs agents with the scripted model. Everything else is an extra of the package,
named after what it brings: `pip install 'agent-assembler[openai]'`. Code that uses
an extra imports it at the point of use, inside `requires(...)`, never at start-up,
so a missing package is one `MissingExtraError` naming the extra, not a traceback:

    openai:gpt-4o needs the OpenAI SDK: pip install 'agent-assembler[openai]'

`require` checks the same without importing anything (`importlib.util.find_spec`),
for failing early: before a session file is created, before a server starts.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import NamedTuple

from assembler.errors import MissingExtraError

__all__ = ["EXTRAS", "Extra", "install_hint", "installed", "missing", "require", "requires"]


class Extra(NamedTuple):
    """One extra: its name in `agent-assembler[NAME]`, what it is called in messages,
    and the top-level modules our code imports from it (each declared in pyproject).
    A named tuple, not a dataclass: this module is on start-up paths, and a class is
    faster to create."""

    name: str
    what: str
    modules: tuple[str, ...]


EXTRAS: Mapping[str, Extra] = MappingProxyType(
    {
        "openai": Extra("openai", "the OpenAI SDK", ("openai", "httpx2")),
        "anthropic": Extra("anthropic", "the Anthropic SDK", ("anthropic", "httpx2")),
        "mcp": Extra("mcp", "the MCP SDK", ("mcp", "mcp_types", "httpx2", "anyio")),
        "acp": Extra("acp", "the Agent Client Protocol SDK", ("acp",)),
        "otel": Extra("otel", "the OpenTelemetry API", ("opentelemetry",)),
        "dask": Extra("dask", "dask.distributed", ("dask", "distributed")),
    }
)


def install_hint(extra: str) -> str:
    """`pip install 'agent-assembler[openai]'`, quoted for every common shell."""
    return f"pip install 'agent-assembler[{EXTRAS[extra].name}]'"


def missing(extra: str, subject: str, cause: ImportError | None = None) -> MissingExtraError:
    """The error for `subject` (`openai:gpt-4o`, "MCP server `time`") lacking `extra`.

    When the import failed on a module that is not the extra's own (a broken install:
    the SDK is there, one of its dependencies is not), the message says which.
    """
    spec = EXTRAS[extra]
    detail = ""
    if cause is not None:
        root = (cause.name or "").partition(".")[0]
        if root not in spec.modules:
            detail = f" ({spec.what} could not be imported: {cause})"
    return MissingExtraError(f"{subject} needs {spec.what}: {install_hint(extra)}{detail}")


def installed(extra: str) -> bool:
    """Whether every module of `extra` can be found; nothing is imported."""
    return all(importlib.util.find_spec(module) is not None for module in EXTRAS[extra].modules)


def require(extra: str, subject: str) -> None:
    """Raise the one-line `MissingExtraError` unless `extra` is installed."""
    if not installed(extra):
        raise missing(extra, subject)


@contextmanager
def requires(extra: str, subject: str) -> Iterator[None]:
    """Import `extra`'s modules inside this block: an `ImportError` becomes the
    one-line `MissingExtraError` for `subject`."""
    try:
        yield
    except ImportError as e:
        raise missing(extra, subject, e) from e
