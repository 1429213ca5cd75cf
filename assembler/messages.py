"""The provider-neutral conversation: what the runner keeps and providers translate.

Providers map these to their own wire formats (OpenAI Chat Completions, Anthropic
Messages); nothing outside `assembler.providers` knows those formats. Everything is
frozen so a message handed to an extension or a provider cannot change history.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the model proposed it.

    `arguments` is None when the model sent text that is not a JSON object; then
    `arguments_error` says why, and the runner answers with an error result instead
    of running the tool.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] | None
    raw_arguments: str = ""
    arguments_error: str = ""


@dataclass(frozen=True)
class UserMessage:
    content: str
    role: Literal["user"] = "user"


@dataclass(frozen=True)
class ContextMessage:
    """Extra context the agent adds after the user's question (memory in `message` mode).

    Sent as a user-role message, since not every provider accepts a system message in
    the middle of a conversation.
    """

    content: str
    role: Literal["context"] = "context"


@dataclass(frozen=True)
class AssistantMessage:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True)
class ToolResultMessage:
    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    role: Literal["tool"] = "tool"


Message = UserMessage | ContextMessage | AssistantMessage | ToolResultMessage


@dataclass(frozen=True)
class ToolSchema:
    """What the model is told about one tool: the formal interface it calls."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )


@dataclass(frozen=True)
class ModelSettings:
    """Sampling settings from the manifest's `model` field; None means provider default."""

    temperature: float | None = None
    max_tokens: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelRequest:
    """One request to a model: the system prompt of this turn, history, tool schemas."""

    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...] = ()
    settings: ModelSettings = field(default_factory=ModelSettings)


@dataclass(frozen=True)
class TextDelta:
    """A piece of streamed assistant text."""

    text: str


@dataclass(frozen=True)
class ResponseDone:
    """The end of one streamed response: the whole assistant message and its usage."""

    message: AssistantMessage
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = ""


StreamEvent = TextDelta | ResponseDone
