"""What the SDK-backed providers share: the one retry before output, argument parsing,
error wording (context overflow included) and the effective `tool_choice`.

Kept free of SDK imports so both providers (and the scripted one) can use it without
pulling in the other vendor's package.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any

from assembler.errors import ContextOverflowError, ProviderError
from assembler.messages import (
    ForcedTool,
    ModelRequest,
    ModelSettings,
    StreamEvent,
    ToolCall,
    ToolChoice,
    ToolResultMessage,
    UserMessage,
    to_plain,
)
from assembler.text import json_type_name, one_line

ERROR_LIMIT = 400
"""Longest error line: long enough for a server's validation message to stay useful."""


class StreamInterrupted(Exception):
    """The response stream broke: cut, error event, or ended before it was complete.

    Raised inside one attempt; `stream_with_one_retry` decides whether that attempt may
    be repeated (nothing was yielded yet) or must become a `ProviderError`.
    """


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
        return None, f"arguments must be a JSON object, not {json_type_name(value)}"
    return value, ""


def tool_call_from_raw(call_id: str, name: str, raw: str) -> ToolCall:
    """Build a `ToolCall` from the raw argument text the model produced."""
    arguments, error = parse_tool_arguments(raw)
    return ToolCall(
        id=call_id, name=name, arguments=arguments, raw_arguments=raw, arguments_error=error
    )


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
    return one_line(text, ERROR_LIMIT)


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


_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_OVERFLOW_PHRASES = (
    "prompt is too long",  # Anthropic
    "exceed context limit",  # Anthropic: input length and `max_tokens` exceed context limit
    "maximum context length",  # OpenAI, vLLM
    "context_length_exceeded",
    "context length exceeded",
    "exceeds the available context size",  # llama.cpp's llama-server
    "greater than the context length",  # LM Studio
)
_OVERFLOW_FIGURES = (
    # (prompt tokens, window) in the order each message states them
    re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)"),
    re.compile(r"prompt is too long: (\d+) tokens > (\d+)"),
    re.compile(r"exceed context limit: (\d+) \+ \d+ > (\d+)"),
)
_OPENAI_FIGURES = re.compile(
    r"maximum context length is (\d+) tokens.*?(?:resulted in|requested) (\d+) tokens", re.S
)


def context_overflow(
    name: str, status: int, body: object, detail: str, description: str
) -> ContextOverflowError | None:
    """A `ContextOverflowError` when an error response says the prompt is too long for
    the context window (OpenAI `context_length_exceeded`, Anthropic `prompt is too
    long`, llama-server `exceed_context_size_error`, ...), else None.

    `detail` is the server's message, `description` the line shown to the user. The
    token figures come from the body's fields (llama-server's `n_prompt_tokens`,
    `n_ctx`) or the message, when the server gives them.
    """
    if status not in (400, 413, 422):
        return None
    inner = body.get("error", body) if isinstance(body, Mapping) else None
    fields = inner if isinstance(inner, Mapping) else {}
    codes = {str(fields.get("code", "")), str(fields.get("type", ""))}
    lowered = detail.lower()
    if not (codes & _OVERFLOW_CODES or any(p in lowered for p in _OVERFLOW_PHRASES)):
        return None
    prompt, window = _overflow_figures(fields, detail)
    return ContextOverflowError(
        f"{name}: the prompt is too long for the model's context window: {description}",
        prompt_tokens=prompt,
        context_window=window,
    )


def _overflow_figures(fields: Mapping[str, Any], detail: str) -> tuple[int | None, int | None]:
    """(prompt tokens, context window) from llama-server's fields or the message."""
    prompt, window = fields.get("n_prompt_tokens"), fields.get("n_ctx")
    if isinstance(prompt, int) and isinstance(window, int):
        return prompt, window
    for pattern in _OVERFLOW_FIGURES:
        found = pattern.search(detail)
        if found:
            return int(found[1]), int(found[2])
    found = _OPENAI_FIGURES.search(detail)
    if found:
        return int(found[2]), int(found[1])
    return None, None


def effective_tool_choice(request: ModelRequest, default: ToolChoice | None) -> ToolChoice | None:
    """The `tool_choice` to send with `request`, or None to send none (server default).

    The request's own setting wins over the manifest's (`default`). Nothing is sent
    without tools: OpenAI refuses `tool_choice` alone. `required` and a forced tool
    apply until the model has called a tool for the latest user message; the requests
    that carry tool results go without, as openai-agents' `reset_tool_choice` does,
    or a forced tool would be called again every turn until `max_turns`. A forced tool
    that the request does not offer is a `ProviderError` naming the tools there are,
    rather than an opaque rejection from the server.
    """
    choice = request.settings.tool_choice or default
    if choice is None or not request.tools:
        return None
    if choice in ("auto", "none"):
        return choice
    if _answered_tools(request):
        return None
    if isinstance(choice, ForcedTool):
        names = [tool.name for tool in request.tools]
        if choice.name not in names:
            raise ProviderError(
                f"model.tool_choice names the tool `{choice.name}`, which this agent does "
                f"not have; its tools: {', '.join(names)}"
            )
    return choice


def _answered_tools(request: ModelRequest) -> bool:
    """Whether a tool result follows the latest user message (the model called tools)."""
    for message in reversed(request.messages):
        if isinstance(message, ToolResultMessage):
            return True
        if isinstance(message, UserMessage):
            return False
    return False


def describe_cause(e: BaseException) -> str:
    """The innermost useful text of an exception chain (`ConnectError: ...`)."""
    cause: BaseException = e
    while cause.__cause__ is not None:
        cause = cause.__cause__
    text = str(cause) or type(cause).__name__
    return one_line(text if cause is e else f"{type(cause).__name__}: {text}", ERROR_LIMIT)


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

    def _tool_choice(self, request: ModelRequest) -> ToolChoice | None:
        """What to send as `tool_choice` (None: nothing); see `effective_tool_choice`."""
        return effective_tool_choice(request, self.settings.tool_choice)

    def _sampling(self, request: ModelRequest) -> tuple[float | None, int | None, dict[str, Any]]:
        """Temperature, token limit and extra body fields: the request's own settings
        win field by field over the manifest's."""
        temperature = request.settings.temperature
        if temperature is None:
            temperature = self.settings.temperature
        max_tokens = request.settings.max_tokens or self.settings.max_tokens
        extra = {**to_plain(self.settings.extra), **to_plain(request.settings.extra)}
        return temperature, max_tokens, extra
