"""The points where extensions and memory step into the loop.

The runner knows nothing of extensions; it calls these hooks. `before_tool_call`
decides whether a side effect happens (control flow); `after_tool_result` only
changes what the model sees (observation); `transform_context` changes a copy of
the messages a request carries. Keeping the three apart is what lets the audit trace
say what the model proposed, what was allowed, and what the model finally saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from assembler.messages import AssistantMessage, Message, ToolCall
from assembler.tools.base import Tool, ToolResult


@dataclass(frozen=True)
class CallDecision:
    """Whether a proposed call may run; `blocked_by` names who said no."""

    blocked: bool = False
    reason: str = ""
    blocked_by: str = ""


ALLOW = CallDecision()


@dataclass(frozen=True)
class ResultOutcome:
    """The result the model will see, and which extensions rewrote it, in order."""

    result: ToolResult
    rewritten_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class PermissionOutcome:
    """What the manifest's permission rules (and whoever answered an `ask`) decided.

    `decided_by` is `rule`, `session rule`, `default`, `mode`, `user`, `client`, or
    `nobody` (an ask nobody could answer, or an answer that did not come in time);
    `rule` is the rule text when one decided."""

    allowed: bool
    reason: str
    decided_by: str
    rule: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "allowed": self.allowed,
            "decided_by": self.decided_by,
            "rule": self.rule,
            "reason": self.reason,
        }


class PermissionCheck(Protocol):
    """Decides whether a call may run before any extension sees it (see
    `assembler.permissions.gate`)."""

    async def check(self, call: ToolCall, tool: Tool) -> PermissionOutcome: ...


current_permission: ContextVar[PermissionOutcome | None] = ContextVar(
    "current_permission", default=None
)
"""The permission outcome of the call being decided, for extensions' `tool_call`
handlers (each call runs in its own task, so this is per call)."""


@dataclass
class ToolCallRecord:
    """One tool call in the audit trace.

    proposed -> permission -> decision -> executed? -> raw result -> rewrites -> what
    the model saw. `phase` is `started` for the record written just before the tool
    runs (so a run killed mid-tool leaves one), `done` once the model has its result.
    """

    turn: int
    call: ToolCall
    decision: CallDecision = ALLOW
    permission: PermissionOutcome | None = None
    phase: str = "done"
    executed: bool = False
    raw_result: ToolResult | None = None
    rewritten_by: tuple[str, ...] = ()
    final: ToolResult | None = None
    duration_ms: float = 0.0
    notes: list[str] = field(default_factory=list)


class RunnerHooks(Protocol):
    async def on_run_start(self, prompt: str) -> None: ...
    async def on_run_end(self, reason: str) -> None: ...
    async def on_turn_start(self, turn: int) -> None: ...
    async def on_turn_end(self, turn: int, message: AssistantMessage) -> None: ...
    async def transform_context(self, messages: Sequence[Message]) -> Sequence[Message]: ...
    async def before_tool_call(self, call: ToolCall) -> CallDecision: ...
    async def after_tool_result(self, call: ToolCall, result: ToolResult) -> ResultOutcome: ...


class NoHooks:
    """Hooks that change nothing: an agent without extensions or memory."""

    async def on_run_start(self, prompt: str) -> None:
        return None

    async def on_run_end(self, reason: str) -> None:
        return None

    async def on_turn_start(self, turn: int) -> None:
        return None

    async def on_turn_end(self, turn: int, message: AssistantMessage) -> None:
        return None

    async def transform_context(self, messages: Sequence[Message]) -> Sequence[Message]:
        return messages

    async def before_tool_call(self, call: ToolCall) -> CallDecision:
        return ALLOW

    async def after_tool_result(self, call: ToolCall, result: ToolResult) -> ResultOutcome:
        return ResultOutcome(result)


class HookChain:
    """Several hook sets, called in order: for context, each output feeds the next;
    for calls, the first block wins (every set is still asked, so all can record);
    for results, rewrites chain."""

    def __init__(self, hooks: Sequence[RunnerHooks]) -> None:
        self.hooks = tuple(hooks)

    async def on_run_start(self, prompt: str) -> None:
        for hook in self.hooks:
            await hook.on_run_start(prompt)

    async def on_run_end(self, reason: str) -> None:
        for hook in self.hooks:
            await hook.on_run_end(reason)

    async def on_turn_start(self, turn: int) -> None:
        for hook in self.hooks:
            await hook.on_turn_start(turn)

    async def on_turn_end(self, turn: int, message: AssistantMessage) -> None:
        for hook in self.hooks:
            await hook.on_turn_end(turn, message)

    async def transform_context(self, messages: Sequence[Message]) -> Sequence[Message]:
        for hook in self.hooks:
            messages = await hook.transform_context(messages)
        return messages

    async def before_tool_call(self, call: ToolCall) -> CallDecision:
        verdict = ALLOW
        for hook in self.hooks:
            decision = await hook.before_tool_call(call)
            if decision.blocked and not verdict.blocked:
                verdict = decision
        return verdict

    async def after_tool_result(self, call: ToolCall, result: ToolResult) -> ResultOutcome:
        rewritten: list[str] = []
        for hook in self.hooks:
            outcome = await hook.after_tool_result(call, result)
            result = outcome.result
            rewritten.extend(outcome.rewritten_by)
        return ResultOutcome(result, tuple(rewritten))
