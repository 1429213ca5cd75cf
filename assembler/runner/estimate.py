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
from collections.abc import Iterable
from dataclasses import dataclass, field

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

__all__ = ["Calibration", "estimate_tokens"]

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


def _message_chars(message: Message) -> int:
    if isinstance(message, UserMessage | ContextMessage):
        return len(message.content)
    if isinstance(message, ToolResultMessage):
        return len(message.content) + len(message.tool_call_id) + len(message.name)
    if isinstance(message, AssistantMessage):
        size = len(message.text)
        for call in message.tool_calls:
            size += len(call.id) + len(call.name) + _arguments_chars(call.raw_arguments, call)
        for block in message.reasoning:
            size += len(block.text) + len(block.data)
        return size
    return 0


def _arguments_chars(raw: str, call: object) -> int:
    if raw:
        return len(raw)
    arguments = getattr(call, "arguments", None)
    return len(json.dumps(arguments, default=str)) if arguments else 2


def _chars(messages: Iterable[Message]) -> int:
    return sum(_message_chars(message) for message in messages)


class _Prefix:
    """The characters of a conversation list counted so far. The runner only appends
    to its list (compaction binds a new one: see `History`), so a view of the same
    list needs only its new messages counted: the check before a request stays as
    cheap at message 500 as at message 5."""

    def __init__(self) -> None:
        self.source: list[Message] | None = None
        self.counted = 0
        self.chars = 0
        self.tools: tuple[ToolSchema, ...] | None = None
        self.tool_chars = 0

    def tools_chars(self, tools: tuple[ToolSchema, ...]) -> int:
        """The tool schemas' size, measured again only when the registry gave another
        tuple of them."""
        if tools is not self.tools:
            self.tools, self.tool_chars = tools, sum(_SCHEMAS.size(tool) for tool in tools)
        return self.tool_chars

    def chars_of(self, view: History) -> int:
        source, length = view.source, len(view)
        if source is not self.source or length < self.counted:
            self.source, self.counted, self.chars = source, 0, 0
        if length > self.counted:
            self.chars += _chars(source[self.counted : length])
            self.counted = length
        return self.chars


def estimate_tokens(request: ModelRequest, prefix: _Prefix | None = None) -> int:
    """The input tokens of `request`, estimated from its characters (`prefix`: what is
    already counted of the runner's conversation, when the request is a view of it)."""
    messages = request.messages
    if prefix is not None:
        chars = len(request.system) + prefix.tools_chars(request.tools)
    else:
        chars = len(request.system) + sum(_SCHEMAS.size(tool) for tool in request.tools)
    if prefix is not None and isinstance(messages, History):
        chars += prefix.chars_of(messages)
    else:
        chars += _chars(messages)
    return math.ceil(chars / CHARS_PER_TOKEN + len(messages) * MESSAGE_OVERHEAD)


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
    _raw: int = 0
    _reported: int = 0
    _prefix: _Prefix = field(default_factory=_Prefix)

    def estimate(self, request: ModelRequest) -> tuple[int, int]:
        """(raw estimate, corrected estimate) of `request`'s input tokens."""
        raw = estimate_tokens(request, self._prefix)
        if self._reported and raw >= self._raw:
            return raw, self._reported + math.ceil((raw - self._raw) * self.ratio)
        return raw, math.ceil(raw * self.ratio)

    def learn(self, raw_estimate: int, reported: int) -> None:
        """The provider counted `reported` input tokens where `raw_estimate` was made."""
        if raw_estimate <= 0 or reported <= 0:
            return
        if self._reported and raw_estimate > self._raw and reported > self._reported:
            ratio = (reported - self._reported) / (raw_estimate - self._raw)
        else:
            ratio = reported / raw_estimate
        self.ratio = min(4.0, max(0.5, ratio))
        self._raw, self._reported = raw_estimate, reported
