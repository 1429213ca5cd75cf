"""The typed event stream of a run: what the CLI prints and the RPC mode sends.

Every event is a frozen dataclass with a `kind` and a `to_dict()` that gives the
JSON-lines form (`assemble run --json`). The runner yields them in the order things
happen; consumers never need to look inside the runner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from assembler.messages import AssistantMessage, ToolCall, Usage
from assembler.tools.builtin.todo import TodoItem


def _call_dict(call: ToolCall) -> dict[str, Any]:
    data: dict[str, Any] = {"id": call.id, "name": call.name, "arguments": call.arguments}
    if call.arguments is None:
        data["raw_arguments"] = call.raw_arguments
        data["arguments_error"] = call.arguments_error
    return data


@dataclass(frozen=True)
class RunStart:
    """`endpoint` is the model's base URL (credentials removed) when the manifest or
    `--model` redirect the provider away from its default, so it is never unseen."""

    kind: ClassVar[str] = "run_start"
    prompt: str
    model: str
    endpoint: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = {"type": self.kind, "prompt": self.prompt, "model": self.model}
        return {**data, "endpoint": self.endpoint} if self.endpoint else data


@dataclass(frozen=True)
class TurnStart:
    kind: ClassVar[str] = "turn_start"
    turn: int

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "turn": self.turn}


@dataclass(frozen=True)
class TextDeltaEvent:
    kind: ClassVar[str] = "text_delta"
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "text": self.text}


@dataclass(frozen=True)
class ReasoningEvent:
    """A piece of the model's reasoning as it streams: shown dimmed (or hidden), sent to
    clients as a thought, never part of the answer."""

    kind: ClassVar[str] = "reasoning_delta"
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "text": self.text}


@dataclass(frozen=True)
class ToolCallProposed:
    """The model asked for a tool call (before any extension decided on it)."""

    kind: ClassVar[str] = "tool_call"
    call: ToolCall

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "call": _call_dict(self.call)}


@dataclass(frozen=True)
class ToolCallBlocked:
    """An extension blocked the call: it was not executed."""

    kind: ClassVar[str] = "tool_blocked"
    call: ToolCall
    reason: str
    blocked_by: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "call": _call_dict(self.call),
            "reason": self.reason,
            "blocked_by": self.blocked_by,
        }


@dataclass(frozen=True)
class ToolCallResult:
    """What the model will see for a call, and whether the tool actually ran."""

    kind: ClassVar[str] = "tool_result"
    call: ToolCall
    content: str
    is_error: bool
    executed: bool
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "call_id": self.call.id,
            "name": self.call.name,
            "content": self.content,
            "is_error": self.is_error,
            "executed": self.executed,
            "details": dict(self.details),
        }


@dataclass(frozen=True)
class UsageEvent:
    """The tokens of one response and of the runner so far, and what they cost (None:
    the model has no known price)."""

    kind: ClassVar[str] = "usage"
    usage: Usage
    total: Usage
    cost_usd: float | None = None
    total_cost_usd: float | None = None
    estimated_input_tokens: int | None = None
    """What the runner estimated the request's input to be before sending it (the
    budget check's figure; `usage.input_tokens` is the provider's count)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            **self.usage.to_dict(),
            "total": self.total.to_dict(),
            "total_input_tokens": self.total.input_tokens,
            "total_output_tokens": self.total.output_tokens,
            "cost_usd": _cost(self.cost_usd),
            "total_cost_usd": _cost(self.total_cost_usd),
            "estimated_input_tokens": self.estimated_input_tokens,
        }


def _cost(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


@dataclass(frozen=True)
class TurnEnd:
    kind: ClassVar[str] = "turn_end"
    turn: int
    message: AssistantMessage
    stop_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "turn": self.turn,
            "text": self.message.text,
            "tool_calls": [_call_dict(c) for c in self.message.tool_calls],
            "stop_reason": self.stop_reason,
        }


@dataclass(frozen=True)
class Diagnostic:
    """Something worth telling the user that does not stop the run."""

    kind: ClassVar[str] = "diagnostic"
    message: str
    severity: str = "warning"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "severity": self.severity, "message": self.message}


@dataclass(frozen=True)
class ErrorEvent:
    kind: ClassVar[str] = "error"
    message: str
    error_type: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "message": self.message, "error_type": self.error_type}


@dataclass(frozen=True)
class RunEnd:
    """The end of one prompt's run. `reason`: completed, max_turns, blocked, budget,
    cancelled, error, or output_invalid (an agent with `output:` gave no valid answer
    after its retries); `text` is the final assistant text. `typed` says the agent
    declares an `output`; `output` is then the accepted answer (None without one).
    `cost_usd` is what the run cost (None: no known price); `budget` names the budget
    that stopped it (`budget`, `limit`, `used`, `scope`), when one did."""

    kind: ClassVar[str] = "run_end"
    reason: str
    text: str = ""
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    message: str = ""
    session_id: str = ""
    output: Any = None
    typed: bool = False
    cost_usd: float | None = None
    budget: Mapping[str, Any] | None = None

    def cached_share(self) -> float:
        """The share of the run's input tokens read from the prompt cache."""
        usage = self.usage
        return round(usage.cache_read_tokens / usage.input_tokens, 4) if usage.input_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "reason": self.reason,
            "text": self.text,
            "turns": self.turns,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "usage": self.usage.to_dict(),
            "cached_input_share": self.cached_share(),
            "cost_usd": _cost(self.cost_usd),
            "message": self.message,
            **({"budget": dict(self.budget)} if self.budget is not None else {}),
            **({"session_id": self.session_id} if self.session_id else {}),
            **({"output": self.output} if self.typed else {}),
        }


@dataclass(frozen=True)
class UserMessageDelivered:
    """A message the user sent while the agent worked reached the conversation:
    `steer` after the running tools, `follow_up` when the run would have ended."""

    kind: ClassVar[str] = "user_message"
    source: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "source": self.source, "text": self.text}


@dataclass(frozen=True)
class Compacted:
    """Older history was summarised: `reason` is manual, threshold or overflow;
    `kept` messages stayed verbatim after the summary."""

    kind: ClassVar[str] = "compaction"
    reason: str
    tokens_before: int
    summarised: int
    kept: int
    summary: str
    usage: Usage = field(default_factory=Usage)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "reason": self.reason,
            "tokens_before": self.tokens_before,
            "summarised_messages": self.summarised,
            "kept_messages": self.kept,
            "summary": self.summary,
            "usage": self.usage.to_dict(),
        }


@dataclass(frozen=True)
class PlanUpdated:
    """The model wrote its plan (`todo_write`): the whole list, replacing the last one;
    `call_id` is the call that wrote it. Comes right after that call's result."""

    kind: ClassVar[str] = "plan"
    entries: tuple[TodoItem, ...]
    call_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        entries = [item.to_dict() for item in self.entries]
        return {"type": self.kind, "call_id": self.call_id, "entries": entries}


@dataclass(frozen=True)
class SubagentEvent:
    """An event of a sub-agent's run, as it happens, tagged with the agent's path from
    the agent that was built (`lead/reviewer`) and the id of the tool call running it.
    A grandchild's events keep their one wrapper: the path says where they come from."""

    kind: ClassVar[str] = "subagent"
    path: str
    event: Event
    call_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "agent": self.path,
            "call_id": self.call_id,
            "event": self.event.to_dict(),
        }


Event = (
    RunStart
    | TurnStart
    | TextDeltaEvent
    | ReasoningEvent
    | ToolCallProposed
    | ToolCallBlocked
    | ToolCallResult
    | UsageEvent
    | TurnEnd
    | Diagnostic
    | ErrorEvent
    | UserMessageDelivered
    | Compacted
    | RunEnd
    | SubagentEvent
    | PlanUpdated
)
