"""The Anthropic request's content beyond text and tool use: thinking and the cache.

- **Thinking.** With `model.thinking`, the request asks for extended thinking with a
  `budget_tokens` below its `max_tokens` (lowered with it when a budget lowers the
  reply limit). Thinking blocks stream as `thinking_delta`s and a `signature_delta`
  (a redacted block comes whole, as `data`); `ThinkingBlocks` assembles them in the
  response's order, and `thinking_params` sends them back at the head of their
  assistant message exactly as they came, as the API requires while a tool loop runs
  (a changed signature is refused). Reasoning from another wire (`kind="text"`) has no
  signature and is not sent.
- **The prompt cache.** With `model.cache` (the default), `cache_control` breakpoints
  go on the last tool, on the stable part of the system prompt (before the per-turn
  memory section, which follows as its own block), and on the last block of the two
  latest user-side messages: the tail the previous request wrote, which this one
  reads, and the new tail, which the next one will read. That is four at most, as the
  API allows. A `tool_result` or text block takes the marker; thinking blocks cannot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from anthropic.types import (
    CacheControlEphemeralParam,
    MessageParam,
    RedactedThinkingBlock,
    SignatureDelta,
    TextBlockParam,
    ThinkingBlock,
    ThinkingDelta,
    ToolParam,
)

from assembler.messages import ModelRequest, Reasoning, to_plain

__all__ = [
    "MAX_BREAKPOINTS",
    "ThinkingBlocks",
    "mark_tail",
    "system_blocks",
    "thinking_config",
    "thinking_params",
    "tool_params",
]

MAX_BREAKPOINTS = 4
"""Anthropic refuses a request with more `cache_control` markers than this."""
THINKING_MINIMUM = 1024
"""The smallest `budget_tokens` the API accepts."""
_REPLY_ROOM = 256
"""Tokens kept for the answer when thinking shares a lowered `max_tokens`."""

_EPHEMERAL: CacheControlEphemeralParam = {"type": "ephemeral"}


# -- thinking -------------------------------------------------------------------------


def thinking_config(budget: int | None, max_tokens: int) -> dict[str, Any] | None:
    """The `thinking` parameter: `budget` lowered to leave room for the answer under
    `max_tokens`; None without thinking or when not even the minimum fits."""
    if not budget:
        return None
    budget = min(budget, max_tokens - _REPLY_ROOM)
    if budget < THINKING_MINIMUM:
        return None
    return {"type": "enabled", "budget_tokens": budget}


@dataclass
class _Block:
    kind: str
    text: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)
    data: str = ""

    def reasoning(self) -> Reasoning:
        if self.kind == "redacted_thinking":
            return Reasoning(kind="redacted_thinking", data=self.data)
        return Reasoning(
            kind="thinking", text="".join(self.text), signature="".join(self.signature)
        )


class ThinkingBlocks:
    """The thinking blocks of one response, by content-block index, in order."""

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}

    def start(self, index: int, block: ThinkingBlock | RedactedThinkingBlock) -> str:
        """A block begins; returns any thinking text it already carries."""
        if isinstance(block, RedactedThinkingBlock):
            self._blocks[index] = _Block("redacted_thinking", data=block.data)
            return ""
        part = _Block("thinking", [block.thinking] if block.thinking else [])
        if block.signature:
            part.signature.append(block.signature)
        self._blocks[index] = part
        return block.thinking

    def delta(self, index: int, delta: ThinkingDelta | SignatureDelta) -> str:
        """A piece of a block; returns the thinking text it adds (not the signature)."""
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = _Block("thinking")
        if isinstance(delta, SignatureDelta):
            block.signature.append(delta.signature)
            return ""
        block.text.append(delta.thinking)
        return delta.thinking

    def reasoning(self) -> tuple[Reasoning, ...]:
        return tuple(self._blocks[index].reasoning() for index in sorted(self._blocks))


def thinking_params(reasoning: Sequence[Reasoning]) -> list[dict[str, Any]]:
    """The blocks to put first in an assistant message: Anthropic's own, unchanged."""
    out: list[dict[str, Any]] = []
    for block in reasoning:
        if block.kind == "thinking" and block.signature:
            out.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
        elif block.kind == "redacted_thinking" and block.data:
            out.append({"type": "redacted_thinking", "data": block.data})
    return out


# -- the prompt cache -------------------------------------------------------------------


def tool_params(request: ModelRequest, cache: bool) -> list[ToolParam]:
    """The tools, the last one a cache breakpoint (tools come first in the prefix)."""
    tools: list[ToolParam] = [
        {"name": t.name, "description": t.description, "input_schema": to_plain(t.parameters)}
        for t in request.tools
    ]
    if cache and tools:
        tools[-1]["cache_control"] = _EPHEMERAL
    return tools


def system_blocks(request: ModelRequest, cache: bool) -> list[TextBlockParam] | None:
    """The system prompt as text blocks: the stable part (a breakpoint), then the
    per-turn part on its own; None without a system prompt."""
    system = request.system
    if not system:
        return None
    if not cache:
        return [{"type": "text", "text": system}]
    cut = request.system_stable
    if cut is None or not 0 < cut < len(system):
        return [{"type": "text", "text": system, "cache_control": _EPHEMERAL}]
    return [
        {"type": "text", "text": system[:cut], "cache_control": _EPHEMERAL},
        {"type": "text", "text": system[cut:]},
    ]


def mark_tail(messages: list[MessageParam], used: int) -> None:
    """Put breakpoints on the last block of the latest user-side messages (the moving
    tail), as many as `MAX_BREAKPOINTS - used` allows, at most two."""
    room = min(2, MAX_BREAKPOINTS - used)
    for message in reversed(messages):
        if room <= 0:
            return
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str) or not content:
            continue
        last = list(content)[-1]
        if isinstance(last, dict) and last.get("type") in ("text", "tool_result"):
            last["cache_control"] = _EPHEMERAL  # type: ignore[typeddict-unknown-key]
            room -= 1
