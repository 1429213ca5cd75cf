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
