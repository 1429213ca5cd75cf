"""The live set of tools: what the model may call this turn.

Registering or removing a tool takes effect at the next model request, because the
runner asks the registry for schemas and the prompt provider asks it for the
catalog before every request. Both read the same registry, so the prompt and the
schemas cannot disagree about which tools exist.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assembler.errors import ToolError
from assembler.text import one_line
from assembler.tools.base import Tool
from assembler.tools.builtin.names import BUILTIN_TOOL_NAMES

if TYPE_CHECKING:
    from assembler.messages import ToolSchema


@dataclass(frozen=True)
class ToolEntry:
    """The part of a tool the system prompt shows."""

    name: str
    snippet: str
    description: str


class ToolRegistry:
    """Ordered tools by name, plus the manifest's tool guidelines."""

    def __init__(self, tools: Iterable[Tool] = (), guidelines: Iterable[str] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._extra_guidelines = tuple(guidelines)
        self._version = 0
        self._view: tuple[int, tuple[ToolEntry, ...], tuple[str, ...]] | None = None
        self._schemas: tuple[int, tuple[ToolSchema, ...]] | None = None
        for tool in tools:
            self.register(tool)

    @property
    def version(self) -> int:
        """Bumped on every change; lets readers cache what they derive."""
        return self._version

    def register(self, tool: Tool, *, replace: bool = False) -> None:
        """Add `tool`; an existing name is an error unless `replace` is set."""
        existing = self._tools.get(tool.name)
        if existing is not None and not replace:
            raise ToolError(
                f"tool `{tool.name}` from {tool.source} clashes with `{tool.name}` from "
                f"{existing.source}; the first one stays"
            )
        self._tools[tool.name] = tool
        self._version += 1

    def remove(self, name: str) -> Tool:
        try:
            tool = self._tools.pop(name)
        except KeyError:
            raise ToolError(f"no tool named `{name}` to remove") from None
        self._version += 1
        return tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def tools(self) -> tuple[Tool, ...]:
        return tuple(self._tools.values())

    def sources(self) -> Mapping[str, str]:
        """A live view of tool name -> source (`builtin`, `python:mod:f`, `mcp:server`,
        ...): tools registered later (MCP servers connect at start) show up in it."""
        return _SourceView(self._tools)

    def schemas(self) -> tuple[ToolSchema, ...]:
        """The tools' schemas, the same tuple until the registry changes (so what is
        derived from them, such as the budget's size estimate, is derived once)."""
        cached = self._schemas
        if cached is not None and cached[0] == self._version:
            return cached[1]
        schemas = tuple(tool.schema() for tool in self._tools.values())
        self._schemas = (self._version, schemas)
        return schemas

    def prompt_view(self) -> tuple[tuple[ToolEntry, ...], tuple[str, ...]]:
        """Catalog entries and guidelines (trimmed, de-duplicated, tools' own first),
        recomputed only after a change."""
        view = self._view
        if view is not None and view[0] == self._version:
            return view[1], view[2]
        entries = tuple(
            ToolEntry(t.name, one_line(t.snippet, limit=None), t.description)
            for t in self._tools.values()
        )
        active = set(self._tools)
        guidelines = dedupe_guidelines(
            [
                line
                for t in self._tools.values()
                for line in t.guidelines
                if t.source != "builtin" or names_only_active(line, active)
            ]
            + list(self._extra_guidelines)
        )
        self._view = (self._version, entries, guidelines)
        return entries, guidelines


class _SourceView(Mapping[str, str]):
    def __init__(self, tools: Mapping[str, Tool]) -> None:
        self._tools = tools

    def __getitem__(self, name: str) -> str:
        return self._tools[name].source

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)


_QUOTED = re.compile(r"`([A-Za-z_][A-Za-z0-9_-]*)`")


def names_only_active(line: str, active: Collection[str]) -> bool:
    """Whether every built-in tool `line` names in back-quotes is active.

    A built-in tool's guideline that points at another built-in tool ("use `read`
    rather than `cat` in `bash`") is shown only when that tool is there too: a prompt
    must not send the model after a tool it does not have (the `readonly` set has no
    `bash`). Guidelines from the manifest are shown as written; `validate` warns
    about the tools they mention.
    """
    return all(name in active for name in _QUOTED.findall(line) if name in BUILTIN_TOOL_NAMES)


def dedupe_guidelines(lines: Iterable[str]) -> tuple[str, ...]:
    """Trim each line, drop empties and repeats, keep first-seen order."""
    seen: dict[str, None] = {}
    for line in lines:
        text = " ".join(line.split())
        if text:
            seen.setdefault(text, None)
    return tuple(seen)
