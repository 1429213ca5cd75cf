"""Tool names the prompt mentions but no active tool provides.

A prompt that says "use `patch`" while only `edit` exists sends the model after a
tool that is not there: the inconsistent snapshot this project exists to catch. A
back-quoted word counts as a tool mention when it is a well-known tool name (ours
or another agent's) or sits in a phrase that only fits a tool ("call `x`",
"the `x` tool"); plain commands such as `pytest` are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# Tool names agents commonly use; a mention of one that is not active is suspicious.
KNOWN_TOOL_NAMES = frozenset(
    {
        "read", "write", "edit", "bash", "grep", "find", "ls", "remember",
        "patch", "apply_patch", "str_replace", "str_replace_editor", "multi_edit",
        "multiedit", "view", "glob", "web_search", "websearch", "web_fetch", "webfetch",
        "fetch", "read_file", "write_file", "edit_file", "list_dir", "list_directory",
        "run_terminal_cmd", "run_shell_command", "shell", "todo_write", "todowrite",
    }
)  # fmt: skip

_QUOTED = re.compile(r"`([A-Za-z_][A-Za-z0-9_.-]*)`")
_TOOL_PHRASE = re.compile(
    r"(?:\b(?:call|invoke|tool)\s+`(?P<a>[^`]+)`)|(?:`(?P<b>[^`]+)`\s+tool\b)", re.IGNORECASE
)


@dataclass(frozen=True)
class Mention:
    """A tool name written in prompt text, and where."""

    name: str
    offset: int


def tool_mentions(text: str) -> Iterator[Mention]:
    """Back-quoted names in `text` that read as tool names (see module doc)."""
    phrased = {
        match.start(): match.group("a") or match.group("b") for match in _TOOL_PHRASE.finditer(text)
    }
    phrased_names = set(phrased.values())
    for match in _QUOTED.finditer(text):
        name = match.group(1)
        if name.lower() in KNOWN_TOOL_NAMES or name in phrased_names:
            yield Mention(name, match.start())


def line_and_column(text: str, offset: int) -> tuple[int, int]:
    """1-based position of `offset` inside `text`."""
    line = text.count("\n", 0, offset)
    column = offset - (text.rfind("\n", 0, offset) + 1)
    return line, column + 1
