"""The agent's own guards: the files its file tools must never change.

An agent whose workspace holds its own manifest could otherwise loosen its own
rules, rewrite the extension that blocks it, or plant code in a tool module that the
next build imports. So `write` and `edit` refuse every file that decides what the
agent (or any sub-agent below it) is and may do, whatever the permission rules say:

- the manifests of the tree;
- extension files, and the project modules of extensions and Python tools (a
  package's whole directory), with the `__pycache__` beside each, since Python
  loads a cached `.pyc` in place of its source when the header fits;
- replay scripts (`scripted:`), which choose every tool call;
- prompt template files;
- the files an MCP stdio server runs from the project.

`permissions.self_edit` in the agent's manifest lifts the guard on the paths it
names (relative to the manifest; a directory covers what it holds): for an agent
meant to improve its own prompt, say. The rules still decide such a write.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from assembler.agent.team import TeamMember
from assembler.manifest.model import Manifest, MCPToolSet, PythonToolSet
from assembler.python_refs import locate_module
from assembler.trust import code_roots
from assembler.trust_files import stdio_server_files

PYCACHE = "__pycache__"


def guarded_paths(member: TeamMember) -> frozenset[Path]:
    """The guards of the agent `member` and of every agent below it, resolved, less
    what its own `permissions.self_edit` opts in."""
    found: set[Path] = set()
    for manifest in (member.manifest, *(m.manifest for m in member.unique())):
        for path in _guards(manifest):
            found.add(Path(os.path.abspath(path)))
            found.add(Path(os.path.realpath(path)))
    opted = [
        Path(os.path.realpath(member.manifest.directory / p))
        for p in member.manifest.permissions.self_edit
    ]
    return frozenset(g for g in found if not any(g == o or g.is_relative_to(o) for o in opted))


def _guards(manifest: Manifest) -> Iterator[Path]:
    yield manifest.path
    roots = code_roots(manifest)
    for extension in manifest.extensions:
        if extension.kind == "path" and extension.path is not None:
            yield from _source(extension.path)
        elif extension.kind == "module":
            yield from _module(extension.target, roots)
    for tool_set in manifest.tools.sets:
        if isinstance(tool_set, PythonToolSet):
            for tool in tool_set.tools:
                yield from _module(tool.function.partition(":")[0], roots)
        elif isinstance(tool_set, MCPToolSet) and tool_set.server.command:
            yield from stdio_server_files(tool_set.server, manifest.workspace, roots).files
    spec = manifest.model
    if spec is not None and spec.provider == "scripted":
        yield spec.script if spec.script is not None else manifest.directory / spec.name
    for template in manifest.prompt.values():
        if template.file is not None:
            yield template.file


def _source(path: Path) -> Iterator[Path]:
    """A Python file, and the cache Python would load in its place."""
    yield path
    yield path.parent / PYCACHE


def _module(module: str, roots: list[Path]) -> Iterator[Path]:
    """A project module named in the manifest: its file, the package it is part of."""
    location = locate_module(module, roots)
    if not location.in_project:
        return
    for file in (location.path, location.target):
        if file is not None:
            yield from _source(file)
    if location.top is not None and location.top.is_dir():
        yield location.top  # a package: every module in it may be imported
