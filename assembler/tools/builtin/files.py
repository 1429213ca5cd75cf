"""`read`, `write` and `edit`: the file tools a coding agent lives on.

`read` returns the file's text unchanged (no line-number prefixes) so the model can
copy it into `edit`'s `old_text` exactly; the line range is given in a footer instead.
`edit` replaces one exact, unique occurrence: a fuzzy or first-of-many match would let
the model change code it never looked at. Both confine paths with
`resolve_in_workspace` and never raise for the model's mistakes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assembler.errors import ToolError
from assembler.tools.arguments import guarded, optional_int, require_str
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.builtin.text_files import read_text_exact, read_text_lossy
from assembler.tools.builtin.workspace import display_path, resolve_in_workspace
from assembler.tools.truncate import split_lines, truncate_text

_PATH = {
    "type": "string",
    "description": "File path, relative to the workspace (or absolute, inside it).",
}
_DIFF_LINES = 12


@guarded("read", ("path", "offset", "limit"))
async def _read(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    user_path = require_str(args, "path", allow_empty=False)
    offset = optional_int(args, "offset") or 1
    limit = optional_int(args, "limit")
    path = resolve_in_workspace(ctx.workspace, user_path, read_roots=ctx.read_roots)
    shown = display_path(ctx.workspace, path)
    lines = split_lines(read_text_lossy(path, shown))
    total = len(lines)
    if total == 0:
        return ToolResult(f"[{shown} is empty]", details={"path": shown, "total_lines": 0})
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {shown}, which has {total} lines")

    end = total if limit is None else min(total, offset - 1 + limit)
    cut = truncate_text(
        "".join(lines[offset - 1 : end]),
        ctx.max_output_lines,
        ctx.max_output_bytes,
        keep="head",
    )
    last = offset - 1 + cut.last_line
    body = cut.text if cut.text.endswith("\n") else cut.text + "\n"
    footer = f"[{shown}: lines {offset}-{last} of {total}"
    if cut.line_bytes is not None:
        kept, full = cut.line_bytes
        footer += f"; line {last} cut to its first {kept} of {full} bytes"
    if cut.truncated:
        footer += f"; output truncated at the {cut.limit}"
    if last < total:
        footer += f"; use offset={last + 1} to continue"
    details = {
        "path": shown,
        "first_line": offset,
        "last_line": last,
        "total_lines": total,
        "truncated": cut.truncated,
    }
    return ToolResult(body + footer + "]", details=details)


@guarded("write", ("path", "content"))
async def _write(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    user_path = require_str(args, "path", allow_empty=False)
    content = require_str(args, "content")
    path = resolve_in_workspace(ctx.workspace, user_path, for_write=True, read_roots=ctx.read_roots)
    shown = display_path(ctx.workspace, path)
    data = _encode(content, "content")
    previous = path.stat().st_size if path.exists() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
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
    text = read_text_exact(path, shown)

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
        where = ", ".join(str(_line_of(text, start)) for start in starts[:10])
        raise ToolError(
            f"old_text occurs {len(starts)} times in {shown} (at lines {where}); it must "
            "match exactly once: add surrounding lines to old_text to make it unique."
        )
    if old_text == new_text:
        raise ToolError("old_text and new_text are identical; there is nothing to change")

    start = starts[0]
    updated = text[:start] + new_text + text[start + len(old_text) :]
    path.write_bytes(_encode(updated, "new_text"))
    line = _line_of(text, start)
    return ToolResult(
        _summary(shown, line, old_text, new_text),
        details={"path": shown, "line": line},
    )


def _encode(text: str, name: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"{name} contains text that cannot be written as UTF-8") from exc


def _occurrences(text: str, needle: str) -> list[int]:
    """Every start index, overlapping ones included (`aa` occurs twice in `aaa`)."""
    starts: list[int] = []
    index = text.find(needle)
    while index != -1:
        starts.append(index)
        index = text.find(needle, index + 1)
    return starts


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _summary(shown: str, line: int, old_text: str, new_text: str) -> str:
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
