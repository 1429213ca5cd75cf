"""Small helpers for driving a provider from a plain (non-async) test."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from assembler.messages import ModelRequest, ResponseDone, StreamEvent, TextDelta
from assembler.providers.base import ModelProvider


@dataclass
class Outcome:
    """What one `stream()` produced: its events, and the error that ended it, if any."""

    events: list[StreamEvent] = field(default_factory=list)
    error: BaseException | None = None

    @property
    def deltas(self) -> list[str]:
        return [e.text for e in self.events if isinstance(e, TextDelta)]

    @property
    def done(self) -> ResponseDone:
        if self.error is not None:
            raise AssertionError(f"the stream failed: {self.error!r}") from self.error
        finals = [e for e in self.events if isinstance(e, ResponseDone)]
        assert len(finals) == 1, self.events
        assert self.events[-1] is finals[0], "ResponseDone must be the last event"
        return finals[0]


def run(make: Callable[[], ModelProvider], *requests: ModelRequest) -> list[Outcome]:
    """Create the provider inside a fresh event loop, stream each request, close it.

    The provider is made inside the loop because the SDKs' connection pools belong
    to the loop that first used them.
    """

    async def main() -> list[Outcome]:
        provider = make()
        outcomes: list[Outcome] = []
        try:
            for request in requests:
                outcome = Outcome()
                try:
                    async for event in provider.stream(request):
                        outcome.events.append(event)
                except Exception as e:
                    outcome.error = e
                outcomes.append(outcome)
        finally:
            await provider.aclose()
        return outcomes

    return asyncio.run(main())


def run_one(make: Callable[[], ModelProvider], request: ModelRequest) -> Outcome:
    return run(make, request)[0]
