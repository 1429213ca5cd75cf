"""`Agent`: a built agent, as the CLI, the RPC mode and embedding code use it.

It owns what `build_agent` assembled and keeps the three model-facing parts (the
resource snapshot, the tool registry and the prompt provider) consistent: `reload()`
replaces all three together, never one alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from assembler.agent.conversation import Restored, SessionRecorder, open_session, restore
from assembler.agent.io import AgentIO
from assembler.agent.prompt_record import prompt_payload, section_sources, settings_record
from assembler.agent.state import AgentState
from assembler.agent.subagents import Subagent, Team
from assembler.errors import Issue, SessionError
from assembler.manifest.model import Manifest
from assembler.messages import Message, ToolSchema, Usage
from assembler.permissions.gate import Approver, PermissionGate
from assembler.permissions.policy import PermissionMode, PermissionPolicy
from assembler.providers.base import ModelProvider
from assembler.resources.loader import ResourceLoader, ResourceSnapshot
from assembler.runner.events import (
    Compacted,
    Diagnostic,
    Event,
    PlanUpdated,
    RunEnd,
    ToolCallResult,
    TurnEnd,
)
from assembler.runner.loop import AgentRunner
from assembler.sessions.plan import record_plan, recorded_plan
from assembler.sessions.store import Session, SessionStore
from assembler.sessions.workspace_record import TouchedFiles, record_end, record_start
from assembler.tools.base import ToolResult
from assembler.tools.builtin.files import READ_TOOL
from assembler.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from assembler.agent.lifecycle import Assembly
    from assembler.agent.parts import AgentParts
    from assembler.memory.session import MemorySession
    from assembler.tools.builtin.todo import TodoItem


@dataclass(frozen=True)
class RunResult:
    """The outcome of `agent.prompt(...)`: the final text, every event, the tokens the
    run used (all requests, summaries included) and the session it was recorded in.
    `output` is the typed answer of an agent with `output:` (None without one, or when
    the run ended without a valid one: `reason` is then `output_invalid`, `max_turns`,
    ...), `message` what the run's end said (the last validation errors)."""

    text: str
    reason: str
    events: tuple[Event, ...] = field(default=())
    usage: Usage = field(default_factory=Usage)
    session_id: str = ""
    output: Any = None
    message: str = ""

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
        io: AgentIO | None = None,
    ) -> None:
        self.manifest = manifest
        self.io = io or AgentIO(manifest)
        """Parameters, task and output (`agent/io.py`)."""
        self.provider = provider
        self.loader = loader
        self.runner = runner
        self.parts = parts
        self.assembly = assembly
        self._started = False
        self._closed = False
        self._touched = TouchedFiles()
        self._approver: tuple[Approver | None, float | None] = (None, None)
        self.session: Session | None = None
        self.plan: tuple[TodoItem, ...] = ()
        """The model's plan as `todo_write` last wrote it (the session's, when resumed)."""
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

    def prompt_sections(self, system: str) -> tuple[tuple[str, str], ...] | None:
        """The sections of `system` (name and body, as `render` splits it) when it is
        the prompt this agent rendered last; None for any other text."""
        last = self.parts.prompt.last
        if last is None or last.text != system:
            return None
        return tuple((section.name, section.text) for section in last.sections)

    def reload(self, *, trust: bool | None = None) -> ResourceSnapshot:
        """Re-read resources and rebuild tools and prompt from the new snapshot, together.

        Extension files run again. When a file of the agent's code (of any agent of
        its team) changed since trust was decided, nothing is reloaded without trust
        again: `trust=True` (you read the change), or a yes to the question the agent
        was built with; else a `TrustError` lists what changed."""
        if self.team is not None and self.team.trust is not None:
            self.team.trust.recheck(self.team.member, trust)
        snapshot = self.loader.reload()
        self.install(self.assembly.rebuild(snapshot))
        return snapshot

    def install(self, parts: AgentParts) -> None:
        """Swap in a new set of parts (snapshot, registry, prompt, hooks) at once."""
        if self.io.values is not None:  # the new prompt shows the values bound
            parts.prompt.parameters = self.io.values
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

    async def stream(
        self,
        prompt: str | None = None,
        *,
        params: Mapping[str, Any] | None = None,
        max_turns: int | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Run `prompt`, yielding events as they happen; the session file records
        each message as soon as it is part of the conversation.

        Without `prompt`, the manifest's `task` is the message. `params` binds the
        manifest's parameters for this run and the next (a `ParameterError` lists
        every problem before any model call); without it, the values bound at the
        build (or the defaults) stay."""
        if params is not None:
            self.io.bind(params)
        values = self.io.current()
        prompt = self.io.first_message(prompt)
        self.parts.prompt.parameters = values
        await self.start()
        # the build's diagnostics and a server that failed to start, before the first
        # request: the model works without its tools, and the user should know why
        for issue in (*self.parts.pending_diagnostics(), *self.assembly.poll()):
            yield Diagnostic(issue.message, issue.severity)
        if self.session is not None:
            self.session.append_run_start(prompt, params=values if self.io.parameters else None)
        start_usage = self.runner.usage
        # closed with this stream: a caller that stops reading (a replay stopping where
        # its session stopped) leaves no run half alive until garbage collection
        async with aclosing(self.runner.run(prompt, max_turns=max_turns)) as events:
            async for event in events:
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
                        self.session.append_run_end(end.to_dict(), await self._workspace_end())
                    yield end
                else:
                    if isinstance(event, ToolCallResult) and event.executed and not event.is_error:
                        self._touched.note(event.call.name, event.call.arguments)
                    if isinstance(event, PlanUpdated):
                        self.plan = event.entries
                        if self.session is not None:
                            record_plan(self.session, event.entries)
                    yield event

    async def prompt(
        self,
        prompt: str | None = None,
        *,
        params: Mapping[str, Any] | None = None,
        max_turns: int | None = None,
    ) -> RunResult:
        """Run `prompt` (the manifest's `task` without one) to the end and return the
        final answer, and the typed `output` of an agent with `output:`."""
        events: list[Event] = []
        async for event in self.stream(prompt, params=params, max_turns=max_turns):
            events.append(event)
        end = next((e for e in reversed(events) if isinstance(e, RunEnd)), None)
        if end is None:
            return RunResult("", "error", tuple(events))
        return RunResult(
            end.text,
            end.reason,
            tuple(events),
            end.usage,
            end.session_id,
            output=end.output,
            message=end.message,
        )

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
            plan=self.plan,
        )

    def _entry_ids(self) -> tuple[str | None, ...] | None:
        recorder = self.runner.recorder
        if not isinstance(recorder, SessionRecorder):
            return None
        if len(recorder.entry_ids) != len(self.runner.messages):
            return None  # not in step (never expected): better none than wrong ones
        return tuple(entry or None for entry in recorder.entry_ids)

    # -- sessions -------------------------------------------------------------------------

    async def _workspace_end(self) -> dict[str, Any] | None:
        """The files that differ from where the session's workspace started (read in a
        thread: git may take a moment); None for a sub-agent's session, whose changes
        its parent's run records."""
        if self.session is None or "delegated_from" in self.session.header:
            return None
        start = self.session.header.get("workspace_start")
        return await asyncio.to_thread(
            record_end,
            self.manifest.workspace.resolve(),
            start if isinstance(start, dict) else None,
            self._touched.paths,
        )

    def use_session(self, restored: Restored) -> None:
        """Continue `restored` from now on: its conversation becomes the runner's, and
        new messages are appended to its file."""
        self.session = restored.session
        self.plan = recorded_plan(restored.session)
        self._touched = TouchedFiles()
        self.runner.messages = list(restored.messages)  # a new list: see messages.History
        self.runner.recorder = SessionRecorder(
            restored.session, restored.entry_ids, describe=self._describe_prompt
        )
        self.runner.context_tokens = 0

    def describe_prompt(self, system: str, tools: Sequence[ToolSchema]) -> dict[str, Any]:
        """What a request tells the model, by section with each one's sources and
        template, and the tool schemas with theirs: the session's `prompt` entry
        (`agent.prompt_record`); a replay names the source of what changed from it."""
        return self._describe_prompt(system, tools)

    def _describe_prompt(self, system: str, tools: Sequence[ToolSchema]) -> dict[str, Any]:
        """The session's `prompt` entry for this request (`agent.prompt_record`)."""
        parts = self.parts
        sources = section_sources(
            self.manifest, parts.snapshot, parts.registry, parts.prompt.last_memory
        )
        payload = prompt_payload(
            system, tools, parts.prompt.last, sources, dict(parts.registry.sources())
        )
        payload["settings"] = settings_record(self.runner.settings)
        return payload

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
        workspace = self.manifest.workspace.resolve()
        session = store.start(
            agent=self.manifest.name,
            manifest=self.manifest.path,
            model=str(header.get("model", "")),
            workspace=workspace,
            workspace_start=record_start(workspace),
        )
        self.use_session(restore(session))
        return session

    async def read_file(self, path: str) -> ToolResult:
        """`path` read as the `read` tool reads it for the model (confined to the
        workspace, cut to the output limits), after the permission rules: a deny is an
        error result. For a file a person names (`@path` in the terminal); an `ask` is
        that person's own request, so it is not asked again."""
        tool = self.registry.get("read")
        if tool is None or tool.source != "builtin":  # an agent without `read`: its rules
            tool = READ_TOOL
        arguments = {"path": path}
        gate = self.permissions
        if gate is not None:
            decision = gate.policy.decide("read", arguments, tool)
            if decision.verdict == "deny":
                return ToolResult(decision.reason, is_error=True)
        return await tool.execute(arguments, self.runner.tool_context)

    # -- permissions ----------------------------------------------------------------------

    @property
    def permissions(self) -> PermissionGate | None:
        """The manifest's permission rules at run time (None without `permissions`)."""
        gate = self.runner.permissions
        return gate if isinstance(gate, PermissionGate) else None

    def set_approver(self, approver: Approver | None, *, timeout: float | None = None) -> None:
        """Who answers `ask` rules from now on (None: nobody, so an ask is a deny), and
        how long to wait for an answer (RPC and ACP clients; a person is not hurried)."""
        self._approver = (approver, timeout)
        gate = self.permissions
        if gate is not None:
            gate.approver = approver
            gate.timeout = timeout

    def set_permission_mode(self, mode: PermissionMode) -> None:
        """What an `ask` becomes from the next call on (`default`, `accept-edits`,
        `deny-asks`, `bypass`): an editor's mode switch, a terminal's. An agent built
        without rules and in the default mode gets the manifest's (empty) rules now,
        with the approver it was given."""
        gate = self.permissions
        if gate is not None:
            gate.policy = gate.policy.with_mode(mode)
            return
        policy = PermissionPolicy.from_spec(
            self.manifest.permissions, workspace=self.manifest.workspace.resolve(), mode=mode
        )
        approver, timeout = self._approver
        self.runner.permissions = PermissionGate(policy, approver, timeout=timeout)

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
