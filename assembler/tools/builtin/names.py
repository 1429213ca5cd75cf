"""Names of the built-in tools and sets, without the tools themselves.

`assemble validate` needs the names (to expand `coding` into read, bash, edit, write)
but not the implementations; keeping the names here keeps validation's start-up free
of everything the tools import.

`all` is every tool that works on the workspace; the `todo` set (the plan tool,
`todo_write`) is asked for by name, so the prompt of a manifest that says `all`
does not change when a tool of another kind is added.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

BUILTIN_TOOL_NAMES = ("read", "write", "edit", "bash", "grep", "find", "ls", "todo_write")

BUILTIN_SETS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "coding": ("read", "bash", "edit", "write"),
        "readonly": ("read", "grep", "find", "ls"),
        "all": ("read", "bash", "edit", "write", "grep", "find", "ls"),
        "todo": ("todo_write",),
    }
)
