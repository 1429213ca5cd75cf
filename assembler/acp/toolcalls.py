"""How a tool call looks to an editor: its kind, title, the files it touches, and
the diff an edit makes.

An editor draws a tool call from these fields alone: `kind` picks the icon and the
treatment (read, edit, execute, search, think, other), `title` is the line the user
reads, `locations` are the absolute paths it touches (an editor follows along, opens
them on click), and an edit's `diff` content shows the change, also while the editor
asks whether to allow it. Only the built-in tools' arguments are known well enough to
name files; any other tool is `other` (a sub-agent is `think`), titled with its name
and its main argument.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp import text_block, tool_content, tool_diff_content
from acp.helpers import ToolCallContentVariant
from acp.schema import ToolCallLocation, ToolKind

from assembler.messages import ToolCall
from assembler.permissions.subjects import main_argument
from assembler.text import one_line
from assembler.tools.base import Tool

_BUILTIN_KINDS: Mapping[str, ToolKind] = {
    "read": "read",
    "write": "edit",
    "edit": "edit",
    "bash": "execute",
    "grep": "search",
    "find": "search",
    "ls": "search",
}

_TITLE_LIMIT = 80


@dataclass(frozen=True)
class CallView:
    """A tool call as the editor shows it."""

    title: str
    kind: ToolKind
    locations: tuple[ToolCallLocation, ...] = ()
    diff: tuple[ToolCallContentVariant, ...] = ()


def describe(call: ToolCall, tool: Tool | None, workspace: Path, *, prefix: str = "") -> CallView:
    """The view of `call`; `tool` is the registered tool of that name (None when it is
    gone, as in an old session), `prefix` names a sub-agent (`reviewer: `)."""
    arguments = call.arguments or {}
    source = tool.source if tool is not None else "builtin"
    if source == "builtin" and call.name in _BUILTIN_KINDS:
        title, locations, diff = _builtin(call.name, arguments, workspace)
        return CallView(prefix + title, _BUILTIN_KINDS[call.name], locations, diff)
    kind: ToolKind = "think" if source.startswith("agent:") else "other"
    argument = main_argument(tool) if tool is not None else None
    value = arguments.get(argument) if argument else None
    shown = f"{call.name}: {one_line(value, _TITLE_LIMIT)}" if isinstance(value, str) else call.name
    return CallView(prefix + shown, kind)


def result_locations(
    view: CallView, details: Mapping[str, Any], workspace: Path
) -> tuple[ToolCallLocation, ...]:
    """The locations once the call is done: a read or an edit knows its line."""
    path = details.get("path")
    line = details.get("line", details.get("first_line"))
    if isinstance(path, str) and isinstance(line, int) and not isinstance(line, bool):
        return (ToolCallLocation(path=absolute(workspace, path), line=row(line)),)
    return view.locations


def result_content(view: CallView, text: str, executed: bool) -> list[ToolCallContentVariant]:
    """What the editor shows under a finished call: the diff of an edit that ran, then
    the text the model got back."""
    content = list(view.diff) if executed else []
    if text:
        content.append(tool_content(text_block(text)))
    return content


def absolute(workspace: Path, path: str) -> str:
    """A path as a tool argument gives it (relative to the workspace, or absolute),
    made absolute as the protocol requires; `..` is folded, links are not followed."""
    return os.path.normpath(os.path.join(workspace, path))


def row(line: int) -> int:
    """A tool's 1-based line as a location's line, which editors take as a 0-based row
    (the protocol does not say; Zed moves its cursor to that row)."""
    return max(line - 1, 0)


def _builtin(
    name: str, arguments: Mapping[str, Any], workspace: Path
) -> tuple[str, tuple[ToolCallLocation, ...], tuple[ToolCallContentVariant, ...]]:
    path = arguments.get("path")
    given = isinstance(path, str) and bool(path)
    shown = path if isinstance(path, str) and path else "."
    locations = (ToolCallLocation(path=absolute(workspace, shown)),) if given else ()
    pattern = _text(arguments.get("pattern"))
    if name == "read":
        offset = arguments.get("offset")
        if given and isinstance(offset, int) and not isinstance(offset, bool) and offset > 0:
            locations = (ToolCallLocation(path=absolute(workspace, shown), line=row(offset)),)
        return f"Read {shown}", locations, ()
    if name == "bash":
        return f"Run `{_text(arguments.get('command'))}`", (), ()
    if name == "grep":
        return f"Search `{pattern}` in {shown}", locations, ()
    if name == "find":
        return f"Find `{pattern}` in {shown}", locations, ()
    if name == "ls":
        return f"List {shown}", locations, ()
    where = absolute(workspace, shown)
    if name == "write":
        content = arguments.get("content")
        diff = (tool_diff_content(where, content),) if given and isinstance(content, str) else ()
        return f"Write {shown}", locations, diff
    old, new = arguments.get("old_text"), arguments.get("new_text")
    edit = given and isinstance(old, str) and isinstance(new, str)
    diff = (tool_diff_content(where, str(new), str(old)),) if edit else ()
    return f"Edit {shown}", locations, diff


def _text(value: object) -> str:
    return one_line(value, _TITLE_LIMIT) if isinstance(value, str) else ""
