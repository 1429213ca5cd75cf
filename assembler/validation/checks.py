"""What the schema cannot say: the checks that look outside the manifest's text.

Each check reads the raw document defensively (it also runs when the schema found
errors elsewhere, so one run reports every problem) and yields `Issue`s. None of
them imports, starts or connects to anything: paths are stat-ed, Python files are
parsed, entry points are read from package metadata, skills and templates are
parsed as text.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assembler.errors import Issue, PromptContextError
from assembler.manifest.yaml_source import JsonPath, SourceMap
from assembler.python_refs import check_source, resolve_definition, resolve_function
from assembler.validation.mentions import line_and_column, tool_mentions

BUILTIN_PROVIDERS = ("openai", "anthropic", "scripted")
EXTENSION_GROUP = "assembler.extensions"


@dataclass
class CheckContext:
    """What every check needs: the document, where it lives, and how strict to be."""

    path: Path
    data: Mapping[str, Any]
    source: SourceMap
    skills_profile: str = "lenient"
    explicit_skills: Sequence[Path] = ()
    skills: tuple[Any, ...] = field(default=())

    @property
    def base(self) -> Path:
        return self.path.parent

    def issue(self, path: JsonPath, message: str, severity: str = "error") -> Issue:
        return self.source.issue(path, message, severity=severity)

    def resolve(self, relative: str) -> Path:
        return Path(os.path.normpath(self.base / os.path.expanduser(relative)))

    def workspace(self) -> Path:
        raw = self.data.get("workspace", ".")
        return self.resolve(raw if isinstance(raw, str) else ".")

    def python_roots(self) -> list[Path]:
        return [root for root in (self.base, self.workspace()) if is_dir(root)]


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def is_dir(path: Path) -> bool:
    """`Path.is_dir` that answers False where Python 3.11 raises (a name too long)."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def exists(path: Path) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def _state(path: Path) -> str:
    return "is not a directory" if exists(path) else "does not exist"


#: What POSIX file systems allow: a name (one path component) of at most 255 bytes,
#: a whole path of at most 4,096. Longer ones fail every system call with an error.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4096


def path_fields(data: Mapping[str, Any]) -> Iterator[tuple[JsonPath, str]]:
    """Every manifest value that names a file or directory, with its JSON path."""
    for key in ("workspace",):
        if isinstance(data.get(key), str):
            yield (key,), data[key]
    for key in ("skills", "context_files"):
        for index, value in enumerate(_items(data.get(key))):
            if isinstance(value, str):
                yield (key, index), value
    for index, extension in enumerate(_items(data.get("extensions"))):
        if isinstance(_mapping(extension).get("path"), str):
            yield ("extensions", index, "path"), extension["path"]
    model = data.get("model")
    if isinstance(model, str) and model.startswith("scripted:"):
        yield ("model",), model.partition(":")[2]
    script = _mapping(model).get("script")
    if isinstance(script, str):
        yield ("model", "script"), script
    for section, spec in _mapping(data.get("prompt")).items():
        if isinstance(_mapping(spec).get("file"), str):
            yield ("prompt", section, "file"), spec["file"]
    if isinstance(_mapping(data.get("memory")).get("store"), str):
        yield ("memory", "store"), data["memory"]["store"]
    tools = _mapping(data.get("tools"))
    servers: list[tuple[JsonPath, Any]] = [
        (("tools", "servers", n), v) for n, v in _mapping(tools.get("servers")).items()
    ]
    servers += [
        (("tools", "sets", i, "mcp"), item["mcp"])
        for i, item in enumerate(_items(tools.get("sets")))
        if isinstance(_mapping(item).get("mcp"), dict)
    ]
    for at, server in servers:
        for key in ("cwd", "command"):
            if isinstance(_mapping(server).get(key), str):
                yield (*at, key), server[key]


def check_path_names(ctx: CheckContext) -> Iterator[Issue]:
    """A name longer than the file system allows is reported once, here, at its field;
    the checks after this one skip that field (every stat of it would fail)."""
    for at, value in path_fields(ctx.data):
        encoded = [part.encode("utf-8", "surrogatepass") for part in value.split("/")]
        longest = max(encoded, key=len)
        if len(longest) > MAX_NAME_BYTES:
            shown = longest.decode("utf-8", "replace")
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            yield ctx.issue(
                at,
                f"the name `{shown}` is {len(longest):,} bytes long; file systems allow "
                f"at most {MAX_NAME_BYTES} bytes per name",
            )
        elif sum(map(len, encoded)) + len(encoded) > MAX_PATH_BYTES:
            yield ctx.issue(at, f"the path is longer than {MAX_PATH_BYTES:,} bytes")


def check_workspace(ctx: CheckContext) -> Iterator[Issue]:
    raw = ctx.data.get("workspace")
    where = ctx.workspace()
    if not is_dir(where):
        yield ctx.issue(("workspace",) if raw else (), f"workspace {where} {_state(where)}")
        return
    # A workspace is where the file tools may write and `bash` runs: the whole disk or
    # the home directory is almost surely a mistake (`workspace: /`, `~`).
    resolved = Path(os.path.realpath(where))
    home = Path(os.path.realpath(os.path.expanduser("~")))
    if resolved == Path(resolved.anchor) or resolved == home:
        what = "the root directory" if resolved == Path(resolved.anchor) else "your home directory"
        yield ctx.issue(
            ("workspace",) if raw else (),
            f"the workspace is {what} ({resolved}): the file tools could then read and change "
            "every file in it; point `workspace` at the project",
            "warning",
        )


def check_context(ctx: CheckContext) -> Iterator[Issue]:
    context = ctx.data.get("context")
    if not isinstance(context, dict):
        return
    from assembler.prompt.canonical import canonical_json

    try:
        canonical_json(context)
    except PromptContextError as e:
        yield ctx.issue(("context", *_parse_json_path(e.path)), str(e.args[0]).rsplit(" at ", 1)[0])


_PATH_PART = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]')


def _parse_json_path(path: str) -> JsonPath:
    """`$.a["b c"][2]` -> ("a", "b c", 2), as `canonical_json` reports paths."""
    parts: list[str | int] = []
    for match in _PATH_PART.finditer(path.removeprefix("$")):
        name, index, quoted = match.groups()
        if name is not None:
            parts.append(name)
        elif index is not None:
            parts.append(int(index))
        else:
            parts.append(quoted.encode().decode("unicode_escape"))
    return tuple(parts)


def check_model(ctx: CheckContext) -> Iterator[Issue]:
    raw = ctx.data.get("model")
    if isinstance(raw, str) and ":" in raw:
        provider, name = raw.split(":", 1)
        script = name if provider == "scripted" else None
        options: Mapping[str, Any] = {}
        at: JsonPath = ("model",)
    elif isinstance(raw, dict) and isinstance(raw.get("provider"), str):
        provider = raw["provider"]
        options = _mapping(raw.get("options"))
        script = raw.get("script") or options.get("script")
        at = ("model", "provider")
    else:
        return
    if provider not in BUILTIN_PROVIDERS:
        known = ", ".join(f"`{p}`" for p in BUILTIN_PROVIDERS)
        if _items(ctx.data.get("extensions")):
            yield ctx.issue(
                at,
                f"provider `{provider}` is not built in ({known}); an extension must register it",
                "warning",
            )
        else:
            yield ctx.issue(at, f"unknown provider `{provider}`; known providers: {known}")
    if provider == "scripted":
        if not isinstance(script, str) or not script:
            yield ctx.issue(
                at, "the `scripted` provider needs a script: `scripted:<file>` or `script:`"
            )
        elif not is_file(ctx.resolve(script)):
            where = ("model", "script") if isinstance(raw, dict) and "script" in raw else ("model",)
            yield ctx.issue(where, f"script file {script} not found")


def check_skills(ctx: CheckContext) -> Iterator[Issue]:
    from assembler.resources.skills import discover_skills

    directories: list[Path] = []
    for index, raw in enumerate(_items(ctx.data.get("skills"))):
        if not isinstance(raw, str) or not raw:  # "" would scan the manifest's directory
            continue
        where = ctx.resolve(raw)
        if not is_dir(where):
            yield ctx.issue(("skills", index), f"skill directory {raw} {_state(where)}")
            continue
        directories.append(where)
    if not directories and not ctx.explicit_skills:
        return
    skills, issues = discover_skills(
        directories,
        profile=ctx.skills_profile,
        explicit=ctx.explicit_skills,
        display_root=Path.cwd(),
    )
    ctx.skills = tuple(skills)
    yield from issues


def check_templates(ctx: CheckContext) -> Iterator[Issue]:
    """Each override parses, uses only its section's variables, and renders once with
    sample values (within the render budget) to something that is not empty."""
    from assembler.manifest.loader import read_template_file
    from assembler.prompt.templates import SECTION_VARIABLES

    identity = ctx.data.get("identity")
    for section, spec in _mapping(ctx.data.get("prompt")).items():
        if section not in SECTION_VARIABLES or not isinstance(spec, dict):
            continue
        if isinstance(spec.get("template"), str):
            at: JsonPath = ("prompt", section, "template")
            for line, message in _template_issues(section, spec["template"], identity):
                mark = ctx.source.text_position(at, line, 1)
                yield Issue(ctx.source.file, mark.line, mark.column, "error", message, _fmt(at))
        elif isinstance(spec.get("file"), str):
            at = ("prompt", section, "file")
            text, problem = read_template_file(
                ctx.resolve(spec["file"]), (ctx.base, ctx.workspace())
            )
            if text is None:
                yield ctx.issue(at, f"template file {spec['file']} {problem}")
                continue
            shown = _display(ctx.resolve(spec["file"]))
            for line, message in _template_issues(section, text, identity):
                yield Issue(shown, line, 1, "error", message, _fmt(at))


def _template_issues(section: str, text: str, identity: Any) -> list[tuple[int, str]]:
    """(line, message) of every static problem, or else of rendering it once."""
    from assembler.prompt.templates import template_problems

    problems = template_problems(section, text)
    if not problems:
        # Imported here: the renderer (and the tool registry it draws on) is only
        # needed by a manifest that overrides a template.
        from assembler.prompt.renderer import sample_render

        failed = sample_render(section, text, identity if isinstance(identity, str) else "")
        problems = [failed] if failed is not None else []
    return [(max(problem.line, 1), problem.message) for problem in problems]


def check_builtin_allow(ctx: CheckContext) -> Iterator[Issue]:
    """Every name in a built-in set's `allow` must belong to the set: a typo there
    would silently leave the agent without that tool."""
    import difflib

    from assembler.tools.builtin.names import BUILTIN_SETS

    for index, item in enumerate(_items(_mapping(ctx.data.get("tools")).get("sets"))):
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
                hint = difflib.get_close_matches(allowed, members, n=1, cutoff=0.6)
                suggestion = f"; did you mean `{hint[0]}`?" if hint else ""
                yield ctx.issue(
                    ("tools", "sets", index, "allow", position),
                    f"`{allowed}` is not in this set (it has {', '.join(f'`{m}`' for m in members)})"
                    + suggestion,
                )


def check_extensions(ctx: CheckContext) -> Iterator[Issue]:
    for index, raw in enumerate(_items(ctx.data.get("extensions"))):
        if not isinstance(raw, dict):
            continue
        if isinstance(raw.get("path"), str):
            at: JsonPath = ("extensions", index, "path")
            file = ctx.resolve(raw["path"])
            if not is_file(file):
                yield ctx.issue(at, f"extension file {raw['path']} not found")
                continue
            found = check_source(file, "setup", file.stem, allow_async=False)
            yield from _resolution_issues(ctx, at, found.problem, found.uncertain)
        elif isinstance(raw.get("module"), str):
            at = ("extensions", index, "module")
            found = resolve_definition(
                raw["module"], "setup", ctx.python_roots(), allow_async=False
            )
            yield from _resolution_issues(ctx, at, found.problem, found.uncertain)
        elif isinstance(raw.get("entry_point"), str):
            at = ("extensions", index, "entry_point")
            names = _entry_point_names()
            if raw["entry_point"] not in names:
                known = ", ".join(f"`{n}`" for n in sorted(names)) or "none are installed"
                yield ctx.issue(
                    at,
                    f"no `{EXTENSION_GROUP}` entry point named `{raw['entry_point']}` ({known})",
                )


def _entry_point_names() -> set[str]:
    from importlib.metadata import entry_points

    return {ep.name for ep in entry_points(group=EXTENSION_GROUP)}


def check_python_tools(ctx: CheckContext) -> Iterator[Issue]:
    for set_index, item in enumerate(_items(_mapping(ctx.data.get("tools")).get("sets"))):
        if not isinstance(item, dict) or "python" not in item:
            continue
        entries = item["python"]
        many = isinstance(entries, list)
        for index, entry in enumerate(entries if many else [entries]):
            at: JsonPath = ("tools", "sets", set_index, "python", *((index,) if many else ()))
            reference = entry.get("function") if isinstance(entry, dict) else entry
            if isinstance(entry, dict):
                at = (*at, "function")
            if not isinstance(reference, str) or ":" not in reference:
                continue
            found = resolve_function(reference, ctx.python_roots())
            yield from _resolution_issues(ctx, at, found.problem, found.uncertain)


def _resolution_issues(
    ctx: CheckContext, at: JsonPath, problem: str, uncertain: str
) -> Iterator[Issue]:
    if problem:
        yield ctx.issue(at, problem)
    elif uncertain:
        yield ctx.issue(at, uncertain, "warning")


def check_mcp(ctx: CheckContext) -> Iterator[Issue]:
    tools = _mapping(ctx.data.get("tools"))
    servers = _mapping(tools.get("servers"))
    declared: list[tuple[JsonPath, Mapping[str, Any]]] = [
        (("tools", "servers", name), spec)
        for name, spec in servers.items()
        if isinstance(spec, dict)
    ]
    for index, item in enumerate(_items(tools.get("sets"))):
        if isinstance(item, dict) and isinstance(item.get("mcp"), dict):
            declared.append((("tools", "sets", index, "mcp"), item["mcp"]))
    for at, spec in declared:
        command = spec.get("command")
        if (
            isinstance(command, str)
            and "${" not in command
            and shutil.which(command) is None
            and not (os.sep in command and is_file(ctx.resolve(command)))
        ):
            yield ctx.issue((*at, "command"), f"command `{command}` not found on PATH", "warning")
        cwd = spec.get("cwd")
        if isinstance(cwd, str) and not is_dir(ctx.resolve(cwd)):
            yield ctx.issue((*at, "cwd"), f"directory {cwd} does not exist")


def check_context_files(ctx: CheckContext) -> Iterator[Issue]:
    """Declared context files exist; a link that cannot be followed (a loop) is
    reported even for the default `AGENTS.md`, since `render` and `run` skip it."""
    workspace = ctx.workspace()
    declared = "context_files" in ctx.data
    names = _items(ctx.data.get("context_files")) if declared else ["AGENTS.md"]
    for index, name in enumerate(names):
        if not isinstance(name, str):
            continue
        at: JsonPath = (
            ("context_files", index)
            if declared
            else ("workspace",)
            if "workspace" in ctx.data
            else ()
        )
        path = workspace / name
        if is_file(path):
            continue
        if os.path.islink(path):
            yield ctx.issue(
                at,
                f"context file {name} is a symbolic link that cannot be followed (a loop, or "
                "a missing target); it is skipped",
                "warning",
            )
        elif declared:
            state = "is not a regular file" if exists(path) else "not found in the workspace"
            yield ctx.issue(at, f"context file {name} {state}", "warning")


def active_tool_names(data: Mapping[str, Any]) -> tuple[set[str], bool]:
    """The tool names a manifest makes active, and whether more may come at run time
    (MCP servers and extensions add tools only known once they run).

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

    tools = _mapping(data.get("tools"))
    sets = tools.get("sets", ["coding"]) if "tools" in data else ["coding"]
    names: set[str] = set()
    open_ended = bool(_items(data.get("extensions")))
    for item in _items(sets):
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
    memory = _mapping(data.get("memory"))
    if "memory" in data and _mapping(memory.get("extraction")).get("tool", True):
        names.add("remember")
    return names, open_ended


def check_tool_mentions(ctx: CheckContext) -> Iterator[Issue]:
    names, open_ended = active_tool_names(ctx.data)
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
                _fmt(at),
            )

    def in_manifest(at: JsonPath) -> Callable[[int, int], tuple[str, int, int]]:
        def position(line: int, column: int) -> tuple[str, int, int]:
            mark = ctx.source.text_position(at, line, column)
            return ctx.source.file, mark.line, mark.column

        return position

    identity = ctx.data.get("identity")
    if isinstance(identity, str):
        yield from report(identity, ("identity",), in_manifest(("identity",)))
    tools = _mapping(ctx.data.get("tools"))
    guideline_lists: list[tuple[JsonPath, Any]] = [
        (("tools", "guidelines"), tools.get("guidelines"))
    ]
    for index, item in enumerate(_items(tools.get("sets"))):
        if isinstance(item, dict):
            guideline_lists.append((("tools", "sets", index, "guidelines"), item.get("guidelines")))
    for at, lines in guideline_lists:
        for index, text in enumerate(_items(lines)):
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

    shown = _display(skill.path)
    try:
        document = load_yaml_text(_read_frontmatter(skill.path, shown), shown, line_offset=1)
    except ManifestError:
        return skill.description, SourceMap(shown)
    raw = document.data.get("description") if isinstance(document.data, dict) else None
    if not isinstance(raw, str):
        return skill.description, SourceMap(shown)
    return raw, document.source


def _fmt(path: JsonPath) -> str:
    from assembler.manifest.yaml_source import format_path

    return format_path(path)


def _display(path: Path) -> str:
    """A path as users want to read it: relative to the current directory if inside."""
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except (ValueError, OSError):
        return str(path)


ALL_CHECKS: tuple[Callable[[CheckContext], Iterator[Issue]], ...] = (
    check_path_names,
    check_workspace,
    check_context,
    check_model,
    check_skills,
    check_templates,
    check_extensions,
    check_python_tools,
    check_builtin_allow,
    check_mcp,
    check_context_files,
    check_tool_mentions,
)
