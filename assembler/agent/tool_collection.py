"""The tool registry of an agent, from its manifest and its resource snapshot.

Order decides clashes: built-in and Python sets in manifest order, then tools that
extensions registered (in load order), then MCP tools, then the memory `remember`
tool. The first tool of a name stays; every later one is dropped with a diagnostic
naming both sources, so a clash is never silent and never depends on timing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from assembler.errors import Issue
from assembler.manifest.model import AgentToolSet, BuiltinToolSet, Manifest, PythonToolSet
from assembler.tools.base import Tool
from assembler.tools.builtin.sets import resolve_builtin
from assembler.tools.registry import ToolRegistry, dedupe_guidelines

AgentTools = Callable[[AgentToolSet], Sequence[Tool]]
"""The tool of a sub-agent tool set (`agent.subagents.Team.tools`, or a dry run's)."""


@dataclass
class ToolCollection:
    """Tools in registration order, with the guidelines of their sets and the
    diagnostics of any clash."""

    tools: dict[str, Tool] = field(default_factory=dict)
    guidelines: list[str] = field(default_factory=list)
    diagnostics: list[Issue] = field(default_factory=list)

    def add(self, tool: Tool) -> bool:
        existing = self.tools.get(tool.name)
        if existing is not None:
            if existing is not tool:
                self.diagnostics.append(clash(tool, existing))
            return False
        self.tools[tool.name] = tool
        return True

    def extend(self, tools: Iterable[Tool]) -> None:
        for tool in tools:
            self.add(tool)

    def registry(self) -> ToolRegistry:
        return ToolRegistry(self.tools.values(), dedupe_guidelines(self.guidelines))


def clash(ignored: Tool, kept: Tool) -> Issue:
    """The diagnostic for a tool dropped because an earlier one has its name."""
    return Issue(
        severity="warning",
        message=(
            f"tool `{ignored.name}` from {_describe(ignored.source)} is ignored: "
            f"`{kept.name}` from {_describe(kept.source)} came first (first wins)"
        ),
    )


def _describe(source: str) -> str:
    kind, _, name = source.partition(":")
    return {
        "builtin": "the built-in tools",
        "python": f"Python tool {name}",
        "mcp": f"MCP server `{name}`",
        "extension": f"extension `{name}`",
        "memory": "the memory policy",
        "agent": f"sub-agent {name}",
    }.get(kind, source)


def builtin_tools(spec: BuiltinToolSet) -> list[Tool]:
    tools = resolve_builtin(spec.names)
    if spec.allow is not None:
        allowed = set(spec.allow)
        tools = tuple(t for t in tools if t.name in allowed)
    return list(tools)


def manifest_tools(
    manifest: Manifest, *, static: bool, agents: AgentTools | None = None
) -> ToolCollection:
    """Built-in, Python and sub-agent tools of the manifest (in its order), plus all
    manifest guidelines.

    With `static`, Python tools are described from their source without importing
    it (`assemble render --dry-run`); their `execute` refuses to run. `agents` gives
    a sub-agent set's tool; without it those sets add none.
    """
    collection = ToolCollection()
    for spec in manifest.tools.sets:
        collection.guidelines.extend(spec.guidelines)
        if isinstance(spec, BuiltinToolSet):
            collection.extend(builtin_tools(spec))
        elif isinstance(spec, PythonToolSet):
            collection.extend(python_tools(spec, manifest, static=static))
        elif isinstance(spec, AgentToolSet) and agents is not None:
            collection.extend(agents(spec))
    collection.guidelines.extend(manifest.tools.guidelines)
    return collection


def python_tools(spec: PythonToolSet, manifest: Manifest, *, static: bool) -> list[Tool]:
    # Imported here for start-up cost: a manifest without Python tools (most) never
    # needs the source analysis behind them, nor trust's module search roots
    # (`render --dry-run`, issue 21).
    from assembler.tools.python.tools import dry_run_python_tool, load_python_tool
    from assembler.trust import code_roots

    roots = code_roots(manifest)
    if static:
        return [dry_run_python_tool(entry, roots) for entry in spec.tools]
    return [load_python_tool(entry, roots) for entry in spec.tools]
