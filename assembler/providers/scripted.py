"""A provider that replays a script of replies: deterministic runs without a model.

Used by `--model scripted:...` with `options.script` (a YAML file) for demos, CI and
bug reports, and by `assembler.testing` for users' own tests. The script's format,
and reading it, are in `assembler.providers.script_file`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import replace
from typing import Any

from assembler.errors import ProviderError
from assembler.messages import (
    AssistantMessage,
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    Usage,
)
from assembler.providers.script_file import ScriptStep, load_script, parse_steps

Step = Mapping[str, Any] | AssistantMessage | str
"""A step as written: a mapping like the YAML form, an `AssistantMessage`, or bare text."""

__all__ = [
    "ScriptStep",
    "ScriptedProvider",
    "Step",
    "load_script",
    "parse_steps",
    "split_text",
    "stream_reply",
]


def split_text(text: str, parts: int = 3) -> list[str]:
    """Split text at word boundaries into at most `parts` deltas, as a stream would."""
    words = re.findall(r"\s*\S+\s*|\s+", text)
    if len(words) <= 1:
        return [text] if text else []
    size = -(-len(words) // parts)
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


async def stream_reply(
    message: AssistantMessage,
    usage: Usage | None = None,
    *,
    reply_number: int = 1,
    stop_reason: str = "",
) -> AsyncIterator[StreamEvent]:
    """Stream a finished reply like a provider: its reasoning, a few text deltas, then
    `ResponseDone` (with `stop_reason`, else `tool_calls` or `stop`).

    Tool calls without an id get `call_<reply>_<n>`, so ids are unique and stable.
    """
    calls = tuple(
        call if call.id else replace(call, id=f"call_{reply_number}_{n}")
        for n, call in enumerate(message.tool_calls, start=1)
    )
    for block in message.reasoning:
        if block.text:
            await asyncio.sleep(0)
            yield ReasoningDelta(block.text)
    for piece in split_text(message.text):
        await asyncio.sleep(0)
        yield TextDelta(piece)
    stop = stop_reason or ("tool_calls" if calls else "stop")
    yield ResponseDone(
        message=replace(message, tool_calls=calls), usage=usage or Usage(), stop_reason=stop
    )


class ScriptedProvider:
    """Replays scripted replies in order; one more request than scripted is an error.

    Every request is kept in `requests`, so a caller can check what the model was sent.
    """

    def __init__(self, steps: Iterable[Step | ScriptStep], *, name: str = "scripted") -> None:
        self._name = name
        self._steps = parse_steps(list(steps))
        self._used = 0
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def replies(self) -> int:
        """How many steps have been replayed."""
        return self._used

    @property
    def remaining(self) -> tuple[ScriptStep, ...]:
        """The steps not replayed yet."""
        return tuple(self._steps[self._used :])

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        if self._used >= len(self._steps):
            raise ProviderError(
                f"{self._name}: script exhausted after {len(self._steps)} replies "
                f"(request {len(self.requests)} has no scripted reply)"
            )
        step = self._steps[self._used]
        self._used += 1
        async for event in stream_reply(step.message, step.usage, reply_number=self._used):
            yield event

    async def aclose(self) -> None:
        return None
