"""The tools every agent can name in its manifest, and the sets that group them.

A manifest lists tool names and set names together (`tools: [coding, grep]`);
`resolve_builtin` expands them in order, without duplicates, so the prompt's tool
catalog is stable. Importing this module only builds dataclasses: no subprocess, no
asyncio (the tools import it when they run).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from assembler.errors import ToolError
from assembler.tools.base import Tool
from assembler.tools.builtin.bash import BASH_TOOL
from assembler.tools.builtin.files import EDIT_TOOL, READ_TOOL, WRITE_TOOL
from assembler.tools.builtin.names import BUILTIN_SETS
from assembler.tools.builtin.search import FIND_TOOL, GREP_TOOL, LS_TOOL
from assembler.tools.builtin.todo import TODO_TOOL

BUILTIN_TOOLS: Mapping[str, Tool] = MappingProxyType(
    {
        tool.name: tool
        for tool in (
            READ_TOOL,
            WRITE_TOOL,
            EDIT_TOOL,
            BASH_TOOL,
            GREP_TOOL,
            FIND_TOOL,
            LS_TOOL,
            TODO_TOOL,
        )
    }
)


class UnknownToolError(ToolError, KeyError):
    """A manifest names a built-in tool or set that does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message otherwise
        return str(self.args[0]) if self.args else ""


def resolve_builtin(names: Iterable[str]) -> tuple[Tool, ...]:
    """The tools for a list of tool and set names: in order, each tool once."""
    tools: dict[str, Tool] = {}
    for name in names:
        if name in BUILTIN_SETS:
            members = BUILTIN_SETS[name]
        elif name in BUILTIN_TOOLS:
            members = (name,)
        else:
            raise UnknownToolError(
                f"unknown built-in tool or set {name!r}; tools: "
                f"{', '.join(BUILTIN_TOOLS)}; sets: {', '.join(BUILTIN_SETS)}"
            )
        for member in members:
            tools.setdefault(member, BUILTIN_TOOLS[member])
    return tuple(tools.values())


__all__ = ["BUILTIN_SETS", "BUILTIN_TOOLS", "UnknownToolError", "resolve_builtin"]
