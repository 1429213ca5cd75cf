"""`grep`, `find` and `ls`: looking around the workspace without a shell.

Pure Python on purpose: no dependency on ripgrep or fd being installed, the same
results on every machine, and the walk can enforce the workspace boundary (symlinks
that lead outside are skipped, never followed). Walks run in a worker thread so a big
tree does not stall the event loop. Output paths are relative to the workspace, so they
can be passed straight to `read` and `edit`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from assembler.errors import ToolError
from assembler.tools.arguments import (
    guarded,
    optional_bool,
    optional_int,
    optional_str,
    require_str,
)
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.builtin.text_files import looks_binary
from assembler.tools.builtin.tree import glob_matcher, walk_files
from assembler.tools.builtin.workspace import (
    containing_root,
    display_path,
    resolve_in_workspace,
    workspace_root,
)
from assembler.tools.truncate import truncate_output

MAX_GREP_FILE_BYTES = 10 * 1024 * 1024
MAX_LINE_CHARS = 300
DEFAULT_LIMIT, MAX_LIMIT = 100, 1000
DEFAULT_FIND_LIMIT = 1000


def _base(args: Mapping[str, Any], ctx: ToolContext) -> tuple[Path, Path]:
    """The root the search stays in (the workspace, or the skill directory the path is
    in) and the resolved `path` argument (default: the workspace)."""
    path = optional_str(args, "path") or "."
    base = resolve_in_workspace(ctx.workspace, path, read_roots=ctx.read_roots)
    workspace = workspace_root(ctx.workspace)
    if base.is_relative_to(workspace):
        return workspace, base
    return containing_root(base, ctx.read_roots) or base, base


def _prefix(root: Path, ctx: ToolContext) -> str:
    """What goes before a found path's part below `root`, so the model can pass it
    back: nothing in the workspace, the absolute root in a skill directory outside it."""
    return "" if root == workspace_root(ctx.workspace) else f"{root}/"


def _finish(text: str, ctx: ToolContext, extra: list[str], details: dict[str, Any]) -> ToolResult:
    body, notice = truncate_output(text, ctx.max_output_lines, ctx.max_output_bytes, keep="head")
    notes = [notice] if notice else []
    return ToolResult("\n".join([body.rstrip("\n"), *notes, *extra]), details=details)


@guarded("grep", ("pattern", "path", "glob", "ignore_case", "limit"))
async def _grep(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    import asyncio

    pattern = require_str(args, "pattern", allow_empty=False)
    glob = optional_str(args, "glob")
    flags = re.IGNORECASE if optional_bool(args, "ignore_case") else 0
    limit = min(optional_int(args, "limit") or DEFAULT_LIMIT, MAX_LIMIT)
    try:
        regex = re.compile(pattern, flags)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from exc
    root, base = _base(args, ctx)
    if not base.exists():
        raise ToolError(f"{display_path(ctx.workspace, base)}: no such file or directory")
    matches_glob = glob_matcher(glob) if glob else None
    return await asyncio.to_thread(
        _grep_sync,
        regex,
        root=root,
        base=base,
        matches_glob=matches_glob,
        limit=limit,
        ctx=ctx,
    )


def _grep_sync(
    regex: re.Pattern[str],
    *,
    root: Path,
    base: Path,
    matches_glob: Callable[[str], bool] | None,
    limit: int,
    ctx: ToolContext,
) -> ToolResult:
    files = [base] if base.is_file() else walk_files(root, base)
    found: list[str] = []
    skipped_large = 0
    prefix = _prefix(root, ctx)
    for path in files:
        rel = prefix + path.relative_to(root).as_posix()
        if matches_glob and base.is_dir() and not matches_glob(path.relative_to(base).as_posix()):
            continue
        try:
            if path.stat().st_size > MAX_GREP_FILE_BYTES:
                skipped_large += 1
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if looks_binary(data):
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
            if regex.search(line):
                text = line.rstrip("\r")
                if len(text) > MAX_LINE_CHARS:
                    text = text[:MAX_LINE_CHARS] + "..."
                found.append(f"{rel}:{number}: {text}")
                if len(found) > limit:
                    break
        if len(found) > limit:
            break
    extra: list[str] = []
    if len(found) > limit:
        found = found[:limit]
        extra.append(f"[stopped after {limit} matches; narrow the pattern, path or glob]")
    if skipped_large:
        extra.append(f"[skipped {skipped_large} files larger than 10 MB]")
    details = {"matches": len(found)}
    if not found:
        return ToolResult("\n".join(["No matches.", *extra]), details=details)
    return _finish("\n".join(found), ctx, extra, details)


@guarded("find", ("pattern", "path", "limit"))
async def _find(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    import asyncio

    matches = glob_matcher(require_str(args, "pattern", allow_empty=False))
    limit = min(optional_int(args, "limit") or DEFAULT_FIND_LIMIT, MAX_LIMIT)
    root, base = _base(args, ctx)
    if not base.is_dir():
        raise ToolError(f"{display_path(ctx.workspace, base)} is not a directory")

    def collect() -> list[str]:
        prefix = _prefix(root, ctx)
        return sorted(
            prefix + path.relative_to(root).as_posix()
            for path in walk_files(root, base)
            if matches(path.relative_to(base).as_posix())
        )

    found = await asyncio.to_thread(collect)
    extra = []
    if len(found) > limit:
        extra.append(f"[showing {limit} of {len(found)} files; narrow the pattern or path]")
    details = {"matches": len(found)}
    if not found:
        return ToolResult("No files found.", details=details)
    return _finish("\n".join(found[:limit]), ctx, extra, details)


@guarded("ls", ("path",))
async def _ls(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    _, base = _base(args, ctx)
    shown = display_path(ctx.workspace, base)
    if not base.exists():
        raise ToolError(f"{shown}: no such directory")
    if not base.is_dir():
        raise ToolError(f"{shown} is a file, not a directory; use `read` to see it")
    with os.scandir(base) as scan:
        entries = sorted(entry.name + ("/" if entry.is_dir() else "") for entry in scan)
    if not entries:
        return ToolResult(f"({shown} is empty)", details={"entries": 0})
    return _finish("\n".join(entries), ctx, [], {"entries": len(entries)})


_SEARCH_PATH = {
    "type": "string",
    "description": "Directory (or, for grep, file) to search, relative to the workspace; "
    "default the workspace.",
}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}

GREP_TOOL = Tool(
    name="grep",
    description=(
        "Search file contents for a Python regular expression. Prints `path:line: text` "
        "for each matching line. Skips .git, binary files and links leaving the workspace."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Python regular expression."},
            "path": _SEARCH_PATH,
            "glob": {
                "type": "string",
                "description": "Only search files matching this glob (`*.py`, `src/**/*.ts`).",
            },
            "ignore_case": {"type": "boolean", "description": "Match case-insensitively."},
            "limit": {**_LIMIT, "description": f"Maximum matches (default {DEFAULT_LIMIT})."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    execute=_grep,
    snippet="Search file contents with a regular expression (path:line: text)",
    guidelines=(
        "Use `grep` to search file contents; narrow a search with its glob or path argument.",
        "Use `grep` rather than grep/rg in `bash`.",
    ),
)

FIND_TOOL = Tool(
    name="find",
    description=(
        "Find files by glob pattern. `**` matches any directories; a pattern without `/` "
        "matches file names at any depth. Returns sorted paths relative to the workspace."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "description": "Glob such as `**/*.py`, `src/*.ts` or `README*`.",
            },
            "path": _SEARCH_PATH,
            "limit": {**_LIMIT, "description": "Maximum paths (default 1000)."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    execute=_find,
    snippet="Find files by glob pattern (`**/*.py`)",
    guidelines=("Use `find` to locate files by name before reading them.",),
)

LS_TOOL = Tool(
    name="ls",
    description="List a directory: entries sorted by name, directories with a trailing `/`.",
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "Directory to list, relative to the workspace (default `.`).",
            },
        },
        "required": [],
        "additionalProperties": False,
    },
    execute=_ls,
    snippet="List a directory's entries",
    guidelines=(),
)
