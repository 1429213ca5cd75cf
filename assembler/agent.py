"""`Agent`: a built agent, as the CLI, the RPC mode and embedding code use it.

It owns what `build_agent` assembled and keeps the three model-facing parts (the
resource snapshot, the tool registry and the prompt provider) consistent: `reload()`
replaces all three together, never one alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from assembler.errors import Issue
from assembler.manifest.model import Manifest
from assembler.messages import Message
from assembler.providers.base import ModelProvider
from assembler.resources.loader import ResourceLoader, ResourceSnapshot
from assembler.runner.events import (
    Diagnostic,
    Event,
    RunEnd,
    TurnEnd,
)
from assembler.runner.loop import AgentRunner

if TYPE_CHECKING:
    from assembler.assembly.lifecycle import Assembly
    from assembler.assembly.parts import AgentParts
    from assembler.sessions.store import Session


@dataclass(frozen=True)
class RunResult:
    """The outcome of `agent.prompt(...)`: the final text and every event."""

    text: str
    reason: str
    events: tuple[Event, ...] = field(default=())

    @property
    def completed(self) -> bool:
        return self.reason == "completed"


class Agent:
    """Prompt it (`await agent.prompt("...")`), stream it, reload it, close it."""

    def __init__(
        self,
        *,
        manifest: Manifest,
        provider: ModelProvider,
        loader: ResourceLoader,
        runner: AgentRunner,
        parts: AgentParts,
        assembly: Assembly,
        session: Session | None = None,
    ) -> None:
        self.manifest = manifest
        self.provider = provider
        self.loader = loader
        self.runner = runner
        self.parts = parts
        self.session = session
        self.assembly = assembly
        self._started = False
        self._closed = False
        self._recorded = 0

    # -- what the model sees -------------------------------------------------

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def snapshot(self) -> ResourceSnapshot:
        return self.parts.snapshot

    @property
    def registry(self) -> Any:
        return self.parts.registry

    @property
    def diagnostics(self) -> tuple[Issue, ...]:
        return tuple(self.parts.diagnostics)

    @property
    def messages(self) -> list[Message]:
        return self.runner.messages

    def system_prompt(self) -> str:
        """The system prompt the next model request would carry."""
        return self.runner.current_system_prompt()

    def reload(self) -> ResourceSnapshot:
        """Re-read resources and rebuild tools and prompt from the new snapshot, together."""
        snapshot = self.loader.reload()
        self.install(self.assembly.rebuild(snapshot))
        return snapshot

    def install(self, parts: AgentParts) -> None:
        """Swap in a new set of parts (snapshot, registry, prompt, hooks) at once."""
        self.parts = parts
        self.runner.registry = parts.registry
        self.runner.system_prompt = parts.prompt
        self.runner.hooks = parts.hooks
        self.runner.trace = parts.trace

    # -- running ---------------------------------------------------------------

    async def start(self) -> None:
        """Connect what needs a running event loop (MCP servers) and tell extensions
        the session started; idempotent, and called by the first prompt when the
        caller did not."""
        if self._started:
            return
        self._started = True
        if await self.assembly.connect_mcp():
            self.install(self.assembly.parts(self.parts.snapshot))
        await self.parts.extension_hooks.session_start()

    async def stream(self, prompt: str, *, max_turns: int | None = None) -> AsyncIterator[Event]:
        """Run `prompt`, yielding events as they happen; the session file records
        each message as soon as it is part of the conversation."""
        await self.start()
        for issue in self.parts.pending_diagnostics():
            yield Diagnostic(issue.message, issue.severity)
        if self.session is not None:
            self.session.append("event", {"event": {"type": "run_start", "prompt": prompt}})
        async for event in self.runner.run(prompt, max_turns=max_turns):
            if isinstance(event, TurnEnd | RunEnd):
                self._record_messages()
                for issue in (
                    *self.assembly.poll(),
                    *self.parts.extension_hooks.take_diagnostics(),
                ):
                    yield Diagnostic(issue.message, issue.severity)
            if isinstance(event, RunEnd) and self.session is not None:
                self.session.append("event", {"event": event.to_dict()})
            yield event

    async def prompt(self, prompt: str, *, max_turns: int | None = None) -> RunResult:
        """Run `prompt` to the end and return the final answer."""
        events: list[Event] = []
        async for event in self.stream(prompt, max_turns=max_turns):
            events.append(event)
        end = next((e for e in reversed(events) if isinstance(e, RunEnd)), None)
        return RunResult(end.text if end else "", end.reason if end else "error", tuple(events))

    def _record_messages(self) -> None:
        if self.session is None:
            return
        for message in self.runner.messages[self._recorded :]:
            self.session.append_message(message)
        self._recorded = len(self.runner.messages)

    async def aclose(self) -> None:
        """End the session: extensions hear `session_end`, servers stop, connections close."""
        if self._closed:
            return
        self._closed = True
        self._record_messages()
        try:
            if self._started:
                await self.parts.extension_hooks.session_end("closed")
        finally:
            try:
                await self.assembly.aclose(self.runner.messages)
            finally:
                await self.provider.aclose()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
