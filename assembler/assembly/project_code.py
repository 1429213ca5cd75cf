"""What project code a manifest would run, found without running any of it.

Trust is decided before any repo-local code runs (DESIGN.md section 7). This module
lists that code: extension files, Python tools whose source lives in the project,
and MCP stdio commands the manifest declares. Installed modules and entry points
are the user's own environment and need no trust.
"""

from __future__ import annotations

import os
from pathlib import Path

from assembler.manifest.model import Manifest, MCPToolSet, PythonToolSet
from assembler.validation.pyref import find_module_source


def trust_root(manifest: Manifest) -> Path:
    """The directory whose trust decides whether this manifest's project code runs."""
    return manifest.directory.resolve()


def project_code(
    manifest: Manifest, *, include_extensions: bool = True, include_mcp: bool = True
) -> list[str]:
    """Human-readable descriptions of the project code building this agent would run."""
    roots = [manifest.directory.resolve(), manifest.workspace.resolve()]
    found: list[str] = []
    for extension in manifest.extensions if include_extensions else ():
        if extension.kind == "path" and extension.path is not None:
            found.append(f"extension file {_relative(extension.path, roots[0])}")
    for tool_set in manifest.tools.sets:
        if isinstance(tool_set, PythonToolSet):
            for tool in tool_set.tools:
                module = tool.function.partition(":")[0]
                source, _ = find_module_source(module, roots)
                if source is not None and any(source.resolve().is_relative_to(r) for r in roots):
                    found.append(f"Python tool {tool.function} ({_relative(source, roots[0])})")
        elif include_mcp and isinstance(tool_set, MCPToolSet) and tool_set.server.command:
            found.append(
                f"MCP server `{tool_set.server.name}` (command `{tool_set.server.command}`)"
            )
    return list(dict.fromkeys(found))


def _relative(path: Path, root: Path) -> str:
    try:
        return os.path.relpath(path, root)
    except ValueError:
        return str(path)
