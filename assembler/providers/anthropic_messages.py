"""Anthropic's Messages API through the official SDK, streamed as raw events.

Raw events (`messages.create(stream=True)`) rather than the SDK's `messages.stream`
helper: the provider needs only text deltas, `input_json_delta` pieces and usage, and
handling them directly keeps a malformed tool input a `ToolCall` with an error instead
of an exception. Retries and timeouts are the SDK's; this module adds only one retry of
a stream that breaks before its first event.

A LiteLLM proxy in front of an OpenAI-compatible server turns one streamed tool call
into many `tool_use` blocks sharing one id, each holding a fragment of the input
(`tests/data/wire/litellm/`): blocks with the same id are one call, joined in order.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Literal

import anthropic
import httpx2
from anthropic import AsyncAnthropic, not_given, omit
from anthropic.types import (
    AssistantMessageParam,
    InputJSONDelta,
    MessageParam,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    RedactedThinkingBlock,
    SignatureDelta,
    TextBlock,
    TextBlockParam,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolChoiceParam,
    ToolResultBlockParam,
    ToolUseBlock,
    ToolUseBlockParam,
    UserMessageParam,
)
from anthropic.types import MessageDeltaUsage as AnthropicDeltaUsage
from anthropic.types import Usage as AnthropicUsage

from assembler.errors import ProviderError
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    ForcedTool,
    ModelRequest,
    ModelSettings,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    ToolCall,
    ToolChoice,
    ToolResultMessage,
    Usage,
    UserMessage,
    to_plain,
)
from assembler.messages import TextDelta as TextDeltaEvent
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
from assembler.providers.anthropic_blocks import (
    ThinkingBlocks,
    mark_tail,
    system_blocks,
    thinking_config,
    thinking_params,
    tool_params,
)
from assembler.providers.endpoints import OFFICIAL_BASE_URLS, unreachable_hint
from assembler.text import one_line
from assembler.urls import display_url

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider"]

DEFAULT_MAX_TOKENS = 4096
"""The Messages API requires `max_tokens`; this is used when the manifest sets none."""

_Block = TextBlockParam | ToolUseBlockParam | ToolResultBlockParam


@dataclass
class _Turn:
    role: Literal["user", "assistant"]
    blocks: list[_Block] = field(default_factory=list)


@dataclass
class _ToolUseBlock:
    """One `tool_use` content block: its start `input`, then `input_json_delta` pieces."""

    initial_input: dict[str, object]
    fragments: list[str] = field(default_factory=list)

    def text(self) -> str:
        if self.fragments:
            return "".join(self.fragments)
        return json.dumps(self.initial_input, ensure_ascii=False) if self.initial_input else ""


@dataclass
class _PartialToolUse:
    """One call: every `tool_use` block of the response that carries its id."""

    id: str
    name: str
    blocks: list[_ToolUseBlock] = field(default_factory=list)

    def call(self) -> ToolCall:
        raw = "".join(block.text() for block in self.blocks)
        if not raw:
            raw = json.dumps(self.blocks[0].initial_input, ensure_ascii=False)
        return tool_call_from_raw(self.id, self.name, raw)


class _ToolUses:
    """The tool calls of one response, by id: a repeated id continues its call, so a
    call split over several blocks (LiteLLM) runs once, with its fragments in order.
    The same id under another tool name cannot be one call: a `ProviderError`."""

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._by_id: dict[str, _PartialToolUse] = {}
        self._by_index: dict[int, _ToolUseBlock] = {}

    def start(self, index: int, block: ToolUseBlock) -> None:
        use = self._by_id.get(block.id)
        if use is None:
            use = self._by_id[block.id] = _PartialToolUse(block.id, block.name)
        elif use.name != block.name:
            raise ProviderError(
                f"{self._provider}: the response has two tool calls with the id {block.id!r} "
                f"but different tools ({use.name}, {block.name}); refusing to guess which "
                "to run"
            )
        part = _ToolUseBlock(dict(block.input))
        use.blocks.append(part)
        self._by_index[index] = part

    def delta(self, index: int, partial_json: str) -> None:
        part = self._by_index.get(index)
        if part is not None and partial_json:
            part.fragments.append(partial_json)

    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(use.call() for use in self._by_id.values())


@dataclass
class _UsageFields:
    """Anthropic's usage as it arrives: `message_start` first, `message_delta` may
    update any field; `input_tokens` there excludes both cache fields."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def update(self, usage: AnthropicUsage | AnthropicDeltaUsage) -> None:
        if usage.input_tokens is not None:
            self.input = usage.input_tokens
        if usage.output_tokens is not None:
            self.output = usage.output_tokens
        if usage.cache_read_input_tokens is not None:
            self.cache_read = usage.cache_read_input_tokens
        if usage.cache_creation_input_tokens is not None:
            self.cache_write = usage.cache_creation_input_tokens

    def usage(self) -> Usage:
        return Usage(
            input_tokens=self.input + self.cache_read + self.cache_write,
            output_tokens=self.output,
            cache_read_tokens=self.cache_read,
            cache_write_tokens=self.cache_write,
        )


class AnthropicProvider(SDKProvider):
    """A `ModelProvider` for the Anthropic Messages API (`anthropic:<model>`).

    `settings` are defaults; a request's own settings win field by field. This SDK
    version has no `temperature` parameter, so it is sent in the request body.
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
        provider_name: str = "anthropic",
        shown_url: str | None = None,
    ) -> None:
        """`shown_url`: how messages name the endpoint (the manifest's `base_url` as
        written, `${VAR}` values left out); by default the URL without credentials."""
        super().__init__(model, settings, provider_name)
        self._shown_url = shown_url
        self._max_retries = anthropic.DEFAULT_MAX_RETRIES if max_retries is None else max_retries
        try:
            self._client = AsyncAnthropic(
                api_key=api_key,
                base_url=base_url or OFFICIAL_BASE_URLS["anthropic"],
                max_retries=self._max_retries,
                timeout=not_given if timeout is None else timeout,
                default_headers=default_headers,
            )
        except (anthropic.AnthropicError, ValueError) as e:
            raise ProviderError(f"{self._name}: {one_line(str(e), ERROR_LIMIT)}") from e

    async def _attempt(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        """One request and its stream; a break while reading raises `StreamInterrupted`."""
        temperature, max_tokens, extra = self._sampling(request)
        max_tokens = max_tokens or DEFAULT_MAX_TOKENS
        choice = self._tool_choice(request)
        thinking = thinking_config(self._thinking_budget(request), max_tokens)
        if thinking is not None:
            _check_thinking_choice(self._name, choice)
        elif temperature is not None:  # with thinking the API takes only its own
            extra.setdefault("temperature", temperature)
        cache = request.settings.cache and self.settings.cache
        tools = tool_params(request, cache)
        system = system_blocks(request, cache)
        messages = _messages(request)
        if cache:
            mark_tail(messages, used=int(bool(tools)) + int(system is not None))
        try:
            stream = await self._client.messages.create(
                model=request.model or self.model,
                max_tokens=max_tokens,
                system=system if system is not None else omit,
                messages=messages,
                tools=tools if tools else omit,
                tool_choice=omit if choice is None else _tool_choice_param(choice),
                thinking=thinking if thinking is not None else omit,
                stream=True,
                extra_body=extra or None,
            )
        except anthropic.AnthropicError as e:
            raise self._error(e) from e

        text: list[str] = []
        tool_uses = _ToolUses(self._name)
        thoughts = ThinkingBlocks()
        usage = _UsageFields()
        stop_reason = ""
        complete = False
        try:
            async with stream:
                async for event in stream:
                    if isinstance(event, RawMessageStartEvent):
                        usage.update(event.message.usage)
                    elif isinstance(event, RawContentBlockStartEvent):
                        block = event.content_block
                        if isinstance(block, ToolUseBlock):
                            tool_uses.start(event.index, block)
                        elif isinstance(block, TextBlock) and block.text:
                            text.append(block.text)
                            yield TextDeltaEvent(block.text)
                        elif isinstance(block, ThinkingBlock | RedactedThinkingBlock):
                            thought = thoughts.start(event.index, block)
                            if thought:
                                yield ReasoningDelta(thought)
                    elif isinstance(event, RawContentBlockDeltaEvent):
                        delta = event.delta
                        if isinstance(delta, TextDelta) and delta.text:
                            text.append(delta.text)
                            yield TextDeltaEvent(delta.text)
                        elif isinstance(delta, InputJSONDelta):
                            tool_uses.delta(event.index, delta.partial_json)
                        elif isinstance(delta, ThinkingDelta | SignatureDelta):
                            thought = thoughts.delta(event.index, delta)
                            if thought:
                                yield ReasoningDelta(thought)
                    elif isinstance(event, RawMessageDeltaEvent):
                        stop_reason = event.delta.stop_reason or stop_reason
                        usage.update(event.usage)
                    elif isinstance(event, RawMessageStopEvent):
                        complete = True
        except (anthropic.AnthropicError, httpx2.HTTPError, json.JSONDecodeError) as e:
            raise StreamInterrupted(self._describe(e, streaming=True)) from e
        if not complete:
            raise StreamInterrupted("the stream ended before the response was complete")

        yield ResponseDone(
            message=AssistantMessage(
                text="".join(text), tool_calls=tool_uses.calls(), reasoning=thoughts.reasoning()
            ),
            usage=usage.usage(),
            stop_reason=stop_reason,
        )

    def _thinking_budget(self, request: ModelRequest) -> int | None:
        """The request's own thinking budget, else the manifest's."""
        return request.settings.thinking_budget or self.settings.thinking_budget

    def _error(self, e: anthropic.AnthropicError) -> ProviderError:
        """The error for a failed request: a context overflow has its own type."""
        description = self._describe(e)
        if isinstance(e, anthropic.APIStatusError):
            detail = e.api_message or error_detail(e.body, e.message)
            overflow = context_overflow(self._name, e.status_code, e.body, detail, description)
            if overflow is not None:
                return overflow
        return ProviderError(f"{self._name}: {description}")

    def _describe(self, e: BaseException, *, streaming: bool = False) -> str:
        """One readable line for an SDK or transport error."""
        if isinstance(e, anthropic.APIStatusError):
            detail = e.api_message or error_detail(e.body, e.message)
            if e.status_code < 400:  # an `error` event inside a 200 stream
                kind = f"{e.type}: " if e.type else ""
                return one_line(f"the server reported an error: {kind}{detail}", ERROR_LIMIT)
            return describe_status(e.status_code, detail, self._max_retries)
        if isinstance(e, anthropic.APITimeoutError):
            return "timed out while reading the response" if streaming else "the request timed out"
        if streaming and isinstance(e, anthropic.APIConnectionError | httpx2.HTTPError):
            return f"connection lost: {describe_cause(e)}"
        if isinstance(e, anthropic.APIConnectionError):
            url = str(self._client.base_url)
            hint = unreachable_hint(self._name.partition(":")[0], url)
            shown = self._shown_url or display_url(url)
            said = f"cannot reach {shown}: {describe_cause(e)}"
            return f"{said} ({hint})" if hint else said
        return describe_cause(e)


def _check_thinking_choice(name: str, choice: ToolChoice | None) -> None:
    """Extended thinking works with `auto` and `none` only: the API refuses a forced
    tool beside it, so say which setting to change instead of passing its 400 on."""
    if choice is not None and choice not in ("auto", "none"):
        raise ProviderError(
            f"{name}: `model.thinking` cannot be combined with `tool_choice: "
            f"{_choice_text(choice)}` (the Messages API allows only auto or none with "
            "extended thinking)"
        )


def _choice_text(choice: ToolChoice) -> str:
    return f"{{tool: {choice.name}}}" if isinstance(choice, ForcedTool) else str(choice)


def _tool_choice_param(choice: ToolChoice) -> ToolChoiceParam:
    if isinstance(choice, ForcedTool):
        return {"type": "tool", "name": choice.name}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    return {"type": "auto"}


def _messages(request: ModelRequest) -> list[MessageParam]:
    """The conversation in Messages form: consecutive user-side content shares one turn.

    Tool results, context and user text that follow each other become blocks of one
    user message, as the API expects tool results for one assistant turn together.
    """
    turns: list[_Turn] = []

    def add(role: Literal["user", "assistant"], block: _Block) -> None:
        if not turns or turns[-1].role != role:
            turns.append(_Turn(role))
        turns[-1].blocks.append(block)

    for message in request.messages:
        if isinstance(message, UserMessage | ContextMessage):
            if message.content:
                add("user", {"type": "text", "text": message.content})
        elif isinstance(message, ToolResultMessage):
            result: ToolResultBlockParam = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
            if message.is_error:
                result["is_error"] = True
            add("user", result)
        elif isinstance(message, AssistantMessage):
            for thought in thinking_params(message.reasoning):  # first, and unchanged
                add("assistant", thought)  # type: ignore[arg-type]
            if message.text:
                add("assistant", {"type": "text", "text": message.text})
            for call in message.tool_calls:
                # A malformed call is replayed with empty input: the API needs an object,
                # and the tool result already tells the model what was wrong.
                arguments = to_plain(call.arguments) if call.arguments is not None else {}
                add(
                    "assistant",
                    {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments},
                )
    out: list[MessageParam] = []
    for turn in turns:
        if turn.role == "user":
            out.append(UserMessageParam(role="user", content=turn.blocks))
        else:
            out.append(AssistantMessageParam(role="assistant", content=turn.blocks))
    return out
