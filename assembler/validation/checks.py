"""What the schema cannot say: the checks that look outside the manifest's text.

Each check reads the raw document defensively (it also runs when the schema found
errors elsewhere, so one run reports every problem) and yields `Issue`s. None of
them imports, starts or connects to anything: paths are stat-ed, Python files are
parsed, entry points are read from package metadata, skills and templates are
parsed as text. `ALL_CHECKS` lists them in the order they run; path and tool checks
live in `validation.paths` and `validation.tool_checks`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from assembler.errors import Issue, ManifestError, PromptContextError, Severity
from assembler.manifest.yaml_source import JsonPath
from assembler.providers.endpoints import BUILTIN_PROVIDERS
from assembler.python_refs import check_source, resolve_definition, resolve_function
from assembler.validation.budget_checks import check_budget
from assembler.validation.context import (
    CheckContext,
    dir_state,
    display,
    fmt,
    is_dir,
    is_file,
    items,
    mapping,
)
from assembler.validation.io_checks import (
    check_output,
    check_parameters,
    check_task,
    declared_parameters,
)
from assembler.validation.paths import (
    check_context_files,
    check_path_names,
    check_workspace,
)
from assembler.validation.tool_checks import (
    active_tool_names,
    check_builtin_allow,
    check_guidelines_without_tools,
    check_tool_mentions,
)

EXTENSION_GROUP = "assembler.extensions"

__all__ = ["ALL_CHECKS", "CheckContext", "active_tool_names", "check_path_names"]


def check_context(ctx: CheckContext) -> Iterator[Issue]:
    """Every value the prompt's canonical JSON would refuse (each NaN, each infinity),
    at its own line."""
    context = ctx.data.get("context")
    if not isinstance(context, dict):
        return
    from assembler.prompt.canonical import context_problems

    for problem in context_problems(context):
        yield ctx.issue(("context", *_parse_json_path(problem.path)), _without_path(problem))


def _without_path(error: PromptContextError) -> str:
    """The message alone: the issue shows the path in its own field."""
    return str(error.args[0]).removesuffix(f" at {error.path}")


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
        options = mapping(raw.get("options"))
        script = raw.get("script") or options.get("script")
        at = ("model", "provider")
    else:
        return
    if provider not in BUILTIN_PROVIDERS:
        known = ", ".join(f"`{p}`" for p in BUILTIN_PROVIDERS)
        if items(ctx.data.get("extensions")):
            yield ctx.issue(
                at,
                f"provider `{provider}` is not built in ({known}); an extension must register it",
                "warning",
            )
        else:
            yield ctx.issue(at, f"unknown provider `{provider}`; known providers: {known}")
    elif isinstance(raw, dict) and "name" not in raw and provider != "scripted":
        # Without it the run would ask the provider for a model named `openai`.
        yield ctx.issue(
            ("model",),
            f"the model needs a `name` (which {provider} model to use), for example "
            f"`{{provider: {provider}, name: {_example_model(provider)}}}`",
        )
    if isinstance(raw, dict):
        yield from _check_tool_choice(ctx, raw.get("tool_choice"))
    if provider == "scripted":
        if not isinstance(script, str) or not script:
            yield ctx.issue(
                at, "the `scripted` provider needs a script: `scripted:<file>` or `script:`"
            )
        elif not is_file(ctx.resolve(script)):
            where = ("model", "script") if isinstance(raw, dict) and "script" in raw else ("model",)
            yield ctx.issue(where, f"script file {script} not found")
        else:
            yield from _script_issues(ctx.resolve(script))


def _script_issues(script: Path) -> Iterator[Issue]:
    """The replay's own problems, at its own lines: what `run` would refuse. A script is
    data (replies), never code, so reading it is within what `validate` may do."""
    from assembler.providers.script_file import check_script

    try:
        check_script(script, display(script))
    except ManifestError as e:
        yield from e.issues


def _check_tool_choice(ctx: CheckContext, choice: Any) -> Iterator[Issue]:
    """`tool_choice: {tool: NAME}` naming no active tool: a warning, and only where the
    names are certain (no extension, MCP server or Python tool may add or rename one)."""
    tool = choice.get("tool") if isinstance(choice, dict) else None
    if not isinstance(tool, str):
        return
    names, open_ended = active_tool_names(ctx.data, ctx.subagent_tools)
    sets = items(mapping(ctx.data.get("tools")).get("sets"))
    if open_ended or any(isinstance(s, dict) and "python" in s for s in sets) or tool in names:
        return
    active = ", ".join(f"`{n}`" for n in sorted(names)) or "none"
    yield ctx.issue(
        ("model", "tool_choice", "tool"),
        f"`tool_choice` names `{tool}`, which is not an active tool (active: {active})",
        "warning",
    )


def _example_model(provider: str) -> str:
    return {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}.get(provider, "NAME")


def check_skills(ctx: CheckContext) -> Iterator[Issue]:
    from assembler.resources.skills import as_skipped, discover_skills

    directories: list[Path] = []
    for index, raw in enumerate(items(ctx.data.get("skills"))):
        if not isinstance(raw, str) or not raw:  # "" would scan the manifest's directory
            continue
        where = ctx.resolve(raw)
        if not is_dir(where):
            yield ctx.issue(("skills", index), f"skill directory {raw} {dir_state(where)}")
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
    # `render` and `run` leave a broken skill out (with a warning) as the resource
    # loader does; `validate` and the SDK keep it an error, for CI.
    yield from as_skipped(issues) if ctx.skill_errors == "warning" else issues


def check_templates(ctx: CheckContext) -> Iterator[Issue]:
    """Each override parses, uses only its section's variables, and renders once with
    sample values (within the render budget) to something that is not empty."""
    from assembler.manifest.loader import read_template_file
    from assembler.prompt.templates import SECTION_VARIABLES

    identity = ctx.data.get("identity")
    parameters = declared_parameters(ctx.data)
    for section, spec in mapping(ctx.data.get("prompt")).items():
        if section not in SECTION_VARIABLES or not isinstance(spec, dict):
            continue
        if isinstance(spec.get("template"), str):
            at: JsonPath = ("prompt", section, "template")
            for line, message, severity in _template_issues(
                section, spec["template"], identity, parameters
            ):
                mark = ctx.source.text_position(at, line, 1)
                yield Issue(ctx.source.file, mark.line, mark.column, severity, message, fmt(at))
        elif isinstance(spec.get("file"), str):
            at = ("prompt", section, "file")
            text, problem = read_template_file(
                ctx.resolve(spec["file"]), (ctx.base, ctx.workspace())
            )
            if text is None:
                yield ctx.issue(at, f"template file {spec['file']} {problem}")
                continue
            shown = display(ctx.resolve(spec["file"]))
            for line, message, severity in _template_issues(section, text, identity, parameters):
                yield Issue(shown, line, 1, severity, message, fmt(at))


def _template_issues(
    section: str, text: str, identity: Any, parameters: Mapping[str, Any]
) -> list[tuple[int, str, Severity]]:
    """(line, message, severity) of every static problem, or else of rendering it once.
    A template that names parameters renders with sample values of them: a failure
    there may be the sample's, so it is a warning."""
    from assembler.prompt.templates import template_problems, used_variables

    problems = template_problems(section, text, list(parameters))
    severity: Severity = "error"
    if not problems:
        # Imported here: the renderer (and the tool registry it draws on) is only
        # needed by a manifest that overrides a template.
        from assembler.prompt.renderer import sample_render
        from assembler.typed.samples import sample_values

        named = {n: s for n, s in parameters.items() if n in used_variables(text)}
        failed = sample_render(
            section, text, identity if isinstance(identity, str) else "", sample_values(named)
        )
        if failed is not None and named:
            severity = "warning"
            failed = replace(
                failed, message=f"{failed.message} (rendered with sample parameter values)"
            )
        problems = [failed] if failed is not None else []
    return [(max(problem.line, 1), problem.message, severity) for problem in problems]


def check_extensions(ctx: CheckContext) -> Iterator[Issue]:
    for index, raw in enumerate(items(ctx.data.get("extensions"))):
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
    for set_index, item in enumerate(items(mapping(ctx.data.get("tools")).get("sets"))):
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
    tools = mapping(ctx.data.get("tools"))
    servers = mapping(tools.get("servers"))
    declared: list[tuple[JsonPath, Mapping[str, Any]]] = [
        (("tools", "servers", name), spec)
        for name, spec in servers.items()
        if isinstance(spec, dict)
    ]
    for index, item in enumerate(items(tools.get("sets"))):
        if isinstance(item, dict) and isinstance(item.get("mcp"), dict):
            declared.append((("tools", "sets", index, "mcp"), item["mcp"]))
        elif isinstance(mapping(item).get("mcp"), str) and item["mcp"] not in servers:
            known = ", ".join(f"`{s}`" for s in servers) or "none are declared"
            yield ctx.issue(
                ("tools", "sets", index, "mcp"),
                f"no MCP server named `{item['mcp']}` under `tools.servers` ({known})",
            )
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
    check_guidelines_without_tools,
    check_parameters,
    check_task,
    check_output,
    check_budget,
)
