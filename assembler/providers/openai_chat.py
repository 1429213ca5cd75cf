"""OpenAI Chat Completions, and every server that speaks it, through the official SDK.

Chat Completions (not the Responses API) because it is what compatible servers
implement: with `base_url` the same provider drives Ollama, vLLM, llama.cpp, LM Studio
or OpenRouter. Retries and timeouts are the SDK's; this module adds only one retry of
a stream that breaks before its first event (see `stream_with_one_retry`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI, not_given, omit
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)

from assembler.errors import ProviderError
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    ModelRequest,
    ModelSettings,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
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

__all__ = ["OpenAIChatProvider"]


@dataclass
class _PartialCall:
    """A tool call being assembled from deltas that share one `index`."""

    id: str = ""
    name: str = ""
    arguments: str = ""


class OpenAIChatProvider(SDKProvider):
    """A `ModelProvider` for the Chat Completions API (`openai:<model>`).

    `settings` are defaults; a request's own settings win field by field. With a custom
    `base_url` the token limit is sent as `max_tokens` (what compatible servers read),
    with OpenAI itself as `max_completion_tokens` (what its newer models require).
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
    ) -> None:
        super().__init__(model, settings, provider_name)
        self._custom_endpoint = base_url is not None
        self._max_retries = openai.DEFAULT_MAX_RETRIES if max_retries is None else max_retries
        try:
            self._client = AsyncOpenAI(
                api_key=api_key,
                base_url=base_url,
                max_retries=self._max_retries,
                timeout=not_given if timeout is None else timeout,
                default_headers=default_headers,
            )
        except openai.OpenAIError as e:
            raise ProviderError(f"{self._name}: {one_line(str(e))}") from e

    async def _attempt(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        """One request and its stream; a break while reading raises `StreamInterrupted`."""
        temperature, max_tokens, extra = self._sampling(request)
        tools = [_tool_param(t.name, t.description, t.parameters) for t in request.tools]
        try:
            stream = await self._client.chat.completions.create(
                model=request.model or self.model,
                messages=_messages(request),
                stream=True,
                stream_options={"include_usage": True},
                tools=tools if tools else omit,
                temperature=omit if temperature is None else temperature,
                max_tokens=max_tokens if max_tokens and self._custom_endpoint else omit,
                max_completion_tokens=(
                    max_tokens if max_tokens and not self._custom_endpoint else omit
                ),
                extra_body=extra or None,
            )
        except openai.OpenAIError as e:
            raise ProviderError(f"{self._name}: {self._describe(e)}") from e

        text: list[str] = []
        calls: dict[int, _PartialCall] = {}
        usage = Usage()
        finish_reason = ""
        try:
            async with stream:
                async for chunk in stream:
                    if chunk.usage is not None:
                        usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
                    for choice in chunk.choices:
                        if choice.index != 0:
                            continue
                        delta = choice.delta
                        for piece in (delta.content, delta.refusal):
                            if piece:
                                text.append(piece)
                                yield TextDelta(piece)
                        for tc in delta.tool_calls or ():
                            partial = calls.setdefault(tc.index, _PartialCall())
                            if tc.id:
                                partial.id = tc.id
                            if tc.function is not None:
                                partial.name += tc.function.name or ""
                                partial.arguments += tc.function.arguments or ""
                        if choice.finish_reason:
                            finish_reason = choice.finish_reason
        except (openai.OpenAIError, httpx2.HTTPError, json.JSONDecodeError) as e:
            raise StreamInterrupted(self._describe(e, streaming=True)) from e
        if not finish_reason:
            raise StreamInterrupted("the stream ended before the response was complete")

        tool_calls = tuple(
            tool_call_from_raw(p.id or f"call_{uuid.uuid4().hex[:24]}", p.name, p.arguments)
            for _, p in sorted(calls.items())
        )
        yield ResponseDone(
            message=AssistantMessage(text="".join(text), tool_calls=tool_calls),
            usage=usage,
            stop_reason=finish_reason,
        )

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
            return f"cannot reach {display_url(str(self._client.base_url))}: {describe_cause(e)}"
        if isinstance(e, openai.APIError):
            return one_line(f"the server reported an error: {error_detail(e.body, e.message)}")
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


def _assistant(message: AssistantMessage) -> ChatCompletionAssistantMessageParam:
    param: ChatCompletionAssistantMessageParam = {"role": "assistant"}
    param["content"] = message.text if message.text or not message.tool_calls else None
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
