"""Python functions named in the manifest (`tools.fees:quote_fee`), offered as tools.

The public entry points; the work is done in small modules:

- `runtime`: import the function, read its signature and type hints, wrap it;
- `call`: check and convert the model's arguments, call the function within the
  timeout, turn whatever it does into a result;
- `static`: the same description read from source alone, for
  `assemble render --dry-run`, which must not run project code;
- `signature`, `docstrings`, `schema`, `source_types`: what both views share, so the
  dry-run prompt equals the real one.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from assembler.errors import ToolError
from assembler.manifest.model import PythonToolSpec
from assembler.python_source import building_syntax_trees
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.python.static import StaticToolInfo, static_python_tool

# `runtime` (and through it `call`: jsonschema, asyncio) is imported inside the two
# functions that run code, for start-up cost: `render --dry-run` only reads source.

__all__ = [
    "StaticToolInfo",
    "dry_run_python_tool",
    "load_python_tool",
    "static_python_tool",
    "tool_from_function",
]


def load_python_tool(spec: PythonToolSpec, roots: Sequence[Path]) -> Tool:
    """Import `spec.function` (looking in `roots` before `sys.path`) and wrap it.

    Raises `ToolError` naming the reference when the module or function cannot be
    loaded or the function cannot be described as a tool.
    """
    with building_syntax_trees():  # jsonschema's first import parses Python
        from assembler.tools.python.runtime import build, import_function  # start-up cost

    func, function_name = import_function(spec.function, roots)
    return build(func, spec, function_name)


def tool_from_function(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    snippet: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    source: str | None = None,
) -> Tool:
    """A tool from a function object (an extension's `register_tool`), described and
    run exactly as `load_python_tool` does for a manifest's `python:` entry."""
    with building_syntax_trees():  # jsonschema's first import parses Python
        from assembler.tools.python.runtime import build, refuse_generators  # start-up cost

    if not (inspect.isfunction(function) or inspect.ismethod(function)):
        raise ToolError(
            f"cannot use {function!r} as a tool: it is a {type(function).__name__}, not a "
            "function defined with `def` or `async def`"
        )
    reference = f"{function.__module__}:{function.__qualname__}"
    refuse_generators(function, reference)
    spec = PythonToolSpec(reference, name, description, snippet, parameters)
    tool = build(function, spec, function.__name__)
    return dataclasses.replace(tool, source=source) if source else tool


def dry_run_python_tool(spec: PythonToolSpec, roots: Sequence[Path]) -> Tool:
    """The tool as `render --dry-run` shows it: name, snippet and schema read from the
    parsed source (so the dry-run prompt is the real prompt), and an `execute` that
    refuses, since a dry run never runs project code."""
    info = static_python_tool(spec, roots)

    async def refuse(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult("a dry run does not execute tools", is_error=True)

    return Tool(
        name=info.name,
        description=info.description,
        parameters=info.parameters,
        execute=refuse,
        snippet=info.snippet,
        source=f"python:{spec.function}",
    )
