"""`grep`, `find` and `ls`: looking around the workspace without a shell.

Pure Python on purpose: no dependency on ripgrep or fd being installed, the same
results on every machine, and the walk can enforce the workspace boundary (symlinks
that lead outside are skipped, never followed). Output paths are relative to the
workspace, so they can be passed straight to `read` and `edit`.

`grep` and `find` run the model's regular expression and globs in a separate process
(`search_worker`) that is killed when the tool timeout expires: Python's `re`
backtracks, and a pattern such as `^(a+)+$` would otherwise run for hours holding the
GIL, past any timeout. The process is kept for the next call while it answers in time
(`search_pool`). `ls` lists one directory in a thread, within the timeout.

All three leave out what the manifest's `read` deny rules hide (`ToolContext.hidden`):
a denied file's lines are not grepped, its name is not found or listed, and a search
rooted in a hidden path is refused. Output then says that something was left out.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
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
from assembler.tools.builtin.workspace import (
    containing_root,
    display_path,
    resolve_in_workspace,
    workspace_root,
)
from assembler.tools.offload import run_blocking

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


HIDDEN_NOTE = "[paths the manifest's `read` rules deny are left out]"


def _hidden(root: Path, ctx: ToolContext) -> list[str]:
    """The `read`-denied patterns that apply under `root` (the workspace; a skill
    directory outside it is not governed by workspace-relative rules)."""
    return list(ctx.hidden) if root == workspace_root(ctx.workspace) else []


def _refuse_hidden(root: Path, base: Path, ctx: ToolContext) -> None:
    """A search or listing rooted at a path `read` may not see is refused."""
    patterns = _hidden(root, ctx)
    if not patterns or not base.is_relative_to(root):
        return
    relative = base.relative_to(root).as_posix()
    rooted = "" if relative == "." else "/" + relative
    if any(re.fullmatch(p, rooted, re.DOTALL) for p in patterns):
        raise ToolError(
            f"{display_path(ctx.workspace, base)} is hidden by the manifest's `read` "
            "deny rules: its content and names are not shown"
        )


def _prefix(root: Path, ctx: ToolContext) -> str:
    """What goes before a found path's part below `root`, so the model can pass it
    back: nothing in the workspace, the absolute root in a skill directory outside it."""
    return "" if root == workspace_root(ctx.workspace) else f"{root}/"


def _finish(text: str, ctx: ToolContext, extra: list[str], details: dict[str, Any]) -> ToolResult:
    # imported here for start-up cost: describing the tools (`render --dry-run`)
    # needs nothing of running them
    from assembler.tools.truncate import truncate_output

    body, notice = truncate_output(text, ctx.max_output_lines, ctx.max_output_bytes, keep="head")
    notes = [notice] if notice else []
    return ToolResult("\n".join([body.rstrip("\n"), *notes, *extra]), details=details)


async def _in_worker(request: dict[str, Any], ctx: ToolContext, what: str) -> dict[str, Any]:
    """Run a search in a worker process; it is killed when it exceeds the tool timeout."""
    try:
        return await run_in_worker(request, ctx.timeout, what)
    except WorkerTimeout:
        raise ToolError(
            f"{what} did not finish within {ctx.timeout:g} s (limits.tool_timeout) and "
            "was stopped; a pattern with nested repetition such as `(a+)+` can take "
            "forever on a non-matching line: simplify the pattern or narrow the path"
        ) from None


class WorkerTimeout(ToolError):
    """The worker did not answer in time and was killed."""


async def run_in_worker(request: dict[str, Any], timeout: float, what: str) -> dict[str, Any]:
    """Run `request` (`op`: `grep`, `find` or `match`) in a worker process (kept between
    calls, see `search_pool`), killed when it takes longer than `timeout` seconds
    (`WorkerTimeout`) or the call is cancelled. Also used by evaluations'
    `answer_matches`, whose pattern may backtrack as badly."""
    # Imported here: listing and validating tools must not load subprocess and asyncio.
    from assembler.tools.builtin.search_pool import WORKERS

    try:
        answer = await WORKERS.ask(request, timeout, what)
    except TimeoutError:
        raise WorkerTimeout(f"{what} did not finish within {timeout:g} s") from None
    if "error" in answer:
        raise ToolError(str(answer["error"]))
    return answer


@guarded("grep", ("pattern", "path", "glob", "ignore_case", "limit"))
async def _grep(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = require_str(args, "pattern", allow_empty=False)
    glob = optional_str(args, "glob")
    ignore_case = optional_bool(args, "ignore_case")
    limit = min(optional_int(args, "limit") or DEFAULT_LIMIT, MAX_LIMIT)
    root, base = _base(args, ctx)
    if not base.exists():
        raise ToolError(f"{display_path(ctx.workspace, base)}: no such file or directory")
    _refuse_hidden(root, base, ctx)
    answer = await _in_worker(
        {
            "op": "grep",
            "pattern": pattern,
            "ignore_case": ignore_case,
            "glob": glob,
            "root": str(root),
            "base": str(base),
            "limit": limit,
            "max_line": MAX_LINE_CHARS,
            "max_file": MAX_GREP_FILE_BYTES,
            "hidden": _hidden(root, ctx),
        },
        ctx,
        "grep",
    )
    prefix = _prefix(root, ctx)
    found: list[str] = [prefix + line for line in answer["found"]]
    extra: list[str] = []
    if len(found) > limit:
        found = found[:limit]
        extra.append(f"[stopped after {limit} matches; narrow the pattern, path or glob]")
    if answer["skipped_large"]:
        extra.append(f"[skipped {answer['skipped_large']} files larger than 10 MB]")
    if answer.get("hidden"):
        extra.append(HIDDEN_NOTE)
    details = {"matches": len(found)}
    if not found:
        return ToolResult("\n".join(["No matches.", *extra]), details=details)
    return _finish("\n".join(found), ctx, extra, details)


@guarded("find", ("pattern", "path", "limit"))
async def _find(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = require_str(args, "pattern", allow_empty=False)
    limit = min(optional_int(args, "limit") or DEFAULT_FIND_LIMIT, MAX_LIMIT)
    root, base = _base(args, ctx)
    if not base.is_dir():
        raise ToolError(f"{display_path(ctx.workspace, base)} is not a directory")
    _refuse_hidden(root, base, ctx)
    answer = await _in_worker(
        {
            "op": "find",
            "pattern": pattern,
            "root": str(root),
            "base": str(base),
            "limit": limit,
            "hidden": _hidden(root, ctx),
        },
        ctx,
        "find",
    )
    prefix = _prefix(root, ctx)
    found: list[str] = [prefix + path for path in answer["paths"]]
    count: int = answer["count"]
    extra = []
    if count > limit:
        extra.append(f"[showing {limit} of {count} files; narrow the pattern or path]")
    if answer.get("hidden"):
        extra.append(HIDDEN_NOTE)
    details = {"matches": count}
    if not found:
        return ToolResult("\n".join(["No files found.", *extra]), details=details)
    return _finish("\n".join(found), ctx, extra, details)


@guarded("ls", ("path",))
async def _ls(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    root, base = _base(args, ctx)
    shown = display_path(ctx.workspace, base)
    if not base.exists():
        raise ToolError(f"{shown}: no such directory")
    if not base.is_dir():
        raise ToolError(f"{shown} is a file, not a directory; use `read` to see it")
    _refuse_hidden(root, base, ctx)
    hidden = [re.compile(p, re.DOTALL) for p in _hidden(root, ctx)]
    above = "/" + base.relative_to(root).as_posix() if base != root and hidden else ""

    def concealed(name: str, link: bool) -> bool:
        """Hidden by its path, or (a link) by where it leads, as `read` resolves it."""
        paths = [f"{above}/{name}"]
        if link:
            target = Path(os.path.realpath(base / name))
            if target.is_relative_to(root):
                paths.append("/" + target.relative_to(root).as_posix())
        return any(h.fullmatch(p) for h in hidden for p in paths)

    def listing() -> tuple[list[str], int]:
        with os.scandir(base) as scan:
            names = [(entry.name, entry.is_dir(), entry.is_symlink()) for entry in scan]
        kept = [
            name + ("/" if is_dir else "")
            for name, is_dir, link in names
            if not (hidden and concealed(name, link))
        ]
        return sorted(kept), len(names) - len(kept)

    entries, left_out = await run_blocking(listing, timeout=ctx.timeout, what=f"ls {shown}")
    extra = [HIDDEN_NOTE] if left_out else []
    if not entries:
        return ToolResult("\n".join([f"({shown} is empty)", *extra]), details={"entries": 0})
    return _finish("\n".join(entries), ctx, extra, {"entries": len(entries)})


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
