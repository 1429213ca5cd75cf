"""What the SDK-backed providers share: the one retry before output, argument parsing.

Kept free of SDK imports so both providers (and the scripted one) can use it without
pulling in the other vendor's package.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from assembler.errors import ProviderError
from assembler.messages import ModelRequest, ModelSettings, StreamEvent, ToolCall

_MAX_MESSAGE = 400


class StreamInterrupted(Exception):
    """The response stream broke: cut, error event, or ended before it was complete.

    Raised inside one attempt; `stream_with_one_retry` decides whether that attempt may
    be repeated (nothing was yielded yet) or must become a `ProviderError`.
    """


def one_line(text: str, limit: int = _MAX_MESSAGE) -> str:
    """Collapse whitespace so an error fits on one line, and cap its length."""
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def parse_tool_arguments(raw: str) -> tuple[dict[str, Any] | None, str]:
    """Parse a model's tool arguments: `(object, "")` or `(None, why it is unusable)`.

    An empty string counts as `{}`: several OpenAI-compatible servers send nothing for a
    tool without parameters.
    """
    if not raw.strip():
        return {}, ""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        return None, f"arguments are not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, not {_json_type(value)}"
    return value, ""


def tool_call_from_raw(call_id: str, name: str, raw: str) -> ToolCall:
    """Build a `ToolCall` from the raw argument text the model produced."""
    arguments, error = parse_tool_arguments(raw)
    return ToolCall(
        id=call_id, name=name, arguments=arguments, raw_arguments=raw, arguments_error=error
    )


def to_plain(value: Any) -> Any:
    """Deep-copy mappings and sequences into dicts and lists, as the SDKs serialise them."""
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [to_plain(v) for v in value]
    return value


async def stream_with_one_retry(
    name: str, attempt: Callable[[], AsyncGenerator[StreamEvent, None]]
) -> AsyncIterator[StreamEvent]:
    """Run `attempt`, repeating it once if its stream breaks before anything was yielded.

    The SDKs retry failed requests themselves, but not a stream that breaks after the
    response started. Before the first event nothing has reached the caller, so one more
    try is invisible and safe; after that a retry would duplicate output, so it fails.
    """
    for try_number in (1, 2):
        yielded = False
        try:
            async with aclosing(attempt()) as events:
                async for event in events:
                    yielded = True
                    yield event
            return
        except StreamInterrupted as e:
            if yielded:
                raise ProviderError(
                    f"{name}: the response stream broke after output had started: {e}"
                ) from (e.__cause__ or e)
            if try_number == 2:
                raise ProviderError(
                    f"{name}: the response stream broke before any output, twice: {e}"
                ) from (e.__cause__ or e)


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null"


_STATUS_PHRASES = {
    400: "the request was rejected",
    401: "authentication failed",
    402: "payment required",
    403: "permission denied",
    404: "not found",
    408: "the request timed out",
    409: "conflict",
    413: "the request is too large",
    422: "the request was rejected",
    429: "rate limited",
    529: "the service is overloaded",
}
_STATUS_HINTS = {
    401: "check the API key",
    403: "check the API key's permissions",
    404: "check the model name and base_url",
}


def describe_status(status: int, detail: str, retries: int) -> str:
    """`rate limited (HTTP 429, gave up after 2 retries): <server's message>`."""
    phrase = _STATUS_PHRASES.get(status) or (
        "server error" if status >= 500 else "the request failed"
    )
    retried = status in (408, 409, 429) or status >= 500
    tail = f", gave up after {retries} retries" if retried and retries else ""
    text = f"{phrase} (HTTP {status}{tail})"
    if detail:
        text += f": {detail}"
    if status in _STATUS_HINTS:
        text += f" ({_STATUS_HINTS[status]})"
    return one_line(text)


def error_detail(body: object, fallback: str) -> str:
    """The human part of an error body: `error.message`, `message`, or the raw text."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            message = inner.get("message")
            if isinstance(message, str) and message:
                return message
        elif isinstance(inner, str) and inner:
            return inner
    if isinstance(body, str) and body.strip():
        return body
    return fallback


def describe_cause(e: BaseException) -> str:
    """The innermost useful text of an exception chain (`ConnectError: ...`)."""
    cause: BaseException = e
    while cause.__cause__ is not None:
        cause = cause.__cause__
    text = str(cause) or type(cause).__name__
    return one_line(text if cause is e else f"{type(cause).__name__}: {text}")


class SDKProvider(ABC):
    """What the SDK-backed providers share: their name, the one-retry stream, closing
    the client, and merging the manifest's settings with a request's.

    A subclass calls `super().__init__`, sets `_client` (with an async `close()`), and
    implements `_attempt(request)`: one request and its stream.
    """

    _client: Any

    def __init__(self, model: str, settings: ModelSettings | None, provider_name: str) -> None:
        self.model = model
        self.settings = settings or ModelSettings()
        self._name = f"{provider_name}:{model}"

    @property
    def name(self) -> str:
        return self._name

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return stream_with_one_retry(self._name, lambda: self._attempt(request))

    async def aclose(self) -> None:
        await self._client.close()

    @abstractmethod
    def _attempt(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        """One request and its stream; a break while reading raises `StreamInterrupted`."""

    def _sampling(self, request: ModelRequest) -> tuple[float | None, int | None, dict[str, Any]]:
        """Temperature, token limit and extra body fields: the request's own settings
        win field by field over the manifest's."""
        temperature = request.settings.temperature
        if temperature is None:
            temperature = self.settings.temperature
        max_tokens = request.settings.max_tokens or self.settings.max_tokens
        extra = {**to_plain(self.settings.extra), **to_plain(request.settings.extra)}
        return temperature, max_tokens, extra
