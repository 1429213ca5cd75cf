"""Checks of the paths a manifest names: names the file system can take, the
workspace, and the project context files.

A name over 255 bytes fails every system call, so it is reported once, at its field,
and the later checks skip that field (`validator.validate_file`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from assembler.errors import Issue
from assembler.manifest.model import Limits
from assembler.manifest.yaml_source import JsonPath
from assembler.validation.context import (
    CheckContext,
    dir_state,
    exists,
    is_dir,
    is_file,
    items,
    mapping,
)

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
        for index, value in enumerate(items(data.get(key))):
            if isinstance(value, str):
                yield (key, index), value
    for index, extension in enumerate(items(data.get("extensions"))):
        if isinstance(mapping(extension).get("path"), str):
            yield ("extensions", index, "path"), extension["path"]
    model = data.get("model")
    if isinstance(model, str) and model.startswith("scripted:"):
        yield ("model",), model.partition(":")[2]
    script = mapping(model).get("script")
    if isinstance(script, str):
        yield ("model", "script"), script
    for section, spec in mapping(data.get("prompt")).items():
        if isinstance(mapping(spec).get("file"), str):
            yield ("prompt", section, "file"), spec["file"]
    if isinstance(mapping(data.get("memory")).get("store"), str):
        yield ("memory", "store"), data["memory"]["store"]
    tools = mapping(data.get("tools"))
    servers: list[tuple[JsonPath, Any]] = [
        (("tools", "servers", n), v) for n, v in mapping(tools.get("servers")).items()
    ]
    servers += [
        (("tools", "sets", i, "mcp"), item["mcp"])
        for i, item in enumerate(items(tools.get("sets")))
        if isinstance(mapping(item).get("mcp"), dict)
    ]
    for at, server in servers:
        for key in ("cwd", "command"):
            if isinstance(mapping(server).get(key), str):
                yield (*at, key), server[key]


def check_path_names(ctx: CheckContext) -> Iterator[Issue]:
    """A name longer than the file system allows is reported once, here, at its field;
    the checks after this one skip that field (every stat of it would fail)."""
    for at, value in path_fields(ctx.data):
        problem = path_name_problem(value)
        if problem is not None:
            yield ctx.issue(at, problem)


def path_name_problem(value: str) -> str | None:
    """Why the file system cannot take the path `value` (a name over 255 bytes, a path
    over 4,096), or None. Eval files use it too."""
    encoded = [part.encode("utf-8", "surrogatepass") for part in value.split("/")]
    longest = max(encoded, key=len)
    if len(longest) > MAX_NAME_BYTES:
        shown = longest.decode("utf-8", "replace")
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return (
            f"the name `{shown}` is {len(longest):,} bytes long; file systems allow "
            f"at most {MAX_NAME_BYTES} bytes per name"
        )
    if sum(map(len, encoded)) + len(encoded) > MAX_PATH_BYTES:
        return f"the path is longer than {MAX_PATH_BYTES:,} bytes"
    return None


def check_workspace(ctx: CheckContext) -> Iterator[Issue]:
    raw = ctx.data.get("workspace")
    where = ctx.workspace()
    if not is_dir(where):
        yield ctx.issue(("workspace",) if raw else (), f"workspace {where} {dir_state(where)}")
        return
    broad = broad_workspace(where)
    if broad is not None:
        yield ctx.issue(("workspace",) if raw else (), broad, "warning")


def broad_workspace(where: Path) -> str | None:
    """The warning for a workspace that is the whole disk or the home directory, or None.

    A workspace is where the file tools may write and `bash` runs: either is almost
    surely a mistake (`workspace: /`, `~`). Eval files warn the same way."""
    resolved = Path(os.path.realpath(where))
    home = Path(os.path.realpath(os.path.expanduser("~")))
    if resolved != Path(resolved.anchor) and resolved != home:
        return None
    what = "the root directory" if resolved == Path(resolved.anchor) else "your home directory"
    return (
        f"the workspace is {what} ({resolved}): the file tools could then read and change "
        "every file in it; point `workspace` at the project"
    )


def check_context_files(ctx: CheckContext) -> Iterator[Issue]:
    """What `render` and `run` would do other than show a context file whole: skip
    it (missing, outside the workspace, a link that cannot be followed) or cut it
    (over `limits.context_file_max_bytes`). A problem of the default `AGENTS.md` is
    reported only when the file is there but unusable."""
    workspace = ctx.workspace()
    declared = "context_files" in ctx.data
    names = items(ctx.data.get("context_files")) if declared else ["AGENTS.md"]
    limit = _context_file_limit(ctx.data)
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
        outside = _outside(workspace, path)
        if outside:
            if declared or exists(path):
                yield ctx.issue(
                    at,
                    f"context file {name} is outside the workspace ({outside}); "
                    "`render` and `run` skip it",
                    "warning",
                )
            continue
        if is_file(path):
            size = _size(path)
            if size > limit:
                yield ctx.issue(
                    at,
                    f"context file {name} is {size:,} bytes, over "
                    f"`limits.context_file_max_bytes` ({limit:,}); the prompt shows only "
                    f"the first {limit:,}",
                    "warning",
                )
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


def _context_file_limit(data: Mapping[str, Any]) -> int:
    value = mapping(data.get("limits")).get("context_file_max_bytes")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return Limits().context_file_max_bytes


def _outside(workspace: Path, path: Path) -> str:
    """Where `path` leads when that is outside `workspace` (as the resource loader
    judges it: both resolved, links followed), else ""."""
    try:
        root = workspace.resolve()
        target = Path(os.path.normpath(path)).resolve()
    except (OSError, RuntimeError, ValueError):
        return ""  # a loop or an impossible name: reported as not followable below
    return "" if target.is_relative_to(root) else str(target)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except (OSError, ValueError):
        return 0
