"""A session's view of memory: select each turn, inject, extract, consolidate.

The runner calls `await select(user_message)` once per user turn and
`before_model(messages)` before every model request. Where the selected records reach
the model depends on the policy's `injection`:

- `system` (the default): the prompt provider reads `selected()` into the `## memory`
  section, and `before_model` leaves the messages alone (`emit_context_messages` False).
- `message`: `before_model` puts one context message right after the latest user
  message.

Both carry the same block (`format_memories`, which the default `## memory` template
renders identically), byte for byte the seed reference's: `<relevant_memories>`, then
per memory `## name (type)`, its description and its body, then
`</relevant_memories>`, every part separated from the next by one blank line (the
prompt tests hold the literal). The markers tell the model where remembered text,
which may have come from users, starts and ends, so it is not read as instructions.

Either way the selected memory reaches the model exactly once per request: in message
mode the context message this session added to an earlier request is taken out before
the current one is added, so a runner that keeps it in its history does not send it
twice. Switching injection off does not switch memory off: selection, the `remember`
tool, extraction and consolidation run the same in both modes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from assembler.errors import MemoryStoreError
from assembler.manifest.model import MemoryPolicy
from assembler.memory.consolidation import ConsolidationResult, consolidate, needs_consolidation
from assembler.memory.extraction import ExtractionResult, extract_memories, make_remember_tool
from assembler.memory.selection import Selection, Selector
from assembler.memory.store import MemoryStore
from assembler.messages import ContextMessage, Message, UserMessage
from assembler.prompt.renderer import MemoryEntry
from assembler.providers.base import ModelProvider
from assembler.tools.base import Tool

MEMORY_OPEN: Final = "<relevant_memories>"
MEMORY_CLOSE: Final = "</relevant_memories>"


def format_memories(entries: Sequence[MemoryEntry]) -> str:
    """The memory block: the body of the `## memory` section as the default template
    renders it, and the whole of the context message in message mode."""
    parts = [MEMORY_OPEN]
    for entry in entries:
        parts += [f"## {entry.name} ({entry.type})", entry.description, entry.body]
    parts.append(MEMORY_CLOSE)
    return "\n\n".join(parts)


class MemorySession:
    """Memory for one agent session. Not shared between sessions: it holds this
    session's selection and its keyword index."""

    def __init__(
        self,
        store: MemoryStore,
        policy: MemoryPolicy,
        provider: ModelProvider | None = None,
        emit_context_messages: bool = False,
        *,
        model: str = "",
    ) -> None:
        self.store = store
        self.policy = policy
        self.provider = provider
        self.emit_context_messages = emit_context_messages
        self.model = model
        self._selector = Selector(store, policy, provider, model=model)
        self._selected: tuple[MemoryEntry, ...] = ()
        self._emitted: set[str] = set()
        self._diagnostics: list[str] = list(store.diagnostics)

    @classmethod
    def open(
        cls, policy: MemoryPolicy, provider: ModelProvider | None = None, *, model: str = ""
    ) -> MemorySession:
        """Open the policy's store; inject by message only when the policy says so."""
        store = MemoryStore.open(policy.store, policy)
        return cls(store, policy, provider, policy.injection == "message", model=model)

    def use_model(self, provider: ModelProvider, model: str) -> None:
        """After a switch (`/model`): selection and extraction ask the new model (the
        old one's provider is closed)."""
        self.provider, self.model = provider, model
        self._selector.provider, self._selector.model = provider, model

    # -- each turn -----------------------------------------------------------------

    async def select(self, user_message: str) -> tuple[MemoryEntry, ...]:
        """Choose this turn's memories from the user's latest message, and keep them
        for `selected()` and `before_model`. Problems become diagnostics."""
        try:
            self.store.refresh()
        except MemoryStoreError as e:
            self._diagnostics.append(f"memory: {e}")
        try:
            selection = await self._selector.select(user_message)
        except MemoryStoreError as e:  # memory must never break a turn
            selection = Selection(diagnostics=(f"memory selection: {e}; none selected",))
        self._selected = selection.entries
        self._diagnostics.extend(selection.diagnostics)
        return self._selected

    def selected(self) -> tuple[MemoryEntry, ...]:
        """The memories of the current turn (what the `## memory` section shows)."""
        return self._selected

    def before_model(self, messages: Sequence[Message]) -> list[Message]:
        """The messages to send; in message mode with one context message of memories
        right after the latest user message, otherwise unchanged."""
        if not self.emit_context_messages:
            return list(messages)
        kept = [
            message
            for message in messages
            if not (isinstance(message, ContextMessage) and message.content in self._emitted)
        ]
        if not self._selected:
            return kept
        last_user = next(
            (i for i in range(len(kept) - 1, -1, -1) if isinstance(kept[i], UserMessage)), None
        )
        if last_user is None:
            return kept
        content = format_memories(self._selected)
        self._emitted.add(content)
        return [*kept[: last_user + 1], ContextMessage(content), *kept[last_user + 1 :]]

    def tools(self) -> tuple[Tool, ...]:
        """The tools memory offers the agent: `remember`, when the policy allows it."""
        return (make_remember_tool(self.store, self.policy),) if self.policy.extraction_tool else ()

    def take_diagnostics(self) -> tuple[str, ...]:
        """Diagnostics gathered since the last call (for the runner to report once)."""
        taken, self._diagnostics = tuple(self._diagnostics), []
        return taken

    # -- at the end ------------------------------------------------------------------

    async def end_session(self, messages: Sequence[Message]) -> None:
        """Extract memories if the policy asks for it, then consolidate if the store has
        grown past its limit. Failures are diagnostics: ending a session never fails."""
        if self.policy.extraction_at_session_end and self.provider is not None:
            await self.extract(messages)
        if needs_consolidation(self.store, self.policy):
            await self.consolidate()

    async def extract(self, messages: Sequence[Message]) -> ExtractionResult:
        """Model-based extraction from `messages`, on demand; its diagnostics are kept
        for the runner."""
        if self.provider is None:
            result = ExtractionResult(diagnostics=("memory extraction: no model to ask",))
        else:
            result = await extract_memories(
                self.provider, messages, self.store, self.policy, model=self.model
            )
        self._diagnostics.extend(result.diagnostics)
        return result

    async def consolidate(self) -> ConsolidationResult:
        """One consolidation round, on demand; its diagnostics are kept for the runner."""
        if self.provider is None:
            result = ConsolidationResult(
                False, diagnostics=("memory consolidation: no model to ask",)
            )
        else:
            try:
                result = await consolidate(self.provider, self.store, self.policy, model=self.model)
            except MemoryStoreError as e:
                result = ConsolidationResult(False, diagnostics=(f"memory consolidation: {e}",))
        self._diagnostics.extend(result.diagnostics)
        return result
