"""A loopback server speaking OpenAI Chat Completions streaming, with scripted replies.

Streams are built the way the API sends them: a first chunk with the role, content
chunks, tool-call chunks (id and name first, then argument fragments, keyed by
`index`), a chunk with `finish_reason`, a usage chunk with empty `choices` (because
of `stream_options.include_usage`), then `data: [DONE]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wire._server import ErrorReply, RecordedRequest, ScriptedHTTPServer, StreamReply, sse

__all__ = [
    "DONE",
    "OpenAIServer",
    "RecordedRequest",
    "StreamReply",
    "ToolCallSpec",
    "chat_stream",
    "delta_frame",
    "openai_error",
    "stream",
    "tool_call_order_error",
]

DONE = b"data: [DONE]\n\n"
MODEL = "gpt-test"


@dataclass(frozen=True)
class ToolCallSpec:
    """A tool call as the server streams it: `arguments` is a list of raw fragments."""

    id: str
    name: str
    arguments: Sequence[str]


def _chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test123",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "system_fingerprint": "fp_test",
        "choices": choices,
        **extra,
    }


def delta_frame(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    """One `chat.completion.chunk` frame for choice 0, for hand-built streams."""
    return sse(
        _chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}])
    )


def chat_stream(
    *text: str,
    tool_calls: Sequence[ToolCallSpec] = (),
    usage: tuple[int, int] | None = (11, 7),
    finish_reason: str | None = None,
) -> list[bytes]:
    """The SSE frames of one streamed reply: text pieces, then tool calls, then usage."""
    frames = [
        delta_frame(
            {"role": "assistant", "content": "" if not tool_calls else None, "refusal": None}
        )
    ]
    frames += [delta_frame({"content": piece}) for piece in text]
    for index, call in enumerate(tool_calls):
        frames.append(
            delta_frame(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        frames += [
            delta_frame({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
            for fragment in call.arguments
        ]
    frames.append(delta_frame({}, finish_reason or ("tool_calls" if tool_calls else "stop")))
    if usage is not None:
        prompt, completion = usage
        frames.append(
            sse(
                _chunk(
                    [],
                    usage={
                        "prompt_tokens": prompt,
                        "completion_tokens": completion,
                        "total_tokens": prompt + completion,
                    },
                )
            )
        )
    frames.append(DONE)
    return frames


def stream(
    *text: str, cut_after: int | None = None, end_early: bool = False, **kw: Any
) -> StreamReply:
    """A `StreamReply` of `chat_stream(...)`, optionally cut after `cut_after` frames."""
    return StreamReply(tuple(chat_stream(*text, **kw)), cut_after=cut_after, end_early=end_early)


def openai_error(
    status: int, message: str, *, kind: str = "server_error", retry_after_ms: int | None = None
) -> ErrorReply:
    """An error response shaped like OpenAI's (`{"error": {...}}`)."""
    headers = (("retry-after-ms", str(retry_after_ms)),) if retry_after_ms is not None else ()
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return ErrorReply(status, body, (*headers, ("x-request-id", "req_test")))


class OpenAIServer(ScriptedHTTPServer):
    """Answers `POST /v1/chat/completions`; give the SDK `base_url`."""

    endpoint = "/v1/chat/completions"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def check(self, body: Any) -> ErrorReply | None:
        return tool_call_order_error(body)


def tool_call_order_error(body: Any) -> ErrorReply | None:
    """OpenAI's rule for tool calls, as the API enforces it: an assistant message with
    `tool_calls` is followed by one `tool` message per call id before any other
    message, and a `tool` message answers a call of the assistant message before it.
    A history that breaks it is an HTTP 400 worded as the API words it."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return None
    waiting: list[str] = []  # call ids of the last assistant message still unanswered
    answerable: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in answerable:
                return openai_error(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    kind="invalid_request_error",
                )
            if call_id in waiting:
                waiting.remove(call_id)
            continue
        if waiting:
            return _unanswered(waiting, index)
        answerable = set()
        if role == "assistant" and message.get("tool_calls"):
            waiting = [str(call.get("id")) for call in message["tool_calls"]]
            answerable = set(waiting)
    return _unanswered(waiting, len(messages)) if waiting else None


def _unanswered(call_ids: Sequence[str], index: int) -> ErrorReply:
    return openai_error(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(call_ids),
        kind="invalid_request_error",
    )
