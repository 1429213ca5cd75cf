"""Turn an MCP `CallToolResult` into the text a model is shown.

The model providers take a tool result as text, so every content block becomes text:
text blocks as they are, embedded text resources by their text, and anything binary
(images, audio, blobs) as a one-line notice saying what was there and how big. A
notice keeps the model from guessing at data it cannot see, and never puts megabytes
of base64 into the context. `structuredContent` is shown as JSON only when there is no
text: servers built on the SDK already repeat it as text, and showing it twice would
waste context. The result is then cut to the agent's output limits like any tool's.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from assembler.tools.base import ToolResult
from assembler.tools.truncate import format_size, truncate_text


def render_result(
    result: types.CallToolResult,
    *,
    server: str,
    tool: str,
    max_lines: int,
    max_bytes: int,
) -> ToolResult:
    """The `ToolResult` for one `tools/call` answer, cut to `max_lines`/`max_bytes`."""
    parts = [part for part in (_block_text(block) for block in result.content) if part]
    has_text = any(isinstance(block, types.TextContent) for block in result.content)
    structured = result.structured_content
    if structured is not None and not has_text:
        parts.append(json.dumps(structured, ensure_ascii=False, indent=2, sort_keys=True))
    text = "\n".join(parts)
    if not text:
        text = f"[MCP tool `{tool}` failed without a message]" if result.is_error else "(no output)"
    cut = truncate_text(text, max_lines, max_bytes, keep="head")
    body = cut.text
    if cut.truncated:
        body = body.rstrip("\n") + "\n" + (cut.notice() or "")
    details: dict[str, Any] = {
        "server": server,
        "tool": tool,
        "truncated": cut.truncated,
        "content_types": [block.type for block in result.content],
    }
    if structured is not None:  # shown above only when there was no text; not copied
        details["structured"] = True  # into details, which go to the audit trace
    return ToolResult(body, is_error=bool(result.is_error), details=details)


def _block_text(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mime_type}, {_base64_size(block.data)}]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {_base64_size(block.data)}]"
    if isinstance(block, types.ResourceLink):
        label = f"{block.name}: " if block.name and block.name != block.uri else ""
        return f"[resource link: {label}{block.uri}]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return resource.text
        mime = resource.mime_type or "application/octet-stream"
        return f"[resource: {resource.uri}, {mime}, {_base64_size(resource.blob)}]"
    return f"[{getattr(block, 'type', 'unknown')} content not shown]"  # a newer block type


def _base64_size(data: str) -> str:
    """The decoded size of base64 `data`, computed without decoding it."""
    stripped = data.strip()
    padding = len(stripped) - len(stripped.rstrip("="))
    return format_size(max(len(stripped) * 3 // 4 - padding, 0))
