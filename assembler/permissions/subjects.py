"""What a rule's pattern is matched against: a call's main argument, resolved.

- `bash`: the `command`, parsed into simple commands (`assembler.permissions.bash`);
- `read`, `write`, `edit`, `ls`: the `path`, resolved exactly as the tool resolves
  it (`resolve_in_workspace`: `..` and symlinks followed), shown relative to the
  workspace, so `src/../tests/x` and a link into `tests/` are both `tests/...`;
- `grep`, `find`: the `path` too (default `.`), but a directory stands for the whole
  tree below it, since the tool reads all of it;
- any other tool: the argument its `Tool.main_argument` names, else its first
  required string parameter, matched as text.

A main argument that cannot be determined (missing, not a string, a path that does
not resolve inside the workspace) makes `unknown` say why: no pattern matches it,
and the policy never allows such a call without asking when a deny or ask pattern
exists for the tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from assembler.errors import ToolError
from assembler.permissions.bash import CommandLine, parse_command_line
from assembler.tools.builtin.workspace import display_path, resolve_in_workspace

SubjectKind = Literal["command", "path", "tree", "text"]

#: Built-in tool -> (main argument, kind, default value when omitted).
BUILTIN_MAIN_ARGUMENTS: Mapping[str, tuple[str, SubjectKind, str | None]] = {
    "bash": ("command", "command", None),
    "read": ("path", "path", None),
    "write": ("path", "path", None),
    "edit": ("path", "path", None),
    "ls": ("path", "path", "."),
    "grep": ("path", "tree", "."),
    "find": ("path", "tree", "."),
}
FILE_EDIT_TOOLS = frozenset({"write", "edit"})


class ToolLike(Protocol):
    """What the policy reads from a tool (`assembler.tools.base.Tool` fits)."""

    @property
    def name(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def parameters(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Subject:
    """A call's main argument: `value` is the command, the workspace-relative path
    (`.` for the workspace itself) or the text; `line` the parsed command."""

    kind: SubjectKind | None
    value: str | None = None
    line: CommandLine | None = None
    unknown: str = ""


def is_builtin(tool_name: str, tool: ToolLike | None) -> bool:
    return tool_name in BUILTIN_MAIN_ARGUMENTS and (tool is None or tool.source == "builtin")


def main_argument(tool: ToolLike) -> str | None:
    """The argument patterns match for a non-built-in tool: `main_argument` when the
    tool names one, else the first required parameter whose type is string."""
    named = getattr(tool, "main_argument", None)
    if isinstance(named, str) and named:
        return named
    parameters = tool.parameters if isinstance(tool.parameters, Mapping) else {}
    properties = parameters.get("properties")
    required = parameters.get("required")
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return None
    for name in required:
        spec = properties.get(name)
        if isinstance(spec, Mapping) and spec.get("type") == "string":
            return str(name)
    return None


def subject_of(
    tool_name: str,
    arguments: Mapping[str, Any],
    tool: ToolLike | None,
    workspace: Path,
    root: Path | None = None,
) -> Subject:
    """Resolve the main argument of one call (see the module docstring). `root` is
    the workspace with symlinks resolved, when the caller already knows it."""
    default: str | None = None
    if is_builtin(tool_name, tool):
        name, kind, default = BUILTIN_MAIN_ARGUMENTS[tool_name]
    else:
        found = main_argument(tool) if tool is not None else None
        if found is None:
            return Subject(None, unknown=f"`{tool_name}` has no main argument to match")
        name, kind = found, "text"
    raw = arguments.get(name, default) if isinstance(arguments, Mapping) else None
    if not isinstance(raw, str):
        return Subject(kind, unknown=f"the `{name}` argument is missing or not a string")
    if kind == "command":
        return Subject(kind, raw, parse_command_line(raw))
    if kind == "text":
        return Subject(kind, raw)
    try:
        resolved = resolve_in_workspace(workspace, raw)
        shown = _relative(resolved, root) if root is not None else display_path(workspace, resolved)
        tree = kind == "tree" and resolved.is_dir()
    except (ToolError, OSError) as exc:
        return Subject(kind, unknown=f"the path cannot be checked: {exc}")
    return Subject("tree" if tree else "path", shown)


def _relative(resolved: Path, root: Path) -> str:
    """`display_path` without resolving the workspace again (`resolved` is inside it)."""
    return "." if resolved == root else resolved.relative_to(root).as_posix()
