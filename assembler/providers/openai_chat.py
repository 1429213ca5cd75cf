"""OpenAI Chat Completions, and every server that speaks it, through the official SDK.

Chat Completions (not the Responses API) because it is what compatible servers
implement: with `base_url` the same provider drives Ollama, vLLM, llama.cpp, LM Studio
or OpenRouter. Retries and timeouts are the SDK's; this module adds only one retry of
a stream that breaks before its first event (see `stream_with_one_retry`).

What real compatible servers do differently, and how it is met (recorded exchanges in
`tests/data/wire/`): llama-cpp-python repeats a tool call's `name` in every chunk, so
the name is taken once and only arguments are joined; it refuses an assistant message
whose `content` is null, so tool-call messages carry `""`; some servers send no usage
or refuse `stream_options`, so usage is asked for and the request repeated once
without it when the server names that field in its refusal. A typed answer
(`request.output`) is asked for with strict `response_format` where it can be (see
`_native`); a server that refuses the field gets the request again with the
`final_answer` tool, and never the field again.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI, not_given, omit
from openai.types import CompletionUsage
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
    ChatCompletionToolChoiceOptionParam,
)
from openai.types.chat.chat_completion_chunk import ChoiceDelta
from openai.types.shared_params import ResponseFormatJSONSchema

from assembler.errors import ProviderError
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    ForcedTool,
    ModelRequest,
    ModelSettings,
    OutputRequest,
    Reasoning,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolChoice,
    ToolResultMessage,
    Usage,
    UserMessage,
    to_plain,
)
from assembler.providers._common import (
    ERROR_LIMIT,
    SDKProvider,
    StreamInterrupted,
    context_overflow,
    describe_cause,
    describe_status,
    error_detail,
    tool_call_from_raw,
)
from assembler.providers.endpoints import (
    OFFICIAL_BASE_URLS,
    is_official_openai,
    unreachable_hint,
)
from assembler.text import one_line
from assembler.urls import display_url

__all__ = ["OpenAIChatProvider"]


_ChunkStream = openai.AsyncStream[ChatCompletionChunk]

_LEGACY_INDEX = -1
"""Where a legacy `function_call` delta (no `tool_calls`) is assembled."""


@dataclass
class _PartialCall:
    """A tool call being assembled from deltas that share one `index` (and one id)."""

    index: int
    order: int
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _CallAssembler:
    """Joins streamed tool-call deltas into calls.

    The name is set once, by the first delta that has one: llama-cpp-python (and
    LiteLLM passing it through) repeat `"name"` in every chunk, and joining those
    turned `ls` into `lslsls...`. Only arguments stream. A delta that brings a new id
    at an index already in use starts another call rather than mixing two. A legacy
    `function_call` delta counts only when the chunk has no `tool_calls`, since
    llama-cpp-python sends the same call in both.
    """

    def __init__(self) -> None:
        self._by_index: dict[int, _PartialCall] = {}
        self._calls: list[_PartialCall] = []

    def add(self, delta: ChoiceDelta) -> None:
        if delta.tool_calls:
            for tc in delta.tool_calls:
                function = tc.function
                self._piece(
                    tc.index,
                    tc.id or "",
                    function.name or "" if function else "",
                    function.arguments or "" if function else "",
                )
        elif delta.function_call is not None:
            legacy = delta.function_call
            self._piece(_LEGACY_INDEX, "", legacy.name or "", legacy.arguments or "")

    def _piece(self, index: int, call_id: str, name: str, arguments: str) -> None:
        partial = self._by_index.get(index)
        if partial is None or (call_id and partial.id and call_id != partial.id):
            partial = _PartialCall(index, len(self._calls))
            self._by_index[index] = partial
            self._calls.append(partial)
        if call_id and not partial.id:
            partial.id = call_id
        if name and not partial.name:
            partial.name = name
        if arguments:
            partial.arguments.append(arguments)

    def calls(self) -> tuple[ToolCall, ...]:
        ordered = sorted(self._calls, key=lambda p: (p.index, p.order))
        return tuple(
            tool_call_from_raw(
                p.id or f"call_{uuid.uuid4().hex[:24]}", p.name, "".join(p.arguments)
            )
            for p in ordered
        )


class OpenAIChatProvider(SDKProvider):
    """A `ModelProvider` for the Chat Completions API (`openai:<model>`).

    `settings` are defaults; a request's own settings win field by field. The token
    limit goes as `max_completion_tokens` to api.openai.com (its newer models require
    it) and as `max_tokens` to every other server (what compatible servers read).
    `base_url` None means api.openai.com: the SDK is always given the URL, so it never
    picks `OPENAI_BASE_URL` up behind the project's back (see `effective_base_url`).
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        settings: ModelSettings | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        default_headers: Mapping[str, str] | None = None,
        provider_name: str = "openai",
        shown_url: str | None = None,
    ) -> None:
        """`shown_url`: how messages name the endpoint (the manifest's `base_url` as
        written, `${VAR}` values left out); by default the URL without credentials."""
        super().__init__(model, settings, provider_name)
        self._shown_url = shown_url
        self._official = is_official_openai(base_url)
        self._include_usage = True
        self._native_output = True
        """Ask for a typed answer with `response_format` (until a server refuses it)."""
        self._max_retries = openai.DEFAULT_MAX_RETRIES if max_retries is None else max_retries
        try:
            self._client = AsyncOpenAI(
                api_key=api_key,
                base_url=base_url or OFFICIAL_BASE_URLS["openai"],
                max_retries=self._max_retries,
                timeout=not_given if timeout is None else timeout,
                default_headers=default_headers,
            )
        except openai.OpenAIError as e:
            raise ProviderError(f"{self._name}: {one_line(str(e), ERROR_LIMIT)}") from e

    async def _attempt(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        """One request and its stream; a break while reading raises `StreamInterrupted`."""
        try:
            stream, native = await self._create_with_fallbacks(request)
        except openai.OpenAIError as e:
            raise self._error(e) from e

        text: list[str] = []
        thoughts: list[str] = []
        calls = _CallAssembler()
        usage = Usage()
        finish_reason = ""
        chunks = 0
        try:
            async with stream:
                async for chunk in stream:
                    chunks += 1
                    if chunk.usage is not None:
                        usage = _usage(chunk.usage)
                    for thought in _reasoning(chunk):
                        thoughts.append(thought)
                        yield ReasoningDelta(thought)
                    for piece in _read_chunk(chunk, calls):
                        text.append(piece)
                        yield TextDelta(piece)
                    finish_reason = _finish_reason(chunk) or finish_reason
        except (openai.OpenAIError, httpx2.HTTPError, json.JSONDecodeError) as e:
            raise StreamInterrupted(self._describe(e, streaming=True)) from e
        if not chunks:
            raise StreamInterrupted(
                "the server sent an empty response (llama-cpp-python does this when its chat "
                "template fails or the prompt exceeds its context size)"
            )
        if not finish_reason:
            raise StreamInterrupted("the stream ended before the response was complete")
        reasoning = (Reasoning(kind="text", text="".join(thoughts)),) if thoughts else ()
        yield ResponseDone(
            message=AssistantMessage(
                text="".join(text), tool_calls=calls.calls(), reasoning=reasoning
            ),
            usage=usage,
            stop_reason=finish_reason,
            output_via=("native" if native else "tool") if request.output is not None else "",
        )

    async def _create_with_fallbacks(self, request: ModelRequest) -> tuple[_ChunkStream, bool]:
        """The request, repeated once without a field the server refused: usage in the
        stream (`stream_options`), or the typed answer's `response_format` (asked for
        with the `final_answer` tool instead, from then on)."""
        while True:
            native = self._native(request)
            try:
                return await self._create(request, native), native is not None
            except openai.APIStatusError as e:
                if self._include_usage and _refuses_stream_options(e):
                    # Usage is worth asking for, not worth failing over: ask no more.
                    self._include_usage = False
                elif native is not None and _refuses_response_format(e):
                    self._native_output = False
                else:
                    raise

    def _native(self, request: ModelRequest) -> OutputRequest | None:
        """The typed answer to ask for with `response_format` (the reply's text is the
        answer), or None to leave it to the `final_answer` tool the request holds.

        Native only when the schema has a strict form, and, on a server other than
        api.openai.com, only when the answer is all there is to do: compatible servers
        implement `response_format` by constraining the whole reply with a grammar,
        which leaves a model no way to call a tool (llama.cpp's server refuses the two
        together, or rewrites the tool format)."""
        output = request.output
        if output is None or not output.native or output.strict_schema is None:
            return None
        if not self._native_output:
            return None
        if not self._official and any(t.name != output.tool for t in request.tools):
            return None
        return output

    async def _create(self, request: ModelRequest, native: OutputRequest | None) -> _ChunkStream:
        temperature, max_tokens, extra = self._sampling(request)
        choice = self._tool_choice(request)
        schemas = request.tools
        if native is not None:  # the answer comes as text: its tool is not offered
            schemas = tuple(t for t in schemas if t.name != native.tool)
            if not schemas or (isinstance(choice, ForcedTool) and choice.name == native.tool):
                choice = None
        tools = [_tool_param(t.name, t.description, t.parameters) for t in schemas]
        stream: _ChunkStream = await self._client.chat.completions.create(
            model=request.model or self.model,
            messages=_messages(request),
            stream=True,
            stream_options={"include_usage": True} if self._include_usage else omit,
            tools=tools if tools else omit,
            tool_choice=omit if choice is None else _tool_choice_param(choice),
            response_format=omit if native is None else _response_format(native),
            temperature=omit if temperature is None else temperature,
            max_tokens=max_tokens if max_tokens and not self._official else omit,
            max_completion_tokens=max_tokens if max_tokens and self._official else omit,
            reasoning_effort=self._reasoning_effort(request),
            extra_body=extra or None,
        )
        return stream

    def _reasoning_effort(self, request: ModelRequest) -> Any:
        """`model.reasoning_effort` (the request's own first), or nothing."""
        effort = request.settings.reasoning_effort or self.settings.reasoning_effort
        return effort if effort else omit

    def _error(self, e: openai.OpenAIError) -> ProviderError:
        """The error for a failed request: a context overflow has its own type."""
        description = self._describe(e)
        if isinstance(e, openai.APIStatusError):
            overflow = context_overflow(
                self._name, e.status_code, e.body, error_detail(e.body, e.message), description
            )
            if overflow is not None:
                return overflow
        return ProviderError(f"{self._name}: {description}")

    def _describe(self, e: BaseException, *, streaming: bool = False) -> str:
        """One readable line for an SDK or transport error."""
        if isinstance(e, openai.APIStatusError):
            detail = error_detail(e.body, e.message)
            return describe_status(e.status_code, detail, self._max_retries)
        if isinstance(e, openai.APITimeoutError):
            return "timed out while reading the response" if streaming else "the request timed out"
        if streaming and isinstance(e, openai.APIConnectionError | httpx2.HTTPError):
            return f"connection lost: {describe_cause(e)}"
        if isinstance(e, openai.APIConnectionError):
            url = str(self._client.base_url)
            hint = unreachable_hint(self._name.partition(":")[0], url)
            shown = self._shown_url or display_url(url)
            said = f"cannot reach {shown}: {describe_cause(e)}"
            return f"{said} ({hint})" if hint else said
        if isinstance(e, openai.APIError):
            detail = error_detail(e.body, e.message)
            return one_line(f"the server reported an error: {detail}", ERROR_LIMIT)
        return describe_cause(e)


def _messages(request: ModelRequest) -> list[ChatCompletionMessageParam]:
    """The conversation in Chat Completions form, the system prompt first."""
    out: list[ChatCompletionMessageParam] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for message in request.messages:
        if isinstance(message, UserMessage | ContextMessage):
            out.append({"role": "user", "content": message.content})
        elif isinstance(message, AssistantMessage):
            out.append(_assistant(message))
        elif isinstance(message, ToolResultMessage):
            out.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            )
    return out


def _read_chunk(chunk: ChatCompletionChunk, calls: _CallAssembler) -> list[str]:
    """Choice 0 of `chunk`: its tool-call deltas go to `calls`, its text (content and
    refusal) is returned."""
    pieces: list[str] = []
    for choice in chunk.choices:
        if choice.index != 0:
            continue
        delta = choice.delta
        pieces.extend(piece for piece in (delta.content, delta.refusal) if piece)
        calls.add(delta)
    return pieces


_REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Where compatible servers stream a reasoning model's thinking: `reasoning_content`
(llama.cpp's llama-server, DeepSeek, vLLM before 0.10) or `reasoning` (vLLM since,
OpenRouter). Not part of OpenAI's own schema, so read from the delta's extra fields."""


def _reasoning(chunk: ChatCompletionChunk) -> list[str]:
    """The reasoning text of choice 0 in `chunk` (one field per chunk: a server that
    sends both repeats itself)."""
    for choice in chunk.choices:
        if choice.index != 0:
            continue
        extra = choice.delta.model_extra or {}
        for name in _REASONING_FIELDS:
            value = extra.get(name)
            if isinstance(value, str) and value:
                return [value]
    return []


def _finish_reason(chunk: ChatCompletionChunk) -> str:
    return next((c.finish_reason for c in chunk.choices if c.index == 0 and c.finish_reason), "")


def _usage(usage: CompletionUsage) -> Usage:
    """`prompt_tokens` already counts the cached ones (`prompt_tokens_details`)."""
    details = usage.prompt_tokens_details
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=(details.cached_tokens or 0) if details else 0,
        cache_write_tokens=(details.cache_write_tokens or 0) if details else 0,
    )


def _refuses_stream_options(e: openai.APIStatusError) -> bool:
    """Whether the server refused the request because of `stream_options` (a server
    that validates strictly and does not know the field names it in its error)."""
    return 400 <= e.status_code < 600 and "stream_options" in f"{e.body} {e.message}"


def _refuses_response_format(e: openai.APIStatusError) -> bool:
    """Whether the server refused the request because of `response_format`: OpenAI
    names it when a schema is not accepted, llama.cpp's server when it knows only
    `json_object` or cannot turn the schema into a grammar."""
    said = f"{e.body} {e.message}".lower()
    return 400 <= e.status_code < 500 and any(
        word in said for word in ("response_format", "json_schema", "json schema")
    )


def _response_format(output: OutputRequest) -> ResponseFormatJSONSchema:
    """Strict structured output: the reply's text is JSON of the strict schema."""
    assert output.strict_schema is not None
    return {
        "type": "json_schema",
        "json_schema": {
            "name": output.tool,
            "schema": to_plain(output.strict_schema),
            "strict": True,
        },
    }


def _tool_choice_param(choice: ToolChoice) -> ChatCompletionToolChoiceOptionParam:
    if isinstance(choice, ForcedTool):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def _assistant(message: AssistantMessage) -> ChatCompletionAssistantMessageParam:
    # `content` is always a string, "" beside tool calls: llama-cpp-python's server
    # refuses null (HTTP 500), and without the field its chat template fails.
    param: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": message.text}
    if message.tool_calls:
        param["tool_calls"] = [_tool_call_param(call) for call in message.tool_calls]
    return param


def _tool_call_param(call: ToolCall) -> ChatCompletionMessageFunctionToolCallParam:
    # A malformed call goes back as the model wrote it: the tool result explains the error.
    arguments = (
        json.dumps(to_plain(call.arguments), ensure_ascii=False)
        if call.arguments is not None
        else call.raw_arguments
    )
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def _tool_param(
    name: str, description: str, parameters: Mapping[str, Any]
) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": to_plain(parameters),
        },
    }
