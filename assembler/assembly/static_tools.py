"""Python tools as `render --dry-run` sees them: described from source, never run.

The prompt's tool catalog needs a tool's name and snippet, which come from the
function's name and docstring; both can be read from the parsed source, so the
dry-run prompt is the real prompt without importing project code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assembler.manifest.model import PythonToolSpec
from assembler.tools.base import Tool, ToolContext, ToolResult


def static_tool(spec: PythonToolSpec, roots: Sequence[Path]) -> Tool:
    from assembler.tools.python_tools import static_python_tool

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
