"""Python functions named in the manifest (`tools.fees:quote_fee`), offered as tools.

The public entry points; the work is done in small modules:

- `python_runtime`: import the function, read its signature and type hints, wrap it;
- `python_call`: check and convert the model's arguments, call the function within
  the timeout, turn whatever it does into a result;
- `python_static`: the same description read from source alone, for
  `assemble render --dry-run`, which must not run project code;
- `python_signature`, `python_docstrings`, `python_schema`, `python_source_types`:
  what both views share, so the dry-run prompt equals the real one.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from assembler.errors import ToolError
from assembler.manifest.model import PythonToolSpec
from assembler.tools.base import Tool
from assembler.tools.python_runtime import build, import_function, refuse_generators
from assembler.tools.python_static import StaticToolInfo, static_python_tool

__all__ = ["StaticToolInfo", "load_python_tool", "static_python_tool", "tool_from_function"]


def load_python_tool(spec: PythonToolSpec, roots: Sequence[Path]) -> Tool:
    """Import `spec.function` (looking in `roots` before `sys.path`) and wrap it.

    Raises `ToolError` naming the reference when the module or function cannot be
    loaded or the function cannot be described as a tool.
    """
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
