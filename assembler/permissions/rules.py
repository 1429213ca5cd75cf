"""The rule language: `TOOL` or `TOOL(PATTERN)`, as written in a manifest.

A rule names a tool (`read`, `git_*`) or an MCP server's tools (`mcp:github/*`,
`mcp:github` meaning all of them), optionally followed by a pattern on the tool's
main argument in parentheses: `bash(git diff *)`, `edit(src/**)`. What the pattern
means depends on the tool it is matched against (a command for `bash`, a
workspace-relative path for the file tools, plain text for other tools), so this
module only splits the rule and checks what can be checked without a tool at hand;
`assembler.permissions.matching` compiles the pattern for a kind of argument.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from assembler.errors import PermissionRuleError

Verdict = Literal["allow", "ask", "deny"]
#: The order in which rule lists are consulted: a deny always wins.
PRECEDENCE: tuple[Verdict, ...] = ("deny", "ask", "allow")

_TOOL = re.compile(r"[A-Za-z_*?][A-Za-z0-9_.*?-]*")
_MCP = re.compile(r"mcp:(?P<server>[A-Za-z0-9_.*?-]+)(?:/(?P<tool>[A-Za-z0-9_.*?-]+))?")


@dataclass(frozen=True)
class Rule:
    """One parsed rule. `tool` is a glob on the tool's name (for an MCP rule, on the
    name the model sees); `server` is set for `mcp:` rules and is a glob on the server
    name; `pattern` is the text inside the parentheses, `None` for a bare rule."""

    text: str
    tool: str
    pattern: str | None = None
    server: str | None = None

    @property
    def names_one_tool(self) -> bool:
        """Whether the tool part is a plain name (no `*`, `?`, no server)."""
        return self.server is None and not any(c in self.tool for c in "*?")


def parse_rule(text: str) -> Rule:
    """Split `text` into its tool and pattern, or raise `PermissionRuleError` with the
    offset (0-based, into `text`) of the first character that is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise PermissionRuleError("a rule is a tool name, optionally with `(pattern)`", text)
    if text != text.strip():
        offset = 0 if text[0].isspace() else len(text.rstrip())
        raise PermissionRuleError("remove the spaces around the rule", text, offset)
    open_at = text.find("(")
    head = text if open_at < 0 else text[:open_at]
    pattern: str | None = None
    if open_at >= 0:
        if not text.endswith(")"):
            raise PermissionRuleError(
                "the pattern must end with `)`, as in `bash(git diff *)`", text, len(text)
            )
        pattern = text[open_at + 1 : -1]
        if not pattern.strip():
            raise PermissionRuleError(
                "empty pattern: write the bare tool name to match every call",
                text,
                open_at + 1,
            )
    if head.startswith("mcp:"):
        match = _MCP.fullmatch(head)
        if match is None:
            bad = _first_bad(head, 4, r"[A-Za-z0-9_.*?/-]")
            raise PermissionRuleError(
                "an MCP rule is `mcp:SERVER/TOOL` (`*` allowed in both)", text, bad
            )
        return Rule(text, match["tool"] or "*", pattern, match["server"])
    if _TOOL.fullmatch(head) is None:
        bad = _first_bad(head, 0, r"[A-Za-z0-9_.*?-]") if head else 0
        raise PermissionRuleError(
            "a tool name is letters, digits, `_`, `.`, `-` (and `*` as a wildcard)",
            text,
            bad,
        )
    return Rule(text, head, pattern)


def _first_bad(head: str, start: int, allowed: str) -> int:
    for index in range(start, len(head)):
        if not re.fullmatch(allowed, head[index]):
            return index
    return min(start, len(head))
