"""A loopback server speaking the Anthropic Messages streaming format, scripted.

Events come as the API sends them: `message_start` (with input usage), a `ping`,
for each content block `content_block_start` / `content_block_delta`... /
`content_block_stop` (tool inputs as `input_json_delta` fragments, the first one
empty), then `message_delta` (stop reason, output usage) and `message_stop`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wire._server import ErrorReply, RecordedRequest, ScriptedHTTPServer, StreamReply, sse

__all__ = [
    "AnthropicServer",
    "RecordedRequest",
    "StreamReply",
    "ToolUseSpec",
    "anthropic_error",
    "error_event",
    "message_stream",
    "stream",
    "tool_use_order_error",
]

MODEL = "claude-test"


@dataclass(frozen=True)
class ToolUseSpec:
    """A tool_use block as streamed: `input_json` is a list of raw fragments."""

    id: str
    name: str
    input_json: Sequence[str]


def _event(name: str, data: dict[str, Any]) -> bytes:
    return sse({"type": name, **data}, event=name)


def message_stream(
    *text: str,
    tool_uses: Sequence[ToolUseSpec] = (),
    usage: tuple[int, int] = (25, 9),
    stop_reason: str | None = None,
) -> list[bytes]:
    """The SSE frames of one streamed message: a text block, then tool_use blocks."""
    input_tokens, output_tokens = usage
    frames = [
        _event(
            "message_start",
            {
                "message": {
                    "id": "msg_test123",
                    "type": "message",
                    "role": "assistant",
                    "model": MODEL,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": input_tokens,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "output_tokens": 1,
                    },
                }
            },
        ),
        sse({"type": "ping"}, event="ping"),
    ]
    index = 0
    if text:
        frames.append(
            _event(
                "content_block_start",
                {"index": index, "content_block": {"type": "text", "text": ""}},
            )
        )
        frames += [
            _event(
                "content_block_delta",
                {"index": index, "delta": {"type": "text_delta", "text": piece}},
            )
            for piece in text
        ]
        frames.append(_event("content_block_stop", {"index": index}))
        index += 1
    for use in tool_uses:
        frames.append(
            _event(
                "content_block_start",
                {
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": use.id,
                        "name": use.name,
                        "input": {},
                    },
                },
            )
        )
        frames += [
            _event(
                "content_block_delta",
                {"index": index, "delta": {"type": "input_json_delta", "partial_json": fragment}},
            )
            for fragment in ("", *use.input_json)
        ]
        frames.append(_event("content_block_stop", {"index": index}))
        index += 1
    frames.append(
        _event(
            "message_delta",
            {
                "delta": {
                    "stop_reason": stop_reason or ("tool_use" if tool_uses else "end_turn"),
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": output_tokens},
            },
        )
    )
    frames.append(_event("message_stop", {}))
    return frames


def stream(
    *text: str, cut_after: int | None = None, end_early: bool = False, **kw: Any
) -> StreamReply:
    """A `StreamReply` of `message_stream(...)`, optionally cut after `cut_after` frames."""
    return StreamReply(tuple(message_stream(*text, **kw)), cut_after=cut_after, end_early=end_early)


def error_event(kind: str = "overloaded_error", message: str = "Overloaded") -> bytes:
    """An `event: error` frame, as the API sends when it fails inside a 200 stream."""
    return sse({"type": "error", "error": {"type": kind, "message": message}}, event="error")


def anthropic_error(
    status: int, message: str, *, kind: str = "api_error", retry_after_ms: int | None = None
) -> ErrorReply:
    """An error response shaped like Anthropic's (`{"type": "error", "error": {...}}`)."""
    headers = (("retry-after-ms", str(retry_after_ms)),) if retry_after_ms is not None else ()
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return ErrorReply(status, body, (*headers, ("request-id", "req_test")))


class AnthropicServer(ScriptedHTTPServer):
    """Answers `POST /v1/messages`; give the SDK `base_url` (it appends `/v1/messages`)."""

    endpoint = "/v1/messages"

    def check(self, body: Any) -> ErrorReply | None:
        return tool_use_order_error(body)


def tool_use_order_error(body: Any) -> ErrorReply | None:
    """Anthropic's rule for tool use, as the API enforces it: the message after an
    assistant message with `tool_use` blocks is a user message with a `tool_result`
    block for each of them, and a `tool_result` answers a `tool_use` of the message
    before it. A history that breaks it is an HTTP 400 worded as the API words it."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return None
    uses: list[str] = []  # tool_use ids of the previous (assistant) message
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        results = [str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"]
        unexpected = [r for r in results if r not in uses]
        if message.get("role") == "user" and unexpected:
            return anthropic_error(
                400,
                f"messages.{index}.content.0: unexpected `tool_use_id` found in `tool_result` "
                f"blocks: {', '.join(unexpected)}. Each `tool_result` block must have a "
                "corresponding `tool_use` block in the previous message.",
                kind="invalid_request_error",
            )
        missing = [use for use in uses if use not in results]
        if missing:
            return _unanswered(missing, index - 1)
        is_assistant = message.get("role") == "assistant"
        uses = (
            [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
            if is_assistant
            else []
        )
    return _unanswered(uses, len(messages) - 1) if uses else None


def _unanswered(ids: Sequence[str], index: int) -> ErrorReply:
    return anthropic_error(
        400,
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately "
        f"after: {', '.join(ids)}. Each `tool_use` block must have a corresponding "
        "`tool_result` block in the next message.",
        kind="invalid_request_error",
    )
