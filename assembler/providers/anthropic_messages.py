"""Anthropic's Messages API through the official SDK, streamed as raw events.

Raw events (`messages.create(stream=True)`) rather than the SDK's `messages.stream`
helper: the provider needs only text deltas, `input_json_delta` pieces and usage, and
handling them directly keeps a malformed tool input a `ToolCall` with an error instead
of an exception. Retries and timeouts are the SDK's; this module adds only one retry of
a stream that breaks before its first event.
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
    TextBlock,
    TextBlockParam,
    TextDelta,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlock,
    ToolUseBlockParam,
    UserMessageParam,
)

from assembler.errors import ProviderError
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    ModelRequest,
    ModelSettings,
    ResponseDone,
    StreamEvent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from assembler.messages import TextDelta as TextDeltaEvent
from assembler.providers._common import (
    SDKProvider,
    StreamInterrupted,
    describe_cause,
    describe_status,
    error_detail,
    one_line,
    to_plain,
    tool_call_from_raw,
)
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
class _PartialToolUse:
    id: str
    name: str
    initial_input: dict[str, object]
    json: str = ""


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
    ) -> None:
        super().__init__(model, settings, provider_name)
        self._max_retries = anthropic.DEFAULT_MAX_RETRIES if max_retries is None else max_retries
        try:
            self._client = AsyncAnthropic(
                api_key=api_key,
                base_url=base_url,
                max_retries=self._max_retries,
                timeout=not_given if timeout is None else timeout,
                default_headers=default_headers,
            )
        except (anthropic.AnthropicError, ValueError) as e:
            raise ProviderError(f"{self._name}: {one_line(str(e))}") from e

    async def _attempt(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        """One request and its stream; a break while reading raises `StreamInterrupted`."""
        temperature, max_tokens, extra = self._sampling(request)
        max_tokens = max_tokens or DEFAULT_MAX_TOKENS
        if temperature is not None:
            extra.setdefault("temperature", temperature)
        tools: list[ToolParam] = [
            {"name": t.name, "description": t.description, "input_schema": to_plain(t.parameters)}
            for t in request.tools
        ]
        try:
            stream = await self._client.messages.create(
                model=request.model or self.model,
                max_tokens=max_tokens,
                system=request.system if request.system else omit,
                messages=_messages(request),
                tools=tools if tools else omit,
                stream=True,
                extra_body=extra or None,
            )
        except anthropic.AnthropicError as e:
            raise ProviderError(f"{self._name}: {self._describe(e)}") from e

        text: list[str] = []
        tool_uses: dict[int, _PartialToolUse] = {}
        input_tokens = output_tokens = 0
        stop_reason = ""
        complete = False
        try:
            async with stream:
                async for event in stream:
                    if isinstance(event, RawMessageStartEvent):
                        u = event.message.usage
                        input_tokens = (
                            u.input_tokens
                            + (u.cache_creation_input_tokens or 0)
                            + (u.cache_read_input_tokens or 0)
                        )
                        output_tokens = u.output_tokens
                    elif isinstance(event, RawContentBlockStartEvent):
                        block = event.content_block
                        if isinstance(block, ToolUseBlock):
                            tool_uses[event.index] = _PartialToolUse(
                                block.id, block.name, dict(block.input)
                            )
                        elif isinstance(block, TextBlock) and block.text:
                            text.append(block.text)
                            yield TextDeltaEvent(block.text)
                    elif isinstance(event, RawContentBlockDeltaEvent):
                        delta = event.delta
                        if isinstance(delta, TextDelta) and delta.text:
                            text.append(delta.text)
                            yield TextDeltaEvent(delta.text)
                        elif isinstance(delta, InputJSONDelta) and event.index in tool_uses:
                            tool_uses[event.index].json += delta.partial_json
                    elif isinstance(event, RawMessageDeltaEvent):
                        stop_reason = event.delta.stop_reason or stop_reason
                        output_tokens = event.usage.output_tokens
                        if event.usage.input_tokens is not None:
                            input_tokens = max(input_tokens, event.usage.input_tokens)
                    elif isinstance(event, RawMessageStopEvent):
                        complete = True
        except (anthropic.AnthropicError, httpx2.HTTPError, json.JSONDecodeError) as e:
            raise StreamInterrupted(self._describe(e, streaming=True)) from e
        if not complete:
            raise StreamInterrupted("the stream ended before the response was complete")

        tool_calls = tuple(
            tool_call_from_raw(
                use.id, use.name, use.json or json.dumps(use.initial_input, ensure_ascii=False)
            )
            for _, use in sorted(tool_uses.items())
        )
        yield ResponseDone(
            message=AssistantMessage(text="".join(text), tool_calls=tool_calls),
            usage=Usage(input_tokens, output_tokens),
            stop_reason=stop_reason,
        )

    def _describe(self, e: BaseException, *, streaming: bool = False) -> str:
        """One readable line for an SDK or transport error."""
        if isinstance(e, anthropic.APIStatusError):
            detail = e.api_message or error_detail(e.body, e.message)
            if e.status_code < 400:  # an `error` event inside a 200 stream
                kind = f"{e.type}: " if e.type else ""
                return one_line(f"the server reported an error: {kind}{detail}")
            return describe_status(e.status_code, detail, self._max_retries)
        if isinstance(e, anthropic.APITimeoutError):
            return "timed out while reading the response" if streaming else "the request timed out"
        if streaming and isinstance(e, anthropic.APIConnectionError | httpx2.HTTPError):
            return f"connection lost: {describe_cause(e)}"
        if isinstance(e, anthropic.APIConnectionError):
            return f"cannot reach {display_url(str(self._client.base_url))}: {describe_cause(e)}"
        return describe_cause(e)


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
