"""`validate` for `permissions`: malformed rules, unknown tools, rules that never match.

- A malformed rule (`bash(git`, `bash('x)`) is an error at the character that is wrong.
- A rule naming a tool no active tool has is a warning with a "did you mean"; when
  MCP servers or extensions may add tools at run time, only near-misses of a known
  name are reported (`Bash` for `bash`), since anything else may be theirs.
- An `mcp:SERVER/...` rule naming no declared server, or a tool name without the
  prefix the server's set puts before its tools, is a warning.
- Rules that can never decide anything are warnings: a path pattern that leaves the
  workspace, an allow (or ask) that a deny (or ask) of the same or a broader pattern
  shadows, a rule listed twice.

Nothing here parses a command line or touches the tools: `validate` runs no code.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from assembler.errors import Issue, PermissionRuleError
from assembler.manifest.yaml_source import JsonPath, format_path
from assembler.permissions.command_patterns import compile_command_pattern
from assembler.permissions.path_patterns import compile_path_pattern
from assembler.permissions.rules import PRECEDENCE, Rule, Verdict, parse_rule
from assembler.tools.builtin.names import BUILTIN_TOOL_NAMES
from assembler.validation.checks import CheckContext, active_tool_names
from assembler.validation.read_rules import check_read_reach


@cache
def _path_tools() -> frozenset[str]:
    # Imported here for start-up cost: `subjects` brings the bash grammar, which a
    # manifest without permissions (most) never needs (`validate`, `render`, issue 21).
    from assembler.permissions.subjects import BUILTIN_MAIN_ARGUMENTS

    return frozenset(n for n, (_, kind, _d) in BUILTIN_MAIN_ARGUMENTS.items() if kind != "command")


def check_permissions(ctx: CheckContext) -> Iterator[Issue]:
    section = ctx.data.get("permissions")
    if not isinstance(section, dict):
        return
    names, open_ended = active_tool_names(ctx.data, ctx.subagent_tools)
    servers = _mcp_servers(ctx.data)
    parsed: list[tuple[Verdict, int, Rule]] = []
    for verdict in PRECEDENCE:
        rules = section.get(verdict)
        for index, text in enumerate(rules if isinstance(rules, list) else []):
            if not isinstance(text, str) or not text:
                continue  # the schema reports it
            at: JsonPath = ("permissions", verdict, index)
            try:
                rule = parse_rule(text)
                if rule.pattern is not None and rule.tool == "bash" and rule.server is None:
                    compile_command_pattern(rule.pattern)
            except PermissionRuleError as e:
                offset = e.offset
                if e.rule != text:  # raised by the pattern: its offsets start after `(`
                    offset += text.find("(") + 1
                yield _at(ctx, at, offset, f"malformed rule `{text}`: {e.reason}")
                continue
            parsed.append((verdict, index, rule))
            yield from _tool_issues(
                ctx, at, rule, names=names, open_ended=open_ended, servers=servers
            )
            yield from _pattern_issues(ctx, at, rule)
    yield from _shadowed(ctx, parsed)
    yield from check_read_reach(ctx, parsed)


def _at(ctx: CheckContext, at: JsonPath, offset: int, message: str) -> Issue:
    mark = ctx.source.text_position(at, 1, offset + 1)
    return Issue(ctx.source.file, mark.line, mark.column, "error", message, format_path(at))


def _tool_issues(
    ctx: CheckContext,
    at: JsonPath,
    rule: Rule,
    *,
    names: set[str],
    open_ended: bool,
    servers: Mapping[str, tuple[str, ...]],
) -> Iterator[Issue]:
    if rule.server is not None:
        yield from _mcp_issues(ctx, at, rule, servers)
        return
    if not rule.names_one_tool or rule.tool in names:
        return
    active = ", ".join(f"`{n}`" for n in sorted(names)) or "none"
    if rule.tool in BUILTIN_TOOL_NAMES:
        yield ctx.issue(
            at,
            f"`{rule.tool}` is a built-in tool this agent does not have (active: {active}); "
            "the rule never applies",
            "warning",
        )
        return
    known = sorted(names | set(BUILTIN_TOOL_NAMES))
    close = difflib.get_close_matches(rule.tool, known, n=1, cutoff=0.6)
    lowered = [n for n in known if n.lower() == rule.tool.lower()]
    hint = (lowered or close)[:1]
    if open_ended and not hint:
        return  # may be an MCP or extension tool, known only at run time
    message = f"no active tool is named `{rule.tool}` (active: {active})"
    if hint:
        message += f"; did you mean `{hint[0]}`?"
    if open_ended:
        message += "; MCP servers or extensions may still add it at run time"
    yield ctx.issue(at, message, "warning")


def _mcp_issues(
    ctx: CheckContext, at: JsonPath, rule: Rule, servers: Mapping[str, tuple[str, ...]]
) -> Iterator[Issue]:
    server = rule.server or ""
    if any(c in server for c in "*?"):
        return
    if server not in servers:
        known = ", ".join(f"`{s}`" for s in sorted(servers)) or "none are used by a tool set"
        yield ctx.issue(at, f"no MCP server named `{server}` ({known})", "warning")
        return
    prefixes = [p for p in servers[server] if p]
    if prefixes and rule.tool != "*" and not any(rule.tool.startswith(p) for p in prefixes):
        shown = " or ".join(f"`{p}`" for p in prefixes)
        yield ctx.issue(
            at,
            f"the tools of `{server}` are named with the prefix {shown}; the rule matches "
            f"names as the model sees them, so write `mcp:{server}/{prefixes[0]}{rule.tool}`",
            "warning",
        )


def _pattern_issues(ctx: CheckContext, at: JsonPath, rule: Rule) -> Iterator[Issue]:
    if rule.pattern is None or rule.tool not in _path_tools() or rule.server is not None:
        return
    never = compile_path_pattern(rule.pattern).never
    if never:
        yield ctx.issue(at, f"`{rule.text}` can never match: {never}", "warning")


def _shadowed(ctx: CheckContext, parsed: list[tuple[Verdict, int, Rule]]) -> Iterator[Issue]:
    """An allow under a deny or ask of the same or a broader pattern never decides;
    nor does an ask under such a deny, nor a rule listed twice."""
    rank = {verdict: position for position, verdict in enumerate(PRECEDENCE)}
    seen: dict[tuple[str, str], int] = {}
    for verdict, index, rule in parsed:
        at: JsonPath = ("permissions", verdict, index)
        key = (verdict, rule.text)
        if key in seen:
            yield ctx.issue(at, f"`{rule.text}` is listed twice in `{verdict}`", "warning")
            continue
        seen[key] = index
        for other_verdict, other_index, other in parsed:
            if rank[other_verdict] < rank[verdict] and _broader(other, rule):
                yield ctx.issue(
                    at,
                    f"`{rule.text}` never applies: `{other.text}` in `{other_verdict}` "
                    f"(permissions.{other_verdict}[{other_index}]) matches the same calls first",
                    "warning",
                )
                break


def _broader(wider: Rule, narrower: Rule) -> bool:
    """Whether `wider` matches every call `narrower` does (a safe under-estimate for
    names; for patterns, tested on the narrower pattern's own text)."""
    if (wider.server, wider.tool) != (narrower.server, narrower.tool) and not (
        wider.server == narrower.server and wider.tool == "*"
    ):
        return False
    if wider.pattern is None:
        return True
    if narrower.pattern is None:
        return False
    if wider.pattern == narrower.pattern:
        return True
    try:
        if narrower.tool == "bash" and narrower.server is None:
            target = " ".join(narrower.pattern.split())
            if target.endswith(":*"):
                target = target[:-2].rstrip() + " *"
            return compile_command_pattern(wider.pattern).matches(target)
        if narrower.tool in _path_tools():
            return compile_path_pattern(wider.pattern).matches(narrower.pattern.removeprefix("./"))
    except PermissionRuleError:
        return False
    return False


def _mcp_servers(data: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Each MCP server a tool set uses, with the prefixes its sets give its tools."""
    tools = data.get("tools") if isinstance(data.get("tools"), dict) else {}
    assert isinstance(tools, dict)
    declared = tools.get("servers") if isinstance(tools.get("servers"), dict) else {}
    assert isinstance(declared, dict)
    found: dict[str, list[str]] = {str(name): [] for name in declared}
    sets = tools.get("sets")
    for index, item in enumerate(sets if isinstance(sets, list) else []):
        if not isinstance(item, dict) or "mcp" not in item:
            continue
        server = item["mcp"] if isinstance(item["mcp"], str) else f"sets[{index}]"
        prefix = item.get("prefix", "")
        found.setdefault(server, []).append(prefix if isinstance(prefix, str) else "")
    return {name: tuple(prefixes) for name, prefixes in found.items()}
