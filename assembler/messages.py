"""The provider-neutral conversation: what the runner keeps and providers translate.

Providers map these to their own wire formats (OpenAI Chat Completions, Anthropic
Messages); nothing outside `assembler.providers` knows those formats. Everything is
frozen so a message handed to an extension or a provider cannot change history.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Literal, overload


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
class Reasoning:
    """One block of a model's reasoning, kept as the provider sent it.

    `kind`: `thinking` (Anthropic extended thinking: `text` and its `signature`, which
    the API checks when the block is sent back), `redacted_thinking` (Anthropic: the
    encrypted `data` only), or `text` (an OpenAI-compatible server's `reasoning_content`:
    shown, stored, never sent back). Reasoning is never the answer.
    """

    kind: Literal["thinking", "redacted_thinking", "text"] = "text"
    text: str = ""
    signature: str = ""
    data: str = ""


@dataclass(frozen=True)
class AssistantMessage:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    role: Literal["assistant"] = "assistant"
    reasoning: tuple[Reasoning, ...] = ()
    """The model's reasoning before this message's text and calls, in its order."""


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
    """Tokens of one response (or, added up, of several), as the provider reported them.

    `input_tokens` counts every prompt token, whether the provider's prompt cache served
    it or not (OpenAI's `prompt_tokens`; Anthropic's `input_tokens` plus both cache
    fields), so it measures how full the context window is on every provider alike.
    `cache_read_tokens` and `cache_write_tokens` say how many of those input tokens were
    read from, or written to, the prompt cache. A server that reports no usage gives
    zeros.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    def __sub__(self, other: Usage) -> Usage:
        """What was used since `other` was read (a run's share of an agent's total)."""
        return Usage(
            self.input_tokens - other.input_tokens,
            self.output_tokens - other.output_tokens,
            self.cache_read_tokens - other.cache_read_tokens,
            self.cache_write_tokens - other.cache_write_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        """Every count by name, as events and result files show it."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }

    @property
    def uncached_input_tokens(self) -> int:
        """Input tokens neither read from nor written to the cache."""
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)


@dataclass(frozen=True)
class ForcedTool:
    """`tool_choice: {tool: NAME}`: the model must call this one tool."""

    name: str


ToolChoice = Literal["auto", "required", "none"] | ForcedTool
"""Whether the model may call tools: `auto` (it decides), `required` (it must call one),
`none` (it must not), or one tool it must call. None in settings: the server's default."""


@dataclass(frozen=True)
class ModelSettings:
    """Sampling settings from the manifest's `model` field; None means provider default."""

    temperature: float | None = None
    max_tokens: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    tool_choice: ToolChoice | None = None
    cache: bool = True
    """Prompt-cache breakpoints where the wire has them (Anthropic); `model.cache`."""
    thinking_budget: int | None = None
    """Anthropic extended thinking's `budget_tokens`; None: no thinking."""
    reasoning_effort: str | None = None
    """`reasoning_effort` for reasoning models (OpenAI wire)."""


class History(Sequence[Message]):
    """The first `length` messages of a conversation list, without copying them.

    The runner only ever appends to its conversation list (compaction and resuming
    bind a new list), so a view of its first `length` items never changes: a request
    can carry the history in constant time however long the run gets, where copying it
    into a tuple made every turn slower than the one before.
    """

    __slots__ = ("length", "source")

    def __init__(self, items: list[Message], length: int | None = None) -> None:
        self.source = items
        """The conversation list this is a view of (only ever appended to)."""
        self.length = len(items) if length is None else length
        """How many of its first messages this view holds (read it without a call to
        `len`: the budget check before a request does)."""

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...
    def __getitem__(self, index: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(index, slice):
            return tuple(self.source[: self.length][index])
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError("history index out of range")
        return self.source[index]

    def __iter__(self) -> Iterator[Message]:
        return islice(self.source, self.length)

    def __reversed__(self) -> Iterator[Message]:
        return (self.source[i] for i in range(self.length - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, History | tuple | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"History({list(self)!r})"


@dataclass(frozen=True)
class OutputRequest:
    """The run must end with a JSON value of this schema (the manifest's `output`).

    The request's `tools` already hold the tool `tool` (`final_answer`, its parameters
    `schema`), which works with every provider. A provider with native structured
    output may instead ask for the answer as the reply's text, constrained to
    `strict_schema` (None: the schema has no form strict mode takes), when `native` is
    True; it then leaves the tool out of what it sends and says so in
    `ResponseDone.output_via`.
    """

    tool: str
    schema: Mapping[str, Any]
    strict_schema: Mapping[str, Any] | None = None
    native: bool = True


@dataclass(frozen=True)
class ModelRequest:
    """One request to a model: the system prompt of this turn, history, tool schemas."""

    model: str
    system: str
    messages: Sequence[Message]
    """The conversation: a tuple, or a `History` view of the runner's list."""
    tools: tuple[ToolSchema, ...] = ()
    settings: ModelSettings = field(default_factory=ModelSettings)
    output: OutputRequest | None = None
    """The typed answer the run waits for (None: an answer in plain text)."""
    system_stable: int | None = None
    """How many leading characters of `system` stay the same from turn to turn (the
    sections before the per-turn ones): where a prompt-cache breakpoint may go. None:
    all of it."""


@dataclass(frozen=True)
class TextDelta:
    """A piece of streamed assistant text."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of streamed reasoning (thinking), never part of the answer."""

    text: str


@dataclass(frozen=True)
class ResponseDone:
    """The end of one streamed response: the whole assistant message and its usage."""

    message: AssistantMessage
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = ""
    output_via: Literal["", "native", "tool"] = ""
    """How the request's `output` was asked for: `native` (the reply's text is the
    answer, constrained by structured output) or `tool` ("": the same, as any provider
    that knows nothing of `output` sends the `final_answer` tool it was given)."""


StreamEvent = TextDelta | ReasoningDelta | ResponseDone


def to_plain(value: Any) -> Any:
    """Deep-copy mappings and sequences into dicts and lists, as the SDKs serialise them."""
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [to_plain(v) for v in value]
    return value
