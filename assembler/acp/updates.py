"""A run's events, and a resumed conversation, as ACP `session/update` notifications.

- `TextDeltaEvent` -> an `agent_message_chunk`, as it streams;
- `ToolCallProposed` -> a `tool_call` (pending) with its kind, title, locations and,
  for an edit, the diff; `ToolCallBlocked` and `ToolCallResult` -> a
  `tool_call_update` that ends it (`failed` or `completed`) with what the model got;
- a message the user sent while the agent worked (`UserMessageDelivered`) -> a
  `user_message_chunk`;
- diagnostics, an error's text and the reason a run stopped early -> an
  `agent_thought_chunk`, so they reach the user without mixing into the answer;
- the model's plan (`PlanUpdated`, from `todo_write`) -> a `plan` update (`plan`);
- a sub-agent's tool calls (`SubagentEvent`) -> tool calls of their own, titled with
  the sub-agent's path; its text is not streamed (its answer is the result of the
  call that ran it, which the editor shows under that call).

Tool call ids are the model's, except a sub-agent's, which are made unique with its
path and the id of the call running it (two sub-agents both have a `call_1_1`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from acp import (
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    CurrentModeUpdate,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    UserMessageChunk,
)

from assembler.acp.plan import plan_update
from assembler.acp.toolcalls import CallView, describe, result_content, result_locations
from assembler.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from assembler.runner.events import (
    Diagnostic,
    ErrorEvent,
    Event,
    PlanUpdated,
    ReasoningEvent,
    SubagentEvent,
    TextDeltaEvent,
    ToolCallBlocked,
    ToolCallProposed,
    ToolCallResult,
    UserMessageDelivered,
)
from assembler.tools.base import Tool

Update = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
)
SessionUpdate = Update | AvailableCommandsUpdate | CurrentModeUpdate
"""Every update a session sends: a turn's and history's (`Update`), and the session's own."""

ToolLookup = Callable[[str], Tool | None]


@dataclass
class _Open:
    """A tool call announced and not finished yet."""

    view: CallView
    workspace: Path


@dataclass
class TurnUpdates:
    """The updates of one prompt turn, event by event. It remembers the calls it
    announced, so a result finds its call's view, a permission request names the
    call's id, and a cancelled turn can close what never finished."""

    tools: ToolLookup
    workspace: Path
    team_workspaces: Mapping[str, Path] = field(default_factory=dict)
    _open: dict[str, _Open] = field(default_factory=dict)
    _ids: dict[str, str] = field(default_factory=dict)

    def updates(self, event: Event) -> list[Update]:
        if isinstance(event, TextDeltaEvent):
            return [update_agent_message_text(event.text)] if event.text else []
        if isinstance(event, ReasoningEvent):  # the model's thinking: a thought, never the answer
            return [update_agent_thought_text(event.text)] if event.text else []
        if isinstance(event, UserMessageDelivered):
            return [update_user_message_text(event.text)]
        if isinstance(event, Diagnostic):
            return [update_agent_thought_text(f"{event.severity}: {event.message}\n")]
        if isinstance(event, ErrorEvent):
            return [update_agent_thought_text(f"error: {event.message}\n")]
        if isinstance(event, PlanUpdated):
            return [plan_update(event.entries)]
        if isinstance(event, SubagentEvent):
            return self._subagent(event)
        return self._tool_updates(event, "", "", self.workspace, self.tools)

    def call_id(self, call: ToolCall) -> str:
        """The protocol id of the call the model calls `call.id` (the latest one
        announced, when a sub-agent reused the id)."""
        return self._ids.get(call.id, call.id)

    def view(self, call: ToolCall) -> CallView:
        """How `call` is shown: as announced, else described afresh."""
        announced = self._open.get(self.call_id(call))
        return (
            announced.view if announced else describe(call, self.tools(call.name), self.workspace)
        )

    def close_open(self, reason: str) -> list[Update]:
        """End every call still open (the turn was cancelled) as failed."""
        closing: list[Update] = [
            update_tool_call(tool_id, status="failed", content=[tool_content(text_block(reason))])
            for tool_id in self._open
        ]
        self._open.clear()
        return closing

    def _subagent(self, event: SubagentEvent) -> list[Update]:
        inner = event.event
        if not isinstance(inner, ToolCallProposed | ToolCallBlocked | ToolCallResult):
            return []
        name = event.path.rpartition("/")[2] or event.path
        workspace = self.team_workspaces.get(event.path, self.workspace)
        return self._tool_updates(
            inner, f"{event.path}:{event.call_id}:", f"{name}: ", workspace, _no_tools
        )

    def _tool_updates(
        self, event: Event, scope: str, prefix: str, workspace: Path, tools: ToolLookup
    ) -> list[Update]:
        if isinstance(event, ToolCallProposed):
            tool_id = scope + event.call.id
            self._ids[event.call.id] = tool_id
            view = describe(event.call, tools(event.call.name), workspace, prefix=prefix)
            self._open[tool_id] = _Open(view, workspace)
            return [_start(tool_id, view, event.call, "pending")]
        if isinstance(event, ToolCallBlocked):
            opened = self._open.pop(scope + event.call.id, None)
            if opened is None:
                return []
            text = f"blocked by {event.blocked_by}: {event.reason}"
            return [
                update_tool_call(
                    scope + event.call.id,
                    status="failed",
                    content=[tool_content(text_block(text))],
                    raw_output={"blocked_by": event.blocked_by, "reason": event.reason},
                )
            ]
        if isinstance(event, ToolCallResult):
            opened = self._open.pop(scope + event.call.id, None)
            if opened is None:  # blocked, so already ended
                return []
            return [_finish(scope + event.call.id, opened.view, event, opened.workspace)]
        return []


def history_updates(
    messages: Sequence[Message], tools: ToolLookup, workspace: Path
) -> list[Update]:
    """The conversation as updates, oldest first, for `session/load`: the user's
    messages, the agent's text, and each tool call with its outcome. Context the agent
    added (memory) is not the user's and is not shown."""
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}
    updates: list[Update] = []
    for message in messages:
        if isinstance(message, UserMessage):
            updates.append(update_user_message_text(message.content))
        elif isinstance(message, AssistantMessage):
            if message.text:
                updates.append(update_agent_message_text(message.text))
            for call in message.tool_calls:
                view = describe(call, tools(call.name), workspace)
                result = results.get(call.id)
                if result is None:
                    updates.append(_start(call.id, view, call, "failed"))
                    continue
                start = _start(call.id, view, call, "failed" if result.is_error else "completed")
                start.content = result_content(view, result.content, not result.is_error)
                updates.append(start)
    return updates


def _start(tool_id: str, view: CallView, call: ToolCall, status: ToolCallStatus) -> ToolCallStart:
    return start_tool_call(
        tool_id,
        view.title,
        kind=view.kind,
        status=status,
        content=list(view.diff) or None,
        locations=list(view.locations) or None,
        raw_input=dict(call.arguments) if call.arguments is not None else call.raw_arguments,
    )


def _finish(
    tool_id: str, view: CallView, event: ToolCallResult, workspace: Path
) -> ToolCallProgress:
    return update_tool_call(
        tool_id,
        status="failed" if event.is_error else "completed",
        content=result_content(view, event.content, event.executed and not event.is_error),
        locations=list(result_locations(view, event.details, workspace)) or None,
        raw_output=dict(event.details) or None,
    )


def _no_tools(name: str) -> Tool | None:
    """A sub-agent's tools are not the parent's: built-in names are described as such."""
    return None
