"""`validate` for `read` rules: say where they do not reach.

A `read` deny (or ask) rule hides files from `read`, `grep`, `find` and `ls`
(`assembler.permissions.hidden`). Other tools read files their own way: `bash` runs
`cat`, an MCP server or a Python tool reads what it likes. When the agent has such a
tool, and no rule stops it, the rule's author is told, once, at the first `read` rule:
a rule that promises more than it keeps is worse than none.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from assembler.errors import Issue
from assembler.manifest.yaml_source import JsonPath
from assembler.permissions.rules import Rule, Verdict
from assembler.validation.checks import CheckContext
from assembler.validation.tool_checks import active_tool_names


def check_read_reach(
    ctx: CheckContext, parsed: Sequence[tuple[Verdict, int, Rule]]
) -> Iterator[Issue]:
    reads = [
        (verdict, index, rule)
        for verdict, index, rule in parsed
        if verdict in ("deny", "ask")
        and rule.server is None
        and fnmatch.fnmatchcase("read", rule.tool)
    ]
    if not reads:
        return
    names, _ = active_tool_names(ctx.data, ctx.subagent_tools)
    stopped = {
        rule.tool for verdict, _, rule in parsed if verdict == "deny" and rule.pattern is None
    }
    others: list[str] = []
    if "bash" in names and not any(fnmatch.fnmatchcase("bash", t) for t in stopped):
        others.append("`bash` (`cat`, `head`, ...)")
    sets = _sets(ctx.data)
    if any(isinstance(s, dict) and "mcp" in s for s in sets):
        others.append("MCP servers")
    if any(isinstance(s, dict) and "python" in s for s in sets):
        others.append("Python tools")
    if isinstance(ctx.data.get("extensions"), list) and ctx.data["extensions"]:
        others.append("extensions' tools")
    if not others:
        return
    verdict, index, rule = reads[0]
    at: JsonPath = ("permissions", verdict, index)
    yield ctx.issue(
        at,
        f"`{rule.text}` hides files from `read`, `grep`, `find` and `ls` only: "
        f"{_listed(others)} can still read them. Deny those tools, or ask before they run",
        "warning",
    )


def _sets(data: Mapping[str, Any]) -> list[Any]:
    tools = data.get("tools")
    sets = tools.get("sets") if isinstance(tools, dict) else None
    return sets if isinstance(sets, list) else []


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
