"""Checks about tools: `allow` lists name members of their set, and the prompt
mentions only tools the agent has (see `validation.mentions`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from assembler.errors import Issue
from assembler.manifest.yaml_source import JsonPath, SourceMap
from assembler.validation.context import CheckContext, display, fmt, items, mapping
from assembler.validation.mentions import line_and_column, tool_mentions


def check_builtin_allow(ctx: CheckContext) -> Iterator[Issue]:
    """Every name in a built-in set's `allow` must belong to the set: a typo there
    would silently leave the agent without that tool."""
    from assembler.tools.builtin.names import BUILTIN_SETS

    for index, item in enumerate(items(mapping(ctx.data.get("tools")).get("sets"))):
        if (
            not isinstance(item, dict)
            or "builtin" not in item
            or not isinstance(item.get("allow"), list)
        ):
            continue
        raw = item["builtin"]
        names = raw if isinstance(raw, list) else [raw]
        members = [m for n in names if isinstance(n, str) for m in BUILTIN_SETS.get(n, (n,))]
        for position, allowed in enumerate(item["allow"]):
            if isinstance(allowed, str) and allowed not in members:
                import difflib  # here for start-up cost: only a wrong name needs a hint

                hint = difflib.get_close_matches(allowed, members, n=1, cutoff=0.6)
                suggestion = f"; did you mean `{hint[0]}`?" if hint else ""
                yield ctx.issue(
                    ("tools", "sets", index, "allow", position),
                    f"`{allowed}` is not in this set (it has {', '.join(f'`{m}`' for m in members)})"
                    + suggestion,
                )


def active_tool_names(
    data: Mapping[str, Any], subagents: Sequence[str] = ()
) -> tuple[set[str], bool]:
    """The tool names a manifest makes active (with its `subagents`' tool names), and
    whether more may come at run time (MCP servers and extensions add tools only known
    once they run).

    Only names that really become tools count: a misspelled built-in name
    (`builtin: [read, red]`) is an error of its own, not an active tool, and an entry
    of the wrong type (`[[read]]`, `null`) is skipped, since the schema reports it.
    """
    from assembler.tools.builtin.names import BUILTIN_SETS, BUILTIN_TOOL_NAMES

    def expand(raw: Any) -> set[str]:
        names = raw if isinstance(raw, list) else [raw]
        return {
            member
            for name in names
            if isinstance(name, str)
            for member in BUILTIN_SETS.get(name, (name,))
            if member in BUILTIN_TOOL_NAMES
        }

    tools = mapping(data.get("tools"))
    sets = tools.get("sets", ["coding"]) if "tools" in data else ["coding"]
    names: set[str] = set(subagents)
    open_ended = bool(items(data.get("extensions")))
    for item in items(sets):
        if isinstance(item, str):
            names.update(expand(item))
        elif isinstance(item, dict) and "builtin" in item:
            expanded = expand(item["builtin"])
            allow = item.get("allow")
            if isinstance(allow, list):
                expanded &= {name for name in allow if isinstance(name, str)}
            names.update(expanded)
        elif isinstance(item, dict) and "python" in item:
            entries = item["python"] if isinstance(item["python"], list) else [item["python"]]
            for entry in entries:
                if isinstance(entry, dict):
                    name = entry.get("name") or str(entry.get("function", "")).rpartition(":")[2]
                    if isinstance(name, str) and name:
                        names.add(name)
                elif isinstance(entry, str) and ":" in entry:
                    names.add(entry.rpartition(":")[2])
        elif isinstance(item, dict) and "mcp" in item:
            open_ended = True
    memory = mapping(data.get("memory"))
    if "memory" in data and mapping(memory.get("extraction")).get("tool", True):
        names.add("remember")
    return names, open_ended


def check_tool_mentions(ctx: CheckContext) -> Iterator[Issue]:
    names, open_ended = active_tool_names(ctx.data, ctx.subagent_tools)
    active = ", ".join(f"`{n}`" for n in sorted(names)) or "none"
    later = "; MCP servers or extensions may still add it at run time" if open_ended else ""

    def report(
        text: str, at: JsonPath, position: Callable[[int, int], tuple[str, int, int]]
    ) -> Iterator[Issue]:
        for mention in tool_mentions(text):
            if mention.name in names:
                continue
            line, column = line_and_column(text, mention.offset)
            file, abs_line, abs_column = position(line + 1, column)
            yield Issue(
                file,
                abs_line,
                abs_column,
                "warning",
                f"mentions tool `{mention.name}`, but no active tool has that name"
                f" (active: {active}){later}",
                fmt(at),
            )

    def in_manifest(at: JsonPath) -> Callable[[int, int], tuple[str, int, int]]:
        def position(line: int, column: int) -> tuple[str, int, int]:
            mark = ctx.source.text_position(at, line, column)
            return ctx.source.file, mark.line, mark.column

        return position

    identity = ctx.data.get("identity")
    if isinstance(identity, str):
        yield from report(identity, ("identity",), in_manifest(("identity",)))
    tools = mapping(ctx.data.get("tools"))
    guideline_lists: list[tuple[JsonPath, Any]] = [
        (("tools", "guidelines"), tools.get("guidelines"))
    ]
    for index, item in enumerate(items(tools.get("sets"))):
        if isinstance(item, dict):
            guideline_lists.append((("tools", "sets", index, "guidelines"), item.get("guidelines")))
    for at, lines in guideline_lists:
        for index, text in enumerate(items(lines)):
            if isinstance(text, str):
                yield from report(text, (*at, index), in_manifest((*at, index)))
    for skill in ctx.skills:
        text, source = _skill_description(skill)

        def in_skill(line: int, column: int, source: SourceMap = source) -> tuple[str, int, int]:
            mark = source.text_position(("description",), line, column)
            return source.file, mark.line, mark.column

        yield from report(text, ("description",), in_skill)


def _skill_description(skill: Any) -> tuple[str, SourceMap]:
    """A skill's description as written in its `SKILL.md`, with positions there
    (the frontmatter is read again: `Skill` keeps no positions)."""
    from assembler.errors import ManifestError
    from assembler.manifest.yaml_source import load_yaml_text
    from assembler.resources.skills import _read_frontmatter

    shown = display(skill.path)
    try:
        document = load_yaml_text(_read_frontmatter(skill.path, shown), shown, line_offset=1)
    except ManifestError:
        return skill.description, SourceMap(shown)
    raw = document.data.get("description") if isinstance(document.data, dict) else None
    if not isinstance(raw, str):
        return skill.description, SourceMap(shown)
    return raw, document.source


def check_guidelines_without_tools(ctx: CheckContext) -> Iterator[Issue]:
    """Guidelines of an agent without tools never reach the prompt (its tools section
    reads `(none)`); say so rather than drop them silently."""
    names, open_ended = active_tool_names(ctx.data, ctx.subagent_tools)
    if names or open_ended:
        return
    tools = mapping(ctx.data.get("tools"))
    places: list[tuple[JsonPath, Any]] = [(("tools", "guidelines"), tools.get("guidelines"))]
    places += [
        (("tools", "sets", i, "guidelines"), mapping(item).get("guidelines"))
        for i, item in enumerate(items(tools.get("sets")))
    ]
    for at, lines in places:
        if items(lines):
            yield ctx.issue(
                at,
                "the agent has no tools, so these guidelines are not shown (the prompt's "
                "tools section reads `(none)`)",
                "warning",
            )
