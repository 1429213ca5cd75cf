"""`read`, `write` and `edit` through the editor, when it offers `fs/read_text_file` and
`fs/write_text_file`: the agent reads what the person sees (an unsaved buffer
included) and its changes land in the editor, which shows and saves them.

Only the way to the bytes changes. The tools keep their names, schemas and source
(`builtin`), so the permission rules and the extensions' guards decide a call exactly
as before, each path is confined with the same `resolve_in_workspace` before the
editor hears of it (the editor is asked about files inside the workspace only), and
`write` and `edit` refuse the agent's own guards (`refuse_guard`: its manifest, its
extensions...) as the disk tools do. A file
the tools may read outside it (a skill's) is read from disk, as without an editor;
so is a file the editor cannot read (it answers with an error), since the disk is
then the truth. A write or an edit the editor refuses fails, with the editor's reason:
writing the disk behind its back would lose the person's unsaved buffer.

The output is the disk tools' own (`files.read_result`, `edited_text`,
`edit_summary`): the model cannot tell where the text came from, and need not.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from acp import RequestError
from acp.interfaces import Client
from acp.schema import FileSystemCapabilities

from assembler.errors import ToolError
from assembler.tools.arguments import guarded, optional_int, require_str
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.builtin.files import (
    edit_summary,
    edited_text,
    encoded,
    read_result,
    refuse_guard,
)
from assembler.tools.builtin.line_reader import CHUNK_BYTES, Selection, select_lines
from assembler.tools.builtin.text_files import existing_mode
from assembler.tools.builtin.workspace import display_path, resolve_in_workspace, workspace_root
from assembler.tools.offload import run_blocking
from assembler.tools.registry import ToolRegistry


class EditorFiles:
    """The editor's side of one session's files."""

    def __init__(self, client: Client, session_id: str) -> None:
        self.client = client
        self.session_id = session_id

    async def read(self, path: str, timeout: float) -> str | None:
        """The editor's text of `path`; None when it cannot give it."""
        try:
            answer = await asyncio.wait_for(
                self.client.read_text_file(session_id=self.session_id, path=path), timeout
            )
        except (RequestError, ConnectionError, TimeoutError):
            return None
        return answer.content

    async def write(self, path: str, content: str, shown: str, timeout: float) -> None:
        try:
            await asyncio.wait_for(
                self.client.write_text_file(session_id=self.session_id, path=path, content=content),
                timeout,
            )
        except (RequestError, ConnectionError) as e:
            raise ToolError(f"the editor did not write {shown}: {e}") from e
        except TimeoutError as e:
            raise ToolError(f"the editor did not write {shown} within {timeout:g} s") from e


def use_editor_files(
    registry: ToolRegistry, files: EditorFiles, offered: FileSystemCapabilities | None
) -> tuple[str, ...]:
    """Route the built-in file tools of `registry` through the editor, as far as it
    offers; the names of the tools rerouted."""
    if offered is None:
        return ()
    wanted: list[tuple[str, Any]] = []
    if offered.read_text_file:
        wanted.append(("read", _reader(files)))
    if offered.write_text_file:
        wanted.append(("write", _writer(files)))
        if offered.read_text_file:
            wanted.append(("edit", _editor(files)))
    rerouted = []
    for name, make in wanted:
        tool = registry.get(name)
        if tool is not None and tool.source == "builtin":
            registry.register(replace(tool, execute=make(tool)), replace=True)
            rerouted.append(name)
    return tuple(rerouted)


def _reader(files: EditorFiles) -> Any:
    def make(disk: Tool) -> Any:
        @guarded("read", ("path", "offset", "limit"))
        async def read(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
            user_path = require_str(args, "path", allow_empty=False)
            offset = optional_int(args, "offset") or 1
            limit = optional_int(args, "limit")
            path = resolve_in_workspace(ctx.workspace, user_path, read_roots=ctx.read_roots)
            if not path.is_relative_to(workspace_root(ctx.workspace)):
                return await disk.execute(args, ctx)  # a skill's file
            text = await files.read(str(path), ctx.timeout)
            if text is None:
                return await disk.execute(args, ctx)
            shown = display_path(ctx.workspace, path)
            picked = await run_blocking(
                lambda: _select(text, offset, limit, ctx), timeout=ctx.timeout, what=f"read {shown}"
            )
            return read_result(picked, shown, offset)

        return read

    return make


def _writer(files: EditorFiles) -> Any:
    def make(disk: Tool) -> Any:
        @guarded("write", ("path", "content"))
        async def write(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
            user_path = require_str(args, "path", allow_empty=False)
            content = require_str(args, "content")
            path = resolve_in_workspace(
                ctx.workspace, user_path, for_write=True, read_roots=ctx.read_roots
            )
            shown = display_path(ctx.workspace, path)
            refuse_guard(path, shown, ctx)  # the agent's own guards, as on disk
            size = len(encoded(content, "content"))
            previous = path.stat().st_size if existing_mode(path, shown) is not None else None
            path.parent.mkdir(parents=True, exist_ok=True)
            await files.write(str(path), content, shown, ctx.timeout)
            what = "new file" if previous is None else f"replaced {previous} bytes"
            return ToolResult(
                f"Wrote {size} bytes to {shown} ({what})",
                details={"path": shown, "bytes": size, "created": previous is None},
            )

        return write

    return make


def _editor(files: EditorFiles) -> Any:
    def make(disk: Tool) -> Any:
        @guarded("edit", ("path", "old_text", "new_text"))
        async def edit(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
            user_path = require_str(args, "path", allow_empty=False)
            old_text = require_str(args, "old_text", allow_empty=False)
            new_text = require_str(args, "new_text")
            path = resolve_in_workspace(
                ctx.workspace, user_path, for_write=True, read_roots=ctx.read_roots
            )
            shown = display_path(ctx.workspace, path)
            refuse_guard(path, shown, ctx)  # the agent's own guards, as on disk
            text = None
            if existing_mode(path, shown) is not None:
                text = await files.read(str(path), ctx.timeout)
            if text is None:  # no such file, or the editor cannot read it: as on disk
                return await disk.execute(args, ctx)
            updated, line = edited_text(text, shown, old_text, new_text)
            encoded(updated, "new_text")
            await files.write(str(path), updated, shown, ctx.timeout)
            return ToolResult(
                edit_summary(shown, line, old_text, new_text), details={"path": shown, "line": line}
            )

        return edit

    return make


def _select(text: str, offset: int, limit: int | None, ctx: ToolContext) -> Selection:
    """The lines `read` shows of `text`, picked by the disk tool's own reader."""
    with tempfile.TemporaryFile() as buffer:
        buffer.write(text.encode("utf-8", "surrogatepass"))
        buffer.flush()
        fd = buffer.fileno()
        os.lseek(fd, 0, os.SEEK_SET)
        return select_lines(
            fd,
            offset=offset,
            limit=limit,
            max_lines=ctx.max_output_lines,
            max_bytes=ctx.max_output_bytes,
            first=os.read(fd, CHUNK_BYTES),
        )
