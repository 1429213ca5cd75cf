"""`Agent`: a built agent, as the CLI, the RPC mode and embedding code use it.

It owns what `build_agent` assembled and keeps the three model-facing parts (the
resource snapshot, the tool registry and the prompt provider) consistent: `reload()`
replaces all three together, never one alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

from assembler.agent.conversation import Restored, SessionRecorder, open_session, restore
from assembler.agent.state import AgentState
from assembler.agent.subagents import Subagent, Team
from assembler.errors import Issue, SessionError
from assembler.manifest.model import Manifest
from assembler.messages import Message, Usage
from assembler.permissions.gate import Approver, PermissionGate
from assembler.providers.base import ModelProvider
from assembler.resources.loader import ResourceLoader, ResourceSnapshot
from assembler.runner.events import (
    Compacted,
    Diagnostic,
    Event,
    RunEnd,
    TurnEnd,
)
from assembler.runner.loop import AgentRunner
from assembler.sessions.store import Session, SessionStore
from assembler.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from assembler.agent.lifecycle import Assembly
    from assembler.agent.parts import AgentParts
    from assembler.memory.session import MemorySession


@dataclass(frozen=True)
class RunResult:
    """The outcome of `agent.prompt(...)`: the final text, every event, the tokens the
    run used (all requests, summaries included) and the session it was recorded in."""

    text: str
    reason: str
    events: tuple[Event, ...] = field(default=())
    usage: Usage = field(default_factory=Usage)
    session_id: str = ""

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
        team: Team[Agent] | None = None,
    ) -> None:
        self.manifest = manifest
        self.provider = provider
        self.loader = loader
        self.runner = runner
        self.parts = parts
        self.assembly = assembly
        self._started = False
        self._closed = False
        self.session: Session | None = None
        if session is not None:
            self.use_session(restore(session))
        self.team = team
        if team is not None:
            team.bind(self)

    # -- what the model sees -------------------------------------------------

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def subagents(self) -> tuple[Subagent[Agent], ...]:
        """The `agent:` tool sets: each one's tool, manifest and path (`lead/reviewer`);
        `subagent.build()` builds the child directly."""
        return self.team.subagents if self.team is not None else ()

    @property
    def snapshot(self) -> ResourceSnapshot:
        return self.parts.snapshot

    @property
    def registry(self) -> ToolRegistry:
        return self.parts.registry

    @property
    def diagnostics(self) -> tuple[Issue, ...]:
        return tuple(self.parts.diagnostics)

    @property
    def memory(self) -> MemorySession | None:
        """The memory session (selection, extraction, consolidation), if the manifest
        has a memory policy."""
        return self.assembly.memory

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
        self.parts = self.runner.parts = parts

    # -- running ---------------------------------------------------------------

    async def start(self) -> None:
        """Connect what needs a running event loop (MCP servers) and tell extensions
        the session started; idempotent, and called by the first prompt when the
        caller did not."""
        if self._started:
            return
        self._started = True
        await self.assembly.connect_mcp(self.parts)
        await self.parts.extension_hooks.session_start()

    async def stream(self, prompt: str, *, max_turns: int | None = None) -> AsyncIterator[Event]:
        """Run `prompt`, yielding events as they happen; the session file records
        each message as soon as it is part of the conversation."""
        await self.start()
        # the build's diagnostics and a server that failed to start, before the first
        # request: the model works without its tools, and the user should know why
        for issue in (*self.parts.pending_diagnostics(), *self.assembly.poll()):
            yield Diagnostic(issue.message, issue.severity)
        if self.session is not None:
            self.session.append_run_start(prompt)
        start_usage = self.runner.usage
        async for event in self.runner.run(prompt, max_turns=max_turns):
            if isinstance(event, TurnEnd | RunEnd):
                for issue in (
                    *self.assembly.poll(),
                    *self.parts.extension_hooks.take_diagnostics(),
                ):
                    yield Diagnostic(issue.message, issue.severity)
            if isinstance(event, RunEnd):
                end = replace(
                    event,
                    usage=_difference(self.runner.usage, start_usage),
                    session_id=self.session.id if self.session is not None else "",
                )
                if self.session is not None:
                    self.session.append_run_end(end.to_dict())
                yield end
            else:
                yield event

    async def prompt(self, prompt: str, *, max_turns: int | None = None) -> RunResult:
        """Run `prompt` to the end and return the final answer."""
        events: list[Event] = []
        async for event in self.stream(prompt, max_turns=max_turns):
            events.append(event)
        end = next((e for e in reversed(events) if isinstance(e, RunEnd)), None)
        if end is None:
            return RunResult("", "error", tuple(events))
        return RunResult(end.text, end.reason, tuple(events), end.usage, end.session_id)

    # -- the conversation while it runs ------------------------------------------------

    def steer(self, text: str) -> None:
        """Redirect the run in flight: `text` is delivered after the tool calls in
        progress, before the next model request; calls of the same message that have
        not started are skipped ("skipped: the user sent a new instruction ...")."""
        self.runner.steer(text)

    def follow_up(self, text: str) -> None:
        """Queue `text` as a new user turn of the current run, delivered when it would
        otherwise end (or after the next prompt, when idle)."""
        self.runner.follow_up(text)

    @property
    def streaming(self) -> bool:
        return self.runner.running

    async def compact(self, instructions: str | None = None) -> Compacted | None:
        """Summarise the older history with the model and keep the recent tail (at
        least the last user turn) verbatim; the session gets a compaction entry. None
        when there is nothing older than the last user turn."""
        return await self.runner.compact(instructions, reason="manual")

    @property
    def context_fill(self) -> tuple[int, int | None]:
        """Input tokens of the latest response, and the context window (if known)."""
        return self.runner.context_tokens, self.runner.context_window

    def state(self) -> AgentState:
        """What front ends show (the terminal, RPC, ACP), read at once as a copy."""
        runner = self.runner
        steers, follow_ups = runner.queued()
        gate = self.permissions
        return AgentState(
            name=self.name,
            model=self.provider.name,
            endpoint=runner.endpoint,
            workspace=self.manifest.workspace.resolve(),
            session=self.session,
            streaming=runner.running,
            steers=steers,
            follow_ups=follow_ups,
            usage=runner.usage,
            context_tokens=runner.context_tokens,
            context_window=runner.context_window,
            permission_mode=gate.policy.mode if gate is not None else None,
            permission_default=gate.policy.default if gate is not None else None,
            messages=tuple(runner.messages),
            entry_ids=self._entry_ids(),
            cost_usd=runner.cost if runner.meter.price is not None else None,
        )

    def _entry_ids(self) -> tuple[str | None, ...] | None:
        recorder = self.runner.recorder
        if not isinstance(recorder, SessionRecorder):
            return None
        if len(recorder.entry_ids) != len(self.runner.messages):
            return None  # not in step (never expected): better none than wrong ones
        return tuple(entry or None for entry in recorder.entry_ids)

    # -- sessions -------------------------------------------------------------------------

    def use_session(self, restored: Restored) -> None:
        """Continue `restored` from now on: its conversation becomes the runner's, and
        new messages are appended to its file."""
        self.session = restored.session
        self.runner.messages = list(restored.messages)  # a new list: see messages.History
        self.runner.recorder = SessionRecorder(restored.session, restored.entry_ids)
        self.runner.context_tokens = 0

    def fork(self, entry_id: str) -> Session:
        """A new session whose history is this one's up to `entry_id`; the agent goes on
        in it. The original file is not touched."""
        if self.session is None:
            raise SessionError("this agent records no session, so there is nothing to fork")
        if self.runner.running:
            raise SessionError("cannot fork while a run is in progress")
        forked = self.session.fork(entry_id)
        self.use_session(restore(forked))
        return forked

    def switch_session(self, reference: str | Path) -> Session:
        """Continue another session of this agent (id, id prefix or path)."""
        if self.runner.running:
            raise SessionError("cannot switch sessions while a run is in progress")
        store = SessionStore.for_agent(self.manifest.name, self._session_dir())
        session = open_session(store, self.manifest, reference)
        self.use_session(restore(session))
        return session

    def new_session(self) -> Session:
        """Start over in a new, empty session file (the old one stays as it is)."""
        if self.runner.running:
            raise SessionError("cannot start a new session while a run is in progress")
        store = SessionStore.for_agent(self.manifest.name, self._session_dir())
        header = dict(self.session.header) if self.session is not None else {}
        session = store.start(
            agent=self.manifest.name,
            manifest=self.manifest.path,
            model=str(header.get("model", "")),
            workspace=self.manifest.workspace.resolve(),
        )
        self.use_session(restore(session))
        return session

    # -- permissions ----------------------------------------------------------------------

    @property
    def permissions(self) -> PermissionGate | None:
        """The manifest's permission rules at run time (None without `permissions`)."""
        gate = self.runner.permissions
        return gate if isinstance(gate, PermissionGate) else None

    def set_approver(self, approver: Approver | None, *, timeout: float | None = None) -> None:
        """Who answers `ask` rules from now on (None: nobody, so an ask is a deny), and
        how long to wait for an answer (RPC and ACP clients; a person is not hurried)."""
        gate = self.permissions
        if gate is not None:
            gate.approver = approver
            gate.timeout = timeout

    def _session_dir(self) -> Path | None:
        return self.session.path.parent if self.session is not None else None

    async def aclose(self) -> None:
        """End the session: extensions hear `session_end`, servers stop, connections close."""
        if self._closed:
            return
        self._closed = True
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


def _difference(after: Usage, before: Usage) -> Usage:
    return Usage(
        after.input_tokens - before.input_tokens,
        after.output_tokens - before.output_tokens,
        after.cache_read_tokens - before.cache_read_tokens,
        after.cache_write_tokens - before.cache_write_tokens,
    )
