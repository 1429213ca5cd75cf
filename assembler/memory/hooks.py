"""Memory in the loop: select on each user message, inject before each request.

`MemoryHooks` connects a `MemorySession` to the runner. Selection runs once per user
message (at the start of its run); `before_model` runs before every request and, in
`message` mode, adds the one context message. In `system` mode the prompt provider
reads the same selection into the `## memory` section, so a selection that changes
this turn reaches the model at the next request, and exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence

from assembler.memory.session import MemorySession
from assembler.messages import Message
from assembler.runner.hooks import NoHooks


class MemoryHooks(NoHooks):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    async def on_run_start(self, prompt: str) -> None:
        await self.session.select(prompt)

    async def transform_context(self, messages: Sequence[Message]) -> Sequence[Message]:
        if not self.session.emit_context_messages:
            return messages
        return self.session.before_model(messages)
