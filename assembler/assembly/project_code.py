"""What project code a manifest would run, found without running any of it.

Trust is decided before any repo-local code runs (DESIGN.md section 7). This module
lists that code, with the directory it lives in: extension files, extension modules
and Python tools whose source is in the manifest's directory or the workspace, and
MCP stdio commands the manifest declares. Installed modules and entry points are the
user's own environment and need no trust.

Code is looked up in the manifest's directory, then the workspace. Both are project
directories, and each one that holds code to run must be trusted: trusting `agents/`
does not let a module the agent itself wrote into its workspace run next time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from assembler.manifest.model import Manifest, MCPToolSet, PythonToolSet
from assembler.validation.pyref import find_module_source


@dataclass(frozen=True)
class ProjectCode:
    """One piece of project code and the directory whose trust it needs."""

    description: str
    root: Path


def code_roots(manifest: Manifest) -> list[Path]:
    """Where project modules are looked up, in order: the manifest's directory, then
    the workspace (used alike by validation, trust and import)."""
    return list(dict.fromkeys([manifest.directory.resolve(), manifest.workspace.resolve()]))


def project_code(
    manifest: Manifest, *, include_extensions: bool = True, include_mcp: bool = True
) -> list[ProjectCode]:
    """The project code building this agent would run, each with its directory."""
    roots = code_roots(manifest)
    manifest_dir = roots[0]
    found: list[ProjectCode] = []

    def module_in_project(module: str, what: str) -> None:
        source, _ = find_module_source(module, roots)
        if source is None:
            return
        resolved = source.resolve()
        root = next((r for r in roots if resolved.is_relative_to(r)), None)
        if root is not None:
            found.append(ProjectCode(f"{what} ({_relative(resolved, manifest_dir)})", root))

    for extension in manifest.extensions if include_extensions else ():
        if extension.kind == "path" and extension.path is not None:
            description = f"extension file {_relative(extension.path, manifest_dir)}"
            found.append(ProjectCode(description, manifest_dir))
        elif extension.kind == "module":
            module_in_project(extension.target, f"extension module {extension.target}")
    for tool_set in manifest.tools.sets:
        if isinstance(tool_set, PythonToolSet):
            for tool in tool_set.tools:
                module_in_project(tool.function.partition(":")[0], f"Python tool {tool.function}")
        elif include_mcp and isinstance(tool_set, MCPToolSet) and tool_set.server.command:
            description = (
                f"MCP server `{tool_set.server.name}` (command `{tool_set.server.command}`)"
            )
            found.append(ProjectCode(description, manifest_dir))
    return list(dict.fromkeys(found))


def _relative(path: Path, root: Path) -> str:
    try:
        return os.path.relpath(path, root)
    except ValueError:
        return str(path)
