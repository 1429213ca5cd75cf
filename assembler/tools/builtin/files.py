"""`read`, `write` and `edit`: the file tools a coding agent lives on.

`read` returns the file's text unchanged (no line-number prefixes) so the model can
copy it into `edit`'s `old_text` exactly; the line range is given in a footer instead.
`edit` replaces one exact, unique occurrence: a fuzzy or first-of-many match would let
the model change code it never looked at. All three confine paths with
`resolve_in_workspace`, use regular files only (`text_files`), and never raise for the
model's mistakes. Their file work runs off the event loop within the tool timeout
(`run_blocking`): a slow disk, a huge file or a hostile `old_text` delays one call,
never the whole agent. `read` streams (`line_reader`), so its memory is bounded by the
output limits whatever the file's size; `write` and `edit` replace the file through a
temporary file and a rename, keeping its permissions.

`write` and `edit` never change the agent's own guards (`ToolContext.guarded`: its
manifests, extensions, tool modules, replays, templates), whatever the permission
rules allow: the path is checked after every link and `..` was resolved.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assembler.errors import ToolError
from assembler.tools.arguments import guarded, optional_int, require_str
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.builtin.workspace import display_path, resolve_in_workspace
from assembler.tools.offload import run_blocking

if TYPE_CHECKING:
    from assembler.tools.builtin.line_reader import Selection

# The file work itself (`line_reader`, `text_files`) is imported by the functions that
# do it, for start-up cost: describing the tools (`render --dry-run`) needs none of it.

_PATH = {
    "type": "string",
    "description": "File path, relative to the workspace (or absolute, inside it).",
}
_DIFF_LINES = 12
#: How many match positions an ambiguous `edit` reports (and looks for).
_SHOWN_MATCHES = 10
_MAYBE_WRITTEN = "; the file may still be replaced when it finishes"


@guarded("read", ("path", "offset", "limit"))
async def _read(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    user_path = require_str(args, "path", allow_empty=False)
    offset = optional_int(args, "offset") or 1
    limit = optional_int(args, "limit")
    path = resolve_in_workspace(ctx.workspace, user_path, read_roots=ctx.read_roots)
    shown = display_path(ctx.workspace, path)
    picked = await run_blocking(
        lambda: _read_lines(path, shown, offset, limit, ctx),
        timeout=ctx.timeout,
        what=f"read {shown}",
    )
    return read_result(picked, shown, offset)


def read_result(picked: Selection, shown: str, offset: int) -> ToolResult:
    """What `read` answers for the lines it picked: the text, then the footer (also
    for a file an editor's buffer holds, `assemble acp`)."""
    if picked.total == 0:
        return ToolResult(f"[{shown} is empty]", details={"path": shown, "total_lines": 0})
    if offset > picked.total:
        raise ToolError(
            f"offset {offset} is past the end of {shown}, which has {picked.total} lines"
        )
    last, total = picked.last, picked.total
    body = picked.text if picked.text.endswith("\n") else picked.text + "\n"
    footer = f"[{shown}: lines {offset}-{last} of {total}"
    if picked.line_bytes is not None:
        kept, full = picked.line_bytes
        footer += f"; line {last} cut to its first {kept} of {full} bytes"
    if picked.truncated:
        footer += f"; output truncated at the {picked.limit}"
    if last < total:
        footer += f"; use offset={last + 1} to continue"
    details = {
        "path": shown,
        "first_line": offset,
        "last_line": last,
        "total_lines": total,
        "truncated": picked.truncated,
    }
    return ToolResult(body + footer + "]", details=details)


def _read_lines(
    path: Path, shown: str, offset: int, limit: int | None, ctx: ToolContext
) -> Selection:
    from assembler.tools.builtin.line_reader import CHUNK_BYTES, select_lines
    from assembler.tools.builtin.text_files import looks_binary, open_regular

    fd, size = open_regular(path, shown)
    try:
        first = os.read(fd, CHUNK_BYTES)
        if looks_binary(first):
            raise ToolError(f"{shown} looks like a binary file ({size} bytes); not shown")
        return select_lines(
            fd,
            offset=offset,
            limit=limit,
            max_lines=ctx.max_output_lines,
            max_bytes=ctx.max_output_bytes,
            first=first,
        )
    finally:
        os.close(fd)


@guarded("write", ("path", "content"))
async def _write(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    user_path = require_str(args, "path", allow_empty=False)
    content = require_str(args, "content")
    path = resolve_in_workspace(ctx.workspace, user_path, for_write=True, read_roots=ctx.read_roots)
    shown = display_path(ctx.workspace, path)
    refuse_guard(path, shown, ctx)
    data = encoded(content, "content")

    def write() -> int | None:
        from assembler.tools.builtin.text_files import existing_mode, replace_file

        mode = existing_mode(path, shown)
        previous = path.stat().st_size if mode is not None else None
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, data, mode)
        return previous

    previous = await run_blocking(
        write, timeout=ctx.timeout, what=f"write {shown}", note=_MAYBE_WRITTEN
    )
    what = "new file" if previous is None else f"replaced {previous} bytes"
    return ToolResult(
        f"Wrote {len(data)} bytes to {shown} ({what})",
        details={"path": shown, "bytes": len(data), "created": previous is None},
    )


@guarded("edit", ("path", "old_text", "new_text"))
async def _edit(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    user_path = require_str(args, "path", allow_empty=False)
    old_text = require_str(args, "old_text", allow_empty=False)
    new_text = require_str(args, "new_text")
    path = resolve_in_workspace(ctx.workspace, user_path, for_write=True, read_roots=ctx.read_roots)
    shown = display_path(ctx.workspace, path)
    refuse_guard(path, shown, ctx)
    line = await run_blocking(
        lambda: _edit_file(path, shown, old_text, new_text),
        timeout=ctx.timeout,
        what=f"edit {shown}",
        note=_MAYBE_WRITTEN,
    )
    return ToolResult(
        edit_summary(shown, line, old_text, new_text),
        details={"path": shown, "line": line},
    )


def refuse_guard(path: Path, shown: str, ctx: ToolContext) -> None:
    """A `ToolError` when `path` (resolved) is one of the agent's guards or lies in one."""
    if not ctx.guarded:
        return
    if path in ctx.guarded or any(parent in ctx.guarded for parent in path.parents):
        raise ToolError(
            f"{shown} is one of the agent's own guards (its manifest, a sub-agent's, an "
            "extension, a tool module, a replay script or a prompt template): the file "
            "tools never change it, whatever the permission rules say. A person can; "
            "a manifest opts a path in with `permissions.self_edit`."
        )


def _edit_file(path: Path, shown: str, old_text: str, new_text: str) -> int:
    """Replace the one occurrence of `old_text`; the line it was at, or a `ToolError`."""
    from assembler.tools.builtin.text_files import existing_mode, read_text_exact, replace_file

    mode = existing_mode(path, shown)
    text = read_text_exact(path, shown)
    updated, line = edited_text(text, shown, old_text, new_text)
    replace_file(path, encoded(updated, "new_text"), mode)
    return line


def edited_text(text: str, shown: str, old_text: str, new_text: str) -> tuple[str, int]:
    """`text` with the one occurrence of `old_text` replaced, and the line it was at;
    a `ToolError` the model can act on otherwise (also for an editor's buffer)."""
    starts = _occurrences(text, old_text)
    if not starts:
        message = f"old_text was not found in {shown}."
        if _normalise(old_text) and _normalise(old_text) in _normalise(text):
            message += (
                " A match exists if whitespace is ignored: `read` the file again and copy "
                "old_text exactly (indentation, tabs vs spaces, line endings)."
            )
        else:
            message += " `read` the file and copy old_text from it exactly."
        raise ToolError(message)
    if len(starts) > 1:
        if len(starts) > _SHOWN_MATCHES:
            count = f"at least {max(len(starts), text.count(old_text))} times"
        else:
            count = f"{len(starts)} times"
        where = ", ".join(str(_line_of(text, start)) for start in starts[:_SHOWN_MATCHES])
        raise ToolError(
            f"old_text occurs {count} in {shown} (at lines {where}); it must match "
            "exactly once: add surrounding lines to old_text to make it unique."
        )
    if old_text == new_text:
        raise ToolError("old_text and new_text are identical; there is nothing to change")
    start = starts[0]
    return text[:start] + new_text + text[start + len(old_text) :], _line_of(text, start)


def encoded(text: str, name: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"{name} contains text that cannot be written as UTF-8") from exc


def _occurrences(text: str, needle: str) -> list[int]:
    """Start indexes, overlapping ones included (`aa` occurs twice in `aaa`), up to one
    more than `_SHOWN_MATCHES`: enough to tell 0, 1 and many apart, and to say where.

    Each `find` is linear (CPython switches to the two-way algorithm on long needles),
    so this is too. Listing every overlapping start was quadratic: `old_text` of
    100 KB of `a` in a file of 200 KB of `a` starts 100,000 times.
    """
    starts: list[int] = []
    index = text.find(needle)
    while index != -1 and len(starts) <= _SHOWN_MATCHES:
        starts.append(index)
        index = text.find(needle, index + 1)
    return starts


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def edit_summary(shown: str, line: int, old_text: str, new_text: str) -> str:
    """`Edited f at line 3: 2 lines -> 1 line`, then the removed and added lines."""
    old_lines, new_lines = old_text.splitlines(), new_text.splitlines()
    out = [f"Edited {shown} at line {line}: replaced {_count(old_lines)} with {_count(new_lines)}"]
    for sign, lines in (("-", old_lines), ("+", new_lines)):
        out.extend(f"{sign}{text}" for text in lines[:_DIFF_LINES])
        if len(lines) > _DIFF_LINES:
            out.append(f"{sign}... ({len(lines) - _DIFF_LINES} more lines)")
    return "\n".join(out)


def _count(lines: list[str]) -> str:
    return "1 line" if len(lines) == 1 else f"{len(lines)} lines"


READ_TOOL = Tool(
    name="read",
    description=(
        "Read a text file from the workspace. Returns the file's text as is, followed by a "
        "footer with the line range shown. Long files are cut; use offset and limit "
        "(1-based lines) to read further. Directories and binary files are refused."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _PATH,
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "Line number to start at (1-based; default 1).",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": "Maximum number of lines to return (default: as many as fit).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    execute=_read,
    snippet="Read a file's contents (text; line ranges with offset/limit)",
    guidelines=("Use `read` instead of `cat`/`head`/`tail` in `bash` to look at files.",),
)

WRITE_TOOL = Tool(
    name="write",
    description=(
        "Write a file in the workspace, replacing it if it exists. Parent directories are "
        "created. Use for new files or complete rewrites; prefer `edit` for changes."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _PATH,
            "content": {"type": "string", "description": "The complete new file content."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    execute=_write,
    snippet="Create or overwrite a file (creates parent directories)",
    guidelines=(
        "Use `write` only for new files or full rewrites.",
        "Use `edit` rather than `write` to change part of a file.",
    ),
)

EDIT_TOOL = Tool(
    name="edit",
    description=(
        "Replace one exact occurrence of old_text with new_text in a file. old_text must "
        "match the file exactly (whitespace included) and occur exactly once; include "
        "surrounding lines to make it unique."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _PATH,
            "old_text": {
                "type": "string",
                "description": "Exact text to replace; must occur exactly once in the file.",
            },
            "new_text": {"type": "string", "description": "Text to put in its place."},
        },
        "required": ["path", "old_text", "new_text"],
        "additionalProperties": False,
    },
    execute=_edit,
    snippet="Replace one exact, unique piece of text in a file",
    guidelines=("Use `read` before `edit`: `old_text` must match the file exactly, once.",),
)
