"""One model request of `AgentRunner`, and its response: the request built from this
turn's prompt, tools and history, bounded by the budgets (its reply limit lowered, a
wall-time deadline on its stream), its usage priced when it is done, and one retry
after compacting when the provider says the request is too long.

`ModelRequests` is mixed into `AgentRunner`, as `ToolCalls` is: what one request is
reads apart from what one turn does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import replace
from typing import Any

from assembler.errors import ContextOverflowError, ProviderError
from assembler.messages import (
    AssistantMessage,
    History,
    Message,
    ModelRequest,
    ModelSettings,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    Usage,
)
from assembler.providers.base import ModelProvider
from assembler.runner.answer import Answer
from assembler.runner.events import Compacted, Event, ReasoningEvent, TextDeltaEvent
from assembler.runner.metering import BudgetExhausted, Meter
from assembler.runner.parts import RunnerParts, RunRecorder


class ModelRequests:
    """The request half of `AgentRunner` (see the module docstring)."""

    provider: ModelProvider
    parts: RunnerParts
    settings: ModelSettings
    model_name: str
    messages: list[Message]
    recorder: RunRecorder | None
    meter: Meter
    stable_prefix: Callable[[str], int | None] | None
    _answer: Answer | None
    _cost_of_last: float
    current_system_prompt: Callable[[], str]
    compact: Callable[..., Coroutine[Any, Any, Compacted | None]]

    async def _respond(
        self, wanted: int | None = None
    ) -> AsyncIterator[Event | ResponseDone | ProviderError | BudgetExhausted]:
        """One model response: its text as it streams, then the `ResponseDone`. When the
        provider says the request is too long, compact once and ask again. A failure is
        the last item, as the error it is (the run ends on it; the conversation stays
        valid); so is a budget that leaves no room for the request."""
        for attempt in (1, 2):
            try:
                async for piece in self._request(wanted):
                    if isinstance(piece, TextDelta):
                        yield TextDeltaEvent(piece.text)
                    elif isinstance(piece, ReasoningDelta):
                        yield ReasoningEvent(piece.text)
                    else:
                        yield piece
                return
            except BudgetExhausted as e:
                yield e
                return
            except ContextOverflowError as e:
                if attempt == 2:
                    yield e
                    return
                try:
                    compacted = await self.compact(reason="overflow")
                except ProviderError as summary_failure:
                    yield ProviderError(f"{e}; compacting failed: {summary_failure}")
                    return
                if compacted is None:
                    yield e
                    return
                yield compacted
            except ProviderError as e:
                yield e
                return

    async def _request(
        self, wanted: int | None = None
    ) -> AsyncIterator[TextDelta | ReasoningDelta | ResponseDone]:
        """One request: built from this turn's prompt, tools and history, bounded by the
        budgets (its reply limit lowered, a wall-time deadline on its stream), and its
        usage priced when it is done."""
        system = self.current_system_prompt()
        messages = await self.parts.hooks.transform_context(self.messages)
        tools = self.parts.registry.schemas()
        settings, output = self.settings, None
        answer = self._answer
        if answer is not None and not answer.done:  # the run ends with a typed answer
            forced = answer.tool_choice(alone=not tools)
            tools, output = (*tools, answer.tool_schema()), answer.request()
            if forced is not None:
                settings = replace(settings, tool_choice=forced)
        request = ModelRequest(
            model=self.model_name,
            system=system,
            # the conversation list is only appended to, so a view is a snapshot
            messages=History(self.messages) if messages is self.messages else tuple(messages),
            tools=tools,
            settings=settings,
            output=output,
            system_stable=self.stable_prefix(system) if self.stable_prefix is not None else None,
        )
        request, reservation, raw_estimate = self.meter.prepare(request, wanted=wanted)
        if self.recorder is not None:
            self.recorder.request(system, request.tools)
        done = None
        left = self.meter.last_seconds_left  # read when the budgets were checked
        try:
            async with asyncio.timeout(left):
                async for event in self.provider.stream(request):
                    if isinstance(event, ResponseDone):
                        done = event
                        self._cost_of_last = self.meter.settle(
                            reservation, event.usage, raw_estimate
                        )
                    yield event
        except TimeoutError as e:
            stop = self.meter.pot.out_of_time() if self.meter.pot is not None else None
            if stop is None:
                raise
            raise BudgetExhausted(stop) from e
        finally:
            if done is None:
                self.meter.release(reservation)
        if done is None:
            self._cost_of_last = 0.0
            yield ResponseDone(AssistantMessage(), Usage(), "empty")
