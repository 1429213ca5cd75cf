"""Events from tools while they run, so a sub-agent's work reaches the stream live.

The runner executes the tool calls of one assistant message concurrently and yields
their results once all are done. A tool with something to show before then (a
sub-agent running its own turns) sends events through `ToolContext.emit`; the runner
drains them with `ToolProgress.until` while the calls run, so they arrive between
the message's `tool_call` events and its `tool_result` events.

One queue per message, filled by plain `put_nowait` from the tools' tasks and read by
the run's own task: nothing is shared between runs, and a run without sub-agents only
pays for an empty queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from assembler.runner.events import SubagentEvent


class ToolProgress:
    """The events that the running tools of one message sent, in arrival order."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[SubagentEvent | None] = asyncio.Queue()

    def emit(self, event: object) -> None:
        """`ToolContext.emit` of the calls: queue `event` for the run's stream."""
        if not isinstance(event, SubagentEvent):
            raise TypeError(f"a tool can send sub-agent events only, not {type(event).__name__}")
        self._queue.put_nowait(event)

    async def until(self, work: asyncio.Future[Any]) -> AsyncGenerator[SubagentEvent, None]:
        """Yield events until `work` (the calls) is done, then the ones still queued.

        Cancelled or closed early, it cancels `work` and waits for it: the calls answer
        as cancelled and their tools wind down (a command's processes killed, a
        sub-agent closed) before the run goes on.
        """
        work.add_done_callback(lambda _: self._queue.put_nowait(None))
        try:
            while (event := await self._queue.get()) is not None:
                yield event
        finally:
            if not work.done():
                work.cancel()
                await asyncio.wait({work})
