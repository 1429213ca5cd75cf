"""How many input tokens a request holds, roughly, before it is sent.

A budget is checked before every request (`runner/budget.py`), so the check must cost
next to nothing: no tokenizer, no serialising. The estimate counts characters (about
four to a token for English text and code) of the system prompt, the tool schemas
(each schema measured once and remembered) and every message, plus a few tokens of
framing per message. The runner then corrects it with what the provider reported for
the previous request (`Calibration`): from the second request on, only what was added
since the previous one is guessed.
bench/bench_budget.py measures its cost against serialising the request.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    History,
    Message,
    ModelRequest,
    ToolResultMessage,
    ToolSchema,
    UserMessage,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "MESSAGE_OVERHEAD",
    "Calibration",
    "arguments_chars",
    "estimate_tokens",
    "grown",
    "message_chars",
]

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
"""Tokens of framing around each message (its role, separators)."""
_SCHEMA_SIZES_MAX = 4096


class _SchemaSizes:
    """The serialised size of each tool schema, measured once: the same schema objects
    come back every turn while the registry is unchanged."""

    def __init__(self) -> None:
        self._sizes: dict[int, tuple[ToolSchema, int]] = {}

    def size(self, schema: ToolSchema) -> int:
        known = self._sizes.get(id(schema))
        if known is not None and known[0] is schema:
            return known[1]
        size = len(schema.name) + len(schema.description)
        size += len(json.dumps(schema.parameters, default=str, separators=(",", ":")))
        if len(self._sizes) >= _SCHEMA_SIZES_MAX:
            self._sizes.clear()
        self._sizes[id(schema)] = (schema, size)  # the schema kept: its id stays its own
        return size


_SCHEMAS = _SchemaSizes()


def _text_chars(message: UserMessage | ContextMessage) -> int:
    return len(message.content)


def _result_chars(message: ToolResultMessage) -> int:
    return len(message.content) + len(message.tool_call_id) + len(message.name)


def _assistant_chars(message: AssistantMessage) -> int:
    size = len(message.text)
    for call in message.tool_calls:
        size += len(call.id) + len(call.name) + arguments_chars(call.raw_arguments, call)
    for block in message.reasoning:
        size += len(block.text) + len(block.data)
    return size


_SIZES: dict[type, Callable[[Any], int]] = {
    UserMessage: _text_chars,
    ContextMessage: _text_chars,
    ToolResultMessage: _result_chars,
    AssistantMessage: _assistant_chars,
}
"""The characters of a message, by its exact type (one dictionary look-up, where a
chain of `isinstance` tests cost more than the rest of a check)."""


def message_chars(message: Message) -> int:
    size = _SIZES.get(type(message))
    if size is not None:
        return size(message)
    if isinstance(message, UserMessage | ContextMessage):  # a subclass: rare
        return _text_chars(message)
    if isinstance(message, ToolResultMessage):
        return _result_chars(message)
    if isinstance(message, AssistantMessage):
        return _assistant_chars(message)
    return 0


def arguments_chars(raw: str, call: object) -> int:
    if raw:
        return len(raw)
    arguments = getattr(call, "arguments", None)
    return len(json.dumps(arguments, default=str)) if arguments else 2


def _chars(messages: Iterable[Message]) -> int:
    return sum(message_chars(message) for message in messages)


def grown(source: list[Message], start: int, end: int, chars: int) -> int:
    """`chars` plus the characters of `source[start:end]` (`Meter.prepare` sizes the
    messages of a tool loop inline, as this does)."""
    for index in range(start, end):
        message = source[index]
        if type(message) is ToolResultMessage:
            chars += len(message.content) + len(message.tool_call_id) + len(message.name)
        elif type(message) is AssistantMessage and not message.reasoning:
            chars += len(message.text)
            for call in message.tool_calls:
                text = call.raw_arguments
                chars += len(call.id) + len(call.name)
                chars += len(text) if text else arguments_chars(text, call)
        else:
            chars += message_chars(message)
    return chars


def estimate_tokens(request: ModelRequest) -> int:
    """The input tokens of `request`, estimated from its characters."""
    messages = request.messages
    chars = len(request.system) + sum(_SCHEMAS.size(tool) for tool in request.tools)
    chars += _chars(messages)
    return _tokens(chars, len(messages))


def _tokens(chars: int, messages: int) -> int:
    """The ceiling of chars / CHARS_PER_TOKEN (in integers), plus the framing."""
    return -(-chars // CHARS_PER_TOKEN) + messages * MESSAGE_OVERHEAD


@dataclass
class Calibration:
    """Turns a raw estimate into a corrected one with what the provider counted.

    The provider's count of the previous request is exact, and the next request is
    mostly that request plus what was added since (the reply, tool results). So the
    estimate is the previous count plus the growth's raw estimate times the ratio the
    provider gave for earlier growth (between 0.5 and 4: one odd report cannot make the
    next estimate absurd). Only the new part is guessed: its error is the estimate's.
    When the request shrank (compaction, a new system prompt), the whole is estimated
    with the ratio.
    """

    ratio: float = 1.0
    raw: int = 0
    """The raw estimate of the latest request the provider counted (0: none yet)."""
    reported: int = 0
    """The provider's count of that request."""
    # What is counted of the runner's conversation list and of its tool schemas. The
    # runner only appends to its list (compaction binds a new one: see `History`), so
    # a view of the same list needs only its new messages counted, and the registry
    # gives the same tuple of schemas until they change: the estimate before a
    # request costs as little at message 5,000 as at message 5. The meter's check
    # before a request reads and advances this state itself (`Meter.prepare`).
    source: list[Message] | None = field(default=None, repr=False)
    """The conversation list counted (None: none yet)."""
    counted: int = 0
    """How many of its first messages are counted."""
    chars: int = 0
    """Their characters."""
    _tools: tuple[ToolSchema, ...] | None = field(default=None, repr=False)
    _tool_chars: int = 0

    def estimate(self, request: ModelRequest) -> tuple[int, int]:
        """(raw estimate, corrected estimate) of `request`'s input tokens."""
        messages = request.messages
        if type(messages) is History:
            source, length = messages.source, messages.length
            if source is not self.source or length < self.counted:
                self.source, self.counted, self.chars = source, 0, 0
            self.chars = chars = grown(source, self.counted, length, self.chars)
            self.counted = length
        else:
            length, chars = len(messages), _chars(messages)
        raw = _tokens(chars + self.fixed_chars(request), length)
        return raw, self.corrected(raw)

    def fixed_chars(self, request: ModelRequest) -> int:
        """The characters of `request`'s system prompt and tool schemas (the schemas
        measured once per tuple the registry hands out)."""
        tools = request.tools
        if tools is not self._tools:
            self._tools, self._tool_chars = tools, sum(_SCHEMAS.size(tool) for tool in tools)
        return len(request.system) + self._tool_chars

    def corrected(self, raw: int) -> int:
        """`raw` corrected with the provider's latest count (`Meter.prepare` does the
        same inline)."""
        if self.reported and raw >= self.raw:
            return self.reported + math.ceil((raw - self.raw) * self.ratio)
        return math.ceil(raw * self.ratio)

    def learn(self, raw_estimate: int, reported: int) -> None:
        """The provider counted `reported` input tokens where `raw_estimate` was made."""
        if raw_estimate <= 0 or reported <= 0:
            return
        if self.reported and raw_estimate > self.raw and reported > self.reported:
            ratio = (reported - self.reported) / (raw_estimate - self.raw)
        else:
            ratio = reported / raw_estimate
        self.ratio = min(4.0, max(0.5, ratio))
        self.raw, self.reported = raw_estimate, reported
