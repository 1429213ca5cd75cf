"""Sub-agents at run time: the tool `NAME(task)` that builds a child and runs it.

Every call builds the child afresh through the one `build_agent`, from the manifest
the parent's team tree loaded (its own snapshot, tools, prompt, memory, extensions
and limits), runs the task until it answers, closes it, and returns its final answer
cut like other tool output. A child starts each task fresh, as Claude Code's and
cagent's sub-agents do: the task text is all it knows, two calls in one message run
side by side without sharing a conversation, and each run is a session of its own.

While it runs, the child's events reach the parent's stream as `SubagentEvent`s
tagged with its path (`lead/reviewer`). Its session header names the parent's
session, entry and call (`delegated_from`), and the parent's session gets a
`subagent` entry naming the child's session and trace file, so each side finds the
other. A child that fails or stops early is an error result, never the parent's
crash; cancelling the parent's run cancels the child, which is closed before the
cancellation goes on.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from assembler.agent.options import BuildOptions
from assembler.agent.state import AgentState
from assembler.agent.team import Delegate, TeamMember, delegate_tool
from assembler.agent.trusting import TreeTrust
from assembler.errors import AssemblerError
from assembler.manifest.model import AgentToolSet, Manifest
from assembler.messages import AssistantMessage
from assembler.permissions.gate import Approver, PermissionGate
from assembler.providers.base import ModelProvider
from assembler.runner.budget import BudgetPot
from assembler.runner.events import Event, RunEnd, SubagentEvent
from assembler.sessions.codec import usage_to_dict
from assembler.sessions.store import Session
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.truncate import truncate_text


class ChildAgent(Protocol):
    """What running a child needs of a built agent (`Agent` is one)."""

    session: Session | None

    def stream(
        self,
        prompt: str | None = None,
        *,
        params: Mapping[str, Any] | None = None,
        max_turns: int | None = None,
    ) -> AsyncIterator[Event]: ...
    async def aclose(self) -> None: ...


class ParentAgent(Protocol):
    """What a delegation reads of the agent whose tool it is: its session, its state
    (to name the entry holding the call) and its permission gate (whose approver
    answers the child's asks too)."""

    session: Session | None

    @property
    def permissions(self) -> PermissionGate | None: ...

    def state(self) -> AgentState: ...


AgentT = TypeVar("AgentT", bound=ChildAgent)
AgentT_co = TypeVar("AgentT_co", bound=ChildAgent, covariant=True)


class Builder(Protocol[AgentT_co]):
    """`build_agent`, as a child is built (passed in, so this module needs no import
    of the build, which imports it)."""

    def __call__(self, manifest: Manifest, options: BuildOptions, /) -> AgentT_co: ...


class Subagent(Generic[AgentT]):
    """One sub-agent of a built agent: the tool its model calls, and the child a call
    builds (`build()` builds one the same way, for direct use)."""

    def __init__(self, delegate: Delegate, team: Team[AgentT]) -> None:
        self.delegate = delegate
        self.team = team
        self.model: Callable[[], ModelProvider] | None = None
        """Makes the child's model instead of its manifest's, once per build: for
        tests and embedding code (`assembler.testing.ScriptedModel`)."""
        self._tool = delegate_tool(delegate, self._execute)

    def __repr__(self) -> str:
        return f"Subagent({self.path!r}, manifest={str(self.manifest.path)!r})"

    @property
    def name(self) -> str:
        """The tool name the parent's model sees."""
        return self.delegate.name

    @property
    def description(self) -> str:
        return self.delegate.description

    @property
    def path(self) -> str:
        """Where it sits in the team: `lead/reviewer`."""
        return self.delegate.member.path

    @property
    def manifest(self) -> Manifest:
        """The child's manifest as it runs (`workspace: inherit` applied)."""
        return self.delegate.member.manifest

    @property
    def tool(self) -> Tool:
        return self._tool

    def build(
        self,
        *,
        provider: ModelProvider | None = None,
        session: Session | None = None,
        session_dir: Path | None = None,
        record_session: bool = True,
        budget_pot: BudgetPot | None = None,
    ) -> AgentT:
        """Build the child as a call does: from the team's manifest, with the parent's
        environment and loader flags; its project code was trusted with the parent's.
        `budget_pot`: the parent run's pot, which the child's runs draw from too."""
        return self.team.builder(
            self.manifest,
            replace(
                self.team.child_options,
                provider=provider
                if provider is not None
                else (self.model() if self.model else None),
                session_dir=session_dir,
                record_session=record_session,
                session=session,
                team=self.delegate.member,
                approver=self.team.approver(),
                budget_pot=budget_pot,
            ),
        )

    async def _execute(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        if self.manifest.parameters:  # a typed child: the arguments are its parameters
            return await self.run(None, context, params={**self.delegate.spec.params, **arguments})
        task = arguments.get("task")
        if not isinstance(task, str) or not task.strip():
            return ToolResult(
                f"`{self.name}` needs a `task`: a non-empty string saying what to do",
                is_error=True,
            )
        return await self.run(task, context)

    async def run(
        self,
        task: str | None,
        context: ToolContext,
        *,
        params: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """Build a child, run `task` (its own `task:` with `params` when None) to its
        end, close it; the result for the parent: its answer, or its `output` as JSON.
        Parameters that do not fit are an error result listing every problem, before
        the child's model is called."""
        details: dict[str, Any] = {"agent": self.path}
        try:
            session = self._open_session(context.call_id, details)
            pot = context.budget if isinstance(context.budget, BudgetPot) else None
            child = self.build(session=session, record_session=False, budget_pot=pot)
        except Exception as e:  # a full disk, a model that cannot be created
            return self._failure(f"could not be built: {_reason(e)}", details)
        end: RunEnd | None = None
        failure: str | None = None
        events = child.stream(task, params=params)
        try:
            async for event in events:
                if isinstance(event, RunEnd):
                    end = event
                if context.emit is not None:  # a grandchild's events are tagged already
                    tagged = isinstance(event, SubagentEvent)
                    context.emit(
                        event if tagged else SubagentEvent(self.path, event, context.call_id)
                    )
        except Exception as e:  # the child's own failure is the parent's tool result
            failure = f"failed: {_reason(e)}"
        finally:
            try:
                close = getattr(events, "aclose", None)  # a generator left open would
                if close is not None:  # finish at some random later time
                    await close()
                await child.aclose()
            except Exception as e:
                failure = failure or f"failed while closing: {_reason(e)}"
        if end is not None:
            details.update(reason=end.reason, turns=end.turns, usage=usage_to_dict(end.usage))
            if end.cost_usd is not None:
                details["cost_usd"] = round(end.cost_usd, 6)
            if end.budget is not None:
                details["budget"] = dict(end.budget)
        if failure is not None:
            return self._failure(failure, details)
        if end is None:
            return self._failure("ended without an answer", details)
        if end.reason != "completed":
            said = f"\nIts last text:\n{_cut(end.text, context)}" if end.text else ""
            return self._failure(f"did not finish ({end.reason}): {end.message}{said}", details)
        if end.typed:  # the child's typed answer, whole: the parent reads it as data
            details["output"] = end.output
            return ToolResult(json.dumps(end.output, ensure_ascii=False), details=details)
        return ToolResult(_cut(end.text or "(no answer)", context), details=details)

    def _failure(self, what: str, details: Mapping[str, Any]) -> ToolResult:
        return ToolResult(f"sub-agent `{self.name}` {what}", is_error=True, details=details)

    def _open_session(self, call_id: str, details: dict[str, Any]) -> Session | None:
        """The child's session file, beside the parent's, linked both ways; None when
        the parent records no session (then the child records none either)."""
        parent = self.team.parent
        if parent is None or parent.session is None:
            return None
        manifest = self.manifest
        child = parent.session.delegate(
            agent=manifest.name,
            manifest=manifest.path,
            model=manifest.model.label if manifest.model is not None else "",
            workspace=manifest.workspace.resolve(),
            call={
                "entry": _entry_of_call(parent.state(), call_id),
                "call_id": call_id,
                "tool": self.name,
                "agent_path": self.path,
            },
        )
        details.update(child.link())
        return child


class Team(Generic[AgentT]):
    """The sub-agents of one built agent: their tools for its registry, and what a
    child's build takes from the parent's (environment, loader flags, builder)."""

    def __init__(
        self,
        member: TeamMember,
        builder: Builder[AgentT],
        options: BuildOptions | None = None,
        *,
        trust: TreeTrust | None = None,
    ) -> None:
        self.member = member
        self.builder = builder
        self.trust = trust
        parent = options or BuildOptions()
        # A child keeps the parent's environment, loader flags and permission mode; it
        # runs its own manifest's model and records beside the parent's session. Its
        # project code was trusted with the parent's (decided for the whole tree when
        # the root agent was built): it is built on that decision, and must be the code
        # the decision saw. `--skill PATH` is for the agent that was named.
        flags = replace(parent.flags, explicit_skills=()) if parent.flags is not None else None
        self.child_options = BuildOptions(
            flags=flags,
            trust=trust.decision if trust is not None else None,
            env=parent.env,
            permission_mode=parent.permission_mode,
        )
        self.parent: ParentAgent | None = None
        self.subagents: tuple[Subagent[AgentT], ...] = tuple(
            Subagent(delegate, self) for delegate in member.delegates
        )

    def bind(self, parent: ParentAgent) -> None:
        """The agent whose tools these are (its session is read at each call)."""
        self.parent = parent

    def approver(self) -> Approver | None:
        """Whoever answers the parent's `ask` rules answers the children's too (the
        person at the terminal, the RPC or ACP client); nobody, when nobody does."""
        gate = self.parent.permissions if self.parent is not None else None
        return gate.approver if gate is not None else None

    def tools(self, spec: AgentToolSet) -> list[Tool]:
        """The tool of the tool set `spec` of the member's manifest."""
        for subagent in self.subagents:
            if subagent.delegate.spec is spec:
                return [subagent.tool]
        return [s.tool for s in self.subagents if s.delegate.spec == spec][:1]


def _entry_of_call(state: AgentState, call_id: str) -> str:
    """The session entry of the assistant message holding `call_id` (the last one:
    its calls run before their results join the conversation)."""
    if state.entry_ids is None:
        return ""
    for message, entry in zip(reversed(state.messages), reversed(state.entry_ids), strict=True):
        if isinstance(message, AssistantMessage) and any(
            call.id == call_id for call in message.tool_calls
        ):
            return entry or ""
    return ""


def _cut(text: str, context: ToolContext) -> str:
    """Cut like other tool output (the parent's limits), saying what was cut."""
    cut = truncate_text(text, context.max_output_lines, context.max_output_bytes, keep="head")
    if not cut.truncated:
        return cut.text
    return cut.text.rstrip("\n") + "\n" + (cut.notice() or "")


def _reason(error: Exception) -> str:
    return str(error) if isinstance(error, AssemblerError) else f"{type(error).__name__}: {error}"
